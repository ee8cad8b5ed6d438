"""A LlamaIndex retriever over a collection (extra `llamaindex`: llama-index-core).

    import ragfunnel
    from ragfunnel.api.llamaindex import RagfunnelRetriever

    retriever = RagfunnelRetriever(ragfunnel.open("friends"), k=5)
    nodes = retriever.retrieve("Who did Rachel dump at the altar?")   # list[NodeWithScore]

Each `NodeWithScore` holds a `TextNode` whose `id_` is our document id and whose text is the hit's passage, with
the score after fusion (and reranking) and metadata holding every retriever's rank and score (`sources`), the
line ids and the passage's place (`api/hits.py`)."""

from __future__ import annotations

from typing import Any

from ragfunnel.registry import require

require("llama_index.core", "llamaindex", "ragfunnel.api.llamaindex")

from llama_index.core.retrievers import BaseRetriever  # noqa: E402
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode  # noqa: E402

from ragfunnel.api.client import Client  # noqa: E402
from ragfunnel.api.hits import hit_metadata, hit_text  # noqa: E402
from ragfunnel.schema import SearchResponse  # noqa: E402


class RagfunnelRetriever(BaseRetriever):
    """ragfunnel's funnel (BM25 + vectors + fusion, optionally reranked) as a LlamaIndex retriever."""

    def __init__(self, client: Client, k: int = 5, mode: str | None = None, filter: dict[str, Any] | None = None,
                 **kwargs: Any):
        super().__init__(**kwargs)
        self.client, self.k, self.mode, self.filter = client, k, mode, filter

    def _nodes(self, found: SearchResponse) -> list[NodeWithScore]:
        return [NodeWithScore(node=TextNode(id_=h.id, text=hit_text(h), metadata=hit_metadata(h, self.client.collection)),
                              score=h.score) for h in found.results]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._nodes(self.client.search(query_bundle.query_str, mode=self.mode, k=self.k, filter=self.filter))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._nodes(await self.client.asearch(query_bundle.query_str, mode=self.mode, k=self.k,
                                                     filter=self.filter))
