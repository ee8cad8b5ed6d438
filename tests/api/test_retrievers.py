"""The framework retrievers with the real packages: LangChain's and LlamaIndex's own document / node types carry
our ids, scores, per-retriever ranks and metadata, in the order of `Client.search`."""

from __future__ import annotations

import asyncio

import pytest

pytestmark = pytest.mark.integration
QUESTION = "Who did Rachel dump at the altar?"


def test_langchain_retriever(friends_client):
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document

    from ragfunnel.api.langchain import RagfunnelRetriever

    retriever = RagfunnelRetriever(client=friends_client, k=3, filter={"season": 1})
    docs = retriever.invoke(QUESTION)
    expected = friends_client.search(QUESTION, k=3, filter={"season": 1}).results
    assert all(isinstance(d, Document) for d in docs) and [d.id for d in docs] == [h.id for h in expected]
    top = docs[0]
    assert top.page_content == expected[0].passage.text
    assert (top.metadata["rank"], top.metadata["score"]) == (1, expected[0].score)
    assert set(top.metadata["sources"]) == set(expected[0].sources) and top.metadata["season"] == 1
    assert top.metadata["chunk_id"].startswith(f"{top.id}#") and top.metadata["line_ids"]
    assert [d.id for d in asyncio.run(retriever.ainvoke(QUESTION))] == [d.id for d in docs]


def test_llamaindex_retriever(friends_client):
    pytest.importorskip("llama_index.core")
    from llama_index.core.schema import NodeWithScore

    from ragfunnel.api.llamaindex import RagfunnelRetriever

    retriever = RagfunnelRetriever(friends_client, k=3, mode="bm25")
    nodes = retriever.retrieve(QUESTION)
    expected = friends_client.search(QUESTION, k=3, mode="bm25").results
    assert all(isinstance(n, NodeWithScore) for n in nodes)
    assert [n.node.node_id for n in nodes] == [h.id for h in expected]
    assert [n.score for n in nodes] == [h.score for h in expected]
    assert nodes[0].node.metadata["sources"] == {name: {"rank": s.rank, "score": s.score}
                                                for name, s in expected[0].sources.items()}
    assert nodes[0].node.get_content() == expected[0].passage.text
    assert [n.node.node_id for n in asyncio.run(retriever.aretrieve(QUESTION))] == [h.id for h in expected]
