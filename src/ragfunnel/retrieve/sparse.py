"""BM25 over one chunk view of the store (tantivy; the analyzer is chosen when the index is built)."""

from __future__ import annotations

from ragfunnel.store.base import Store
from ragfunnel.types import Hit


class BM25Retriever:
    kind = "sparse"

    def __init__(self, store: Store, view: str = "scene", depth: int = 100, name: str | None = None):
        self.store, self.view, self.depth = store, view, depth
        self.name = name or f"bm25_{view}"

    def retrieve(self, query: str, limit: int | None = None) -> list[Hit]:
        results = self.store.search_sparse(self.view, query, limit or self.depth)
        return [Hit(cid, cid.split("#", 1)[0], score, rank, self.name) for rank, (cid, score) in enumerate(results, 1)]

    def mean_idf(self, query: str) -> float | None:
        idfs = self.store.query_idf(self.view, query)
        return sum(idfs) / len(idfs) if idfs else None
