"""Rank metrics over collapsed parent lists (the published protocol: unique parents, rank of the gold parent,
a miss scores 0). Several gold parents are allowed (BEIR): recall@k is then the share of gold found."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

KS = (1, 5, 10, 20)


def first_rank(ranked: Sequence[str], gold: Iterable[str]) -> int | None:
    gold = set(gold)
    for i, doc_id in enumerate(ranked, 1):
        if doc_id in gold:
            return i
    return None


def recall_at(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    gold = set(gold)
    return len(gold & set(ranked[:k])) / len(gold) if gold else 0.0


def mrr_at(ranked: Sequence[str], gold: Iterable[str], k: int = 10) -> float:
    rank = first_rank(ranked[:k], gold)
    return 1.0 / rank if rank else 0.0


def ndcg_at(ranked: Sequence[str], gold: Iterable[str] | dict[str, float], k: int = 10) -> float:
    rel = dict(gold) if isinstance(gold, dict) else {g: 1.0 for g in gold}
    dcg = sum(rel.get(d, 0.0) / math.log2(i + 1) for i, d in enumerate(ranked[:k], 1))
    ideal = sorted(rel.values(), reverse=True)[:k]
    idcg = sum(r / math.log2(i + 1) for i, r in enumerate(ideal, 1))
    return dcg / idcg if idcg else 0.0


def summarize(runs: Sequence[tuple[Sequence[str], Iterable[str]]], ks: Sequence[int] = KS) -> dict[str, float]:
    """Mean metrics over (ranked ids, gold ids) pairs."""
    n = len(runs)
    out: dict[str, float] = {}
    for k in ks:
        out[f"recall@{k}"] = sum(recall_at(r, g, k) for r, g in runs) / n if n else 0.0
    out["mrr@10"] = sum(mrr_at(r, g, 10) for r, g in runs) / n if n else 0.0
    out["ndcg@10"] = sum(ndcg_at(r, g, 10) for r, g in runs) / n if n else 0.0
    out["n"] = n
    return out


def union_coverage(lists: Sequence[Sequence[Sequence[str]]], golds: Sequence[Iterable[str]], k: int) -> float:
    """Share of questions whose gold parent is in the union of the top-k of any list (the reranking ceiling)."""
    hits = 0
    for i, gold in enumerate(golds):
        pool = set().union(*(set(per_list[i][:k]) for per_list in lists)) if lists else set()
        hits += bool(pool & set(gold))
    return hits / len(golds) if golds else 0.0
