"""The Store protocol: what the retrievers and the pipeline may ask of an index, whatever engine holds it.

An embedded store (SQLite + tantivy + usearch) is the default; a server backend (PostgreSQL + pgvector) only has
to implement this protocol for the pipeline to use it unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
from pydantic import BaseModel, Field

from ragfunnel.embedding import DEFAULT_MODEL
from ragfunnel.types import Chunk, Document

Progress = Callable[[str, int, int], None]  # (task, done, total)


class AnalyzerSettings(BaseModel):
    """How text becomes BM25 terms (lower-casing is always on)."""

    stem: bool = True
    stopwords: str = "extended"  # none | lucene | extended (measured best on dev: docs/results/bm25_analyzers.md)

    @property
    def name(self) -> str:
        return f"rf_{'stem' if self.stem else 'nostem'}_{self.stopwords}"


class StoreSettings(BaseModel):
    """Everything that decides what is in an index: a different value means a rebuild."""

    sparse_views: list[str] = Field(default_factory=lambda: ["scene", "w3s1", "utt"])
    dense_views: list[str] = Field(default_factory=lambda: ["scene", "w3s1", "utt"])
    encoder: str = DEFAULT_MODEL
    max_length: int = 256
    analyzer: AnalyzerSettings = Field(default_factory=AnalyzerSettings)
    vector_dtype: str = "f16"  # half-precision halves the exact scan (4.6 -> 2.9 ms for 61k windows), same top 50
    hnsw_connectivity: int = 16
    hnsw_expansion_add: int = 128

    @property
    def views(self) -> list[str]:
        return list(dict.fromkeys([*self.sparse_views, *self.dense_views]))


class Store(Protocol):
    settings: StoreSettings

    def upsert(self, docs: Sequence[Document], progress: Progress | None = None) -> None:
        """Add documents, replacing any with the same id, in every index at once."""

    def delete(self, doc_ids: Sequence[str]) -> int:
        """Remove documents (and all their chunks from every index); returns how many existed."""

    def document(self, doc_id: str) -> Document | None: ...

    def chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]: ...

    def doc_ids(self) -> list[str]: ...

    def count_chunks(self, view: str | None = None) -> int: ...

    def count_dense(self, view: str) -> int:
        """Vectors in the dense index of `view`."""

    def search_sparse(self, view: str, query: str, limit: int) -> list[tuple[str, float]]:
        """(chunk id, BM25 score), best first."""

    def query_idf(self, view: str, query: str) -> list[float]:
        """IDF of each analysed query term in the sparse index of `view` (for query-aware fusion)."""

    def search_dense(
        self, view: str, vector: np.ndarray, limit: int, ef: int | None = None, exact: bool = False
    ) -> list[tuple[str, float]]:
        """(chunk id, cosine similarity), best first."""

    def close(self) -> None: ...
