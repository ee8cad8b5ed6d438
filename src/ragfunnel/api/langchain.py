"""A LangChain retriever over a collection (extra `langchain`: langchain-core).

    import ragfunnel
    from ragfunnel.api.langchain import RagfunnelRetriever

    retriever = RagfunnelRetriever(client=ragfunnel.open("friends"), k=5, mode="hybrid")
    docs = retriever.invoke("Who did Rachel dump at the altar?")   # list[langchain_core.documents.Document]

Each `Document` has the hit's passage as `page_content`, our document id as `id`, and metadata with the rank and
score after fusion, every retriever's rank and score (`sources`), the line ids and the passage's place
(`api/hits.py`)."""

from __future__ import annotations

from typing import Any

from ragfunnel.registry import require

require("langchain_core", "langchain", "ragfunnel.api.langchain")

from langchain_core.callbacks import (  # noqa: E402
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from pydantic import ConfigDict  # noqa: E402

from ragfunnel.api.client import Client  # noqa: E402
from ragfunnel.api.hits import hit_metadata, hit_text  # noqa: E402
from ragfunnel.schema import SearchResponse  # noqa: E402


class RagfunnelRetriever(BaseRetriever):
    """ragfunnel's funnel (BM25 + vectors + fusion, optionally reranked) as a LangChain retriever."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    client: Client
    k: int = 5
    mode: str | None = None
    filter: dict[str, Any] | None = None

    def _documents(self, found: SearchResponse) -> list[Document]:
        return [Document(page_content=hit_text(h), metadata=hit_metadata(h, self.client.collection), id=h.id)
                for h in found.results]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return self._documents(self.client.search(query, mode=self.mode, k=self.k, filter=self.filter))

    async def _aget_relevant_documents(self, query: str, *,
                                       run_manager: AsyncCallbackManagerForRetrieverRun) -> list[Document]:
        return self._documents(await self.client.asearch(query, mode=self.mode, k=self.k, filter=self.filter))
