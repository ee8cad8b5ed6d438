"""BM25 over one chunk view of the store (tantivy; the analyzer is chosen when the index is built)."""

from __future__ import annotations

from ragfunnel.store.base import SparseIndex
from ragfunnel.store.filters import Filter
from ragfunnel.types import Chunk, Hit


class BM25Retriever:
    kind = "sparse"

    def __init__(self, store: SparseIndex, view: str, depth: int = 100, name: str | None = None):
        self.store, self.view, self.depth = store, view, depth
        self.name = name or f"bm25_{view}"

    def warm_up(self) -> None:
        self.store.count_sparse(self.view)  # fails now, not on the first query, when the view is missing

    def retrieve(self, query: str, limit: int | None = None, where: Filter | None = None) -> list[Hit]:
        results = self.store.search_sparse(self.view, query, limit or self.depth, where=where)
        return [Hit(cid, Chunk.parent_of(cid), score, rank, self.name) for rank, (cid, score) in enumerate(results, 1)]

    def mean_idf(self, query: str) -> float | None:
        idfs = query_idf(self.store, self.view, query)
        return sum(idfs) / len(idfs) if idfs else None


def query_idf(store: SparseIndex, view: str, query: str) -> list[float]:
    """IDF of each distinct analysed query term that `view` contains (for query-aware fusion)."""
    return [v for v in store.term_idfs(view, query).values() if v is not None]
