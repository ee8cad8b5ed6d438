"""Pseudo-relevance feedback: cheap query transforms without an LLM, as retrievers a mode can include.

- `RM3Retriever` (kind `bm25_rm3`): BM25, then the query expanded with the terms that weigh most in the top
  `fb_docs` chunks (each chunk's term distribution weighted by its share of the top BM25 scores; RM3, Abdul-Jaleel
  et al. 2004), interpolated with the original terms (`orig_weight`), then BM25 again. Term weights are given as
  repetitions of the term in the query text (the store's BM25 sums a repeated term's clauses), in 1/40ths.
- `RocchioRetriever` (kind `dense_prf`): dense search, then the query vector moved towards the mean of the top
  `fb_docs` chunk vectors (q' = q + beta * mean), searched again.

Both record nothing extra: the expansion is deterministic from the first pass. docs/results/query/transforms.md
measures whether they pay.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from ragfunnel.embedding import Encoder
from ragfunnel.retrieve.dense import DenseRetriever
from ragfunnel.retrieve.sparse import BM25Retriever
from ragfunnel.store.base import Store
from ragfunnel.store.filters import Filter
from ragfunnel.types import Chunk, Hit

REPEAT_SCALE = 40  # a weight of 1.0 is the term forty times; a term under 1/80 is left out


def rm3_terms(store: Store, view: str, query: str, hits: list[tuple[str, float]], fb_docs: int, fb_terms: int,
              orig_weight: float) -> dict[str, float]:
    """Analysed term -> weight of the expanded query (weights sum to 1)."""
    original = Counter(store.analyze(query))
    top = hits[:fb_docs]
    if not top or not original:
        return {t: c / max(sum(original.values()), 1) for t, c in original.items()}
    scores = np.array([s for _, s in top], dtype=np.float64)
    shares = scores / scores.sum() if scores.sum() > 0 else np.full(len(top), 1 / len(top))
    relevance: Counter = Counter()
    for chunk, share in zip(store.chunks([c for c, _ in top]), shares):
        tf = Counter(store.analyze(chunk.text))
        length = sum(tf.values()) or 1
        for term, n in tf.items():
            relevance[term] += share * n / length
    expansion = dict(relevance.most_common(fb_terms))
    total = sum(expansion.values()) or 1.0
    n_orig = sum(original.values())
    weights: Counter = Counter()
    for term, c in original.items():
        weights[term] += orig_weight * c / n_orig
    for term, w in expansion.items():
        weights[term] += (1 - orig_weight) * w / total
    return dict(weights)


def weighted_query(weights: dict[str, float], keep: frozenset[str] = frozenset()) -> str:
    """The terms as query text, each repeated in proportion to its weight; a term whose weight rounds to nothing is
    left out, except those in `keep` (the original query's), which stay at least once."""
    parts = []
    for term, w in sorted(weights.items()):
        n = max(round(w * REPEAT_SCALE), 1 if term in keep else 0)
        parts += [term] * n
    return " ".join(parts)


class RM3Retriever(BM25Retriever):
    def __init__(self, store: Store, view: str = "scene", depth: int = 100, name: str | None = None,
                 fb_docs: int = 10, fb_terms: int = 10, orig_weight: float = 0.5):
        super().__init__(store, view, depth, name=name or f"bm25_rm3_{view}")
        self.fb_docs, self.fb_terms, self.orig_weight = fb_docs, fb_terms, orig_weight

    def expanded(self, query: str, where: Filter | None = None) -> str:
        first = self.store.search_sparse(self.view, query, self.fb_docs, where=where)
        weights = rm3_terms(self.store, self.view, query, first, self.fb_docs, self.fb_terms, self.orig_weight)
        return weighted_query(weights, frozenset(self.store.analyze(query)))

    def retrieve(self, query: str, limit: int | None = None, where: Filter | None = None) -> list[Hit]:
        return super().retrieve(self.expanded(query, where), limit, where)


class RocchioRetriever(DenseRetriever):
    def __init__(self, store: Store, encoder: Encoder, view: str = "w3s1", depth: int = 100, ef: int | None = 600,
                 exact: bool | None = None, name: str | None = None, fb_docs: int = 5, beta: float = 0.5,
                 pool: int | None = None):
        super().__init__(store, encoder, view, depth, ef, exact, name=name or f"dense_prf_{view}", pool=pool)
        self.fb_docs, self.beta = fb_docs, beta

    def _feedback_vectors(self, chunk_ids: list[str]) -> np.ndarray:
        rows = []
        by_doc: dict[str, list[str]] = {}
        for cid in chunk_ids:
            by_doc.setdefault(Chunk.parent_of(cid), []).append(cid)
        for doc_id, wanted in by_doc.items():
            order = [c.chunk_id for c in self.store.doc_chunks(self.view, doc_id)]
            vectors = self.store.doc_vectors(self.view, doc_id)
            rows += [vectors[order.index(c)] for c in wanted if c in order]
        return np.asarray(rows, dtype=np.float32)

    def retrieve(self, query: str, limit: int | None = None, where: Filter | None = None) -> list[Hit]:
        vector = self._embed(query)
        scan = self._scan()
        first = self.store.search_dense(self.view, vector, self.fb_docs, where=where, **scan)
        feedback = self._feedback_vectors([c for c, _ in first])
        if len(feedback):
            moved = vector + self.beta * (feedback / np.linalg.norm(feedback, axis=1, keepdims=True)).mean(axis=0)
            vector = (moved / np.linalg.norm(moved)).astype(np.float32)
        results = self.store.search_dense(self.view, vector, limit or self.depth, where=where, **scan)
        return [Hit(cid, Chunk.parent_of(cid), score, rank, self.name) for rank, (cid, score) in enumerate(results, 1)]
