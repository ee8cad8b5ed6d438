"""Fusion of several ranked parent lists into one.

- `RRFFuser`: Reciprocal Rank Fusion, score = sum_i w_i / (k + rank_i).
- `QueryAwareRRFFuser`: RRF whose sparse/dense weights follow the mean IDF of the query terms (a query of rare
  words is one BM25 answers well): IDF <= low -> sparse weight w_low, >= high -> w_high, linear between.
- `ScoreFuser`: min-max normalise each list's scores, weighted sum, plus a bonus for parents found by 2+ lists.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from ragfunnel.errors import ConfigError
from ragfunnel.registry import Registry
from ragfunnel.types import Candidate

Lists = Mapping[str, list[Candidate]]


class Fuser(Protocol):
    def fuse(self, lists: Lists, kinds: Mapping[str, str], mean_idf: float | None = None,
             limit: int | None = None) -> list[Candidate]:
        """`kinds` maps each list's retriever name to "sparse" or "dense". `limit`: only the best `limit` fused
        candidates are wanted (each carries its evidence from every list: building it for the hundreds below the
        cut was a fifth of a search)."""


def _ranked(scores: dict[str, float], lists: Lists, limit: int | None = None) -> list[Candidate]:
    order = sorted(scores, key=lambda d: (-scores[d], d))
    if limit is not None:
        order = order[:limit]
    by_list = [(name, {c.doc_id: c for c in cands}) for name, cands in lists.items()]
    out = []
    for rank, doc_id in enumerate(order, 1):
        evidence: dict[str, tuple[int, float]] = {}
        parts: list[tuple[str, ...]] = []
        for name, found in by_list:
            c = found.get(doc_id)
            if c is not None:
                evidence[name] = (c.rank, c.score)
                parts.append(c.best_chunks)
        out.append(Candidate(doc_id=doc_id, score=scores[doc_id], rank=rank, sources=evidence, best_chunks=_merged(parts)))
    return out


ranked_candidates = _ranked  # the fused Candidates of a score per parent (learned fusion shares it)


def _merged(parts: list[tuple[str, ...]]) -> tuple[str, ...]:
    """The chunks of every list, each once, in order (one list: its own tuple)."""
    if len(parts) == 1:
        return parts[0]
    return tuple(dict.fromkeys(chunk for part in parts for chunk in part))


class RRFFuser:
    def __init__(self, k: float = 60.0, weights: Mapping[str, float] | None = None):
        self.k, self.weights = k, dict(weights or {})

    def weight(self, name: str, kinds: Mapping[str, str], mean_idf: float | None) -> float:
        return self.weights.get(name, 1.0)

    def fuse(self, lists: Lists, kinds: Mapping[str, str], mean_idf: float | None = None,
             limit: int | None = None) -> list[Candidate]:
        scores: dict[str, float] = {}
        for name, cands in lists.items():
            w = self.weight(name, kinds, mean_idf)
            for c in cands:
                scores[c.doc_id] = scores.get(c.doc_id, 0.0) + w / (self.k + c.rank)
        return _ranked(scores, lists, limit)


def idf_sparse_weight(mean_idf: float | None, low: float, high: float, w_low: float, w_high: float) -> float:
    if mean_idf is None:
        return (w_low + w_high) / 2
    if mean_idf <= low:
        return w_low
    if mean_idf >= high:
        return w_high
    return w_low + (w_high - w_low) * (mean_idf - low) / (high - low)


class QueryAwareRRFFuser(RRFFuser):
    def __init__(
        self,
        k: float = 60.0,
        weights: Mapping[str, float] | None = None,
        idf_low: float = 2.0,
        idf_high: float = 5.0,
        w_low: float = 0.2,
        w_high: float = 0.8,
    ):
        super().__init__(k, weights)
        self.idf_low, self.idf_high, self.w_low, self.w_high = idf_low, idf_high, w_low, w_high

    def weight(self, name: str, kinds: Mapping[str, str], mean_idf: float | None) -> float:
        sparse = idf_sparse_weight(mean_idf, self.idf_low, self.idf_high, self.w_low, self.w_high)
        share = sparse if kinds.get(name) == "sparse" else 1.0 - sparse
        return self.weights.get(name, 1.0) * share


class ScoreFuser:
    def __init__(self, weights: Mapping[str, float] | None = None, both_bonus: float = 0.0):
        self.weights, self.both_bonus = dict(weights or {}), both_bonus

    def fuse(self, lists: Lists, kinds: Mapping[str, str], mean_idf: float | None = None,
             limit: int | None = None) -> list[Candidate]:
        scores: dict[str, float] = {}
        found: dict[str, int] = {}
        for name, cands in lists.items():
            if not cands:
                continue
            hi, lo = max(c.score for c in cands), min(c.score for c in cands)
            span = hi - lo or 1.0
            w = self.weights.get(name, 1.0)
            for c in cands:
                scores[c.doc_id] = scores.get(c.doc_id, 0.0) + w * (c.score - lo) / span
                found[c.doc_id] = found.get(c.doc_id, 0) + 1
        for doc_id, n in found.items():
            if n > 1:
                scores[doc_id] += self.both_bonus
        return _ranked(scores, lists, limit)


# Fusers by method name: each factory takes the fusion settings as a mapping (config.FusionSpec's fields).
FUSERS = Registry("fusion method")
FUSERS.register("rrf", lambda p: RRFFuser(p["k"], p["weights"]),
                description="reciprocal rank fusion: sum of weight / (k + rank) over the lists")
FUSERS.register("query_aware", lambda p: QueryAwareRRFFuser(p["k"], p["weights"], p["idf_low"], p["idf_high"],
                                                             p["w_low"], p["w_high"]),
                description="RRF whose sparse-against-dense weight follows the question's mean IDF")
FUSERS.register("score", lambda p: ScoreFuser(p["weights"], p["both_bonus"]),
                description="min-max normalised scores summed by weight, a bonus for parents found by several lists")


def make_fuser(method: str, params: Mapping[str, Any]) -> Fuser | None:
    """The fuser of `method` ("none": no fusion, the first list is the result)."""
    if method == "none":
        return None
    if method not in FUSERS.names():
        raise ConfigError(f"unknown fusion method {method!r}: choose none or one of {', '.join(FUSERS)}")
    return FUSERS.get(method).factory(params)
