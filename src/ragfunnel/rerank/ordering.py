"""Ranking when a reranker scored only some of the passages (an API that dropped some, an LLM that omitted some).

The scored passages come first, best first (ties: the fused order decides); the unscored ones follow in their
fused order. An unscored passage gets the score `min(lowest given score, 0.0)`, so scores never rise down the
list; its fused rank and score stay in `sources["fused"]` as with every reranked candidate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ragfunnel.rerank.base import Passage, reorder
from ragfunnel.types import Candidate


def rank_partial(passages: list[Passage], scores: Mapping[int, float]) -> list[Candidate]:
    """`scores` maps a passage's position in `passages` to the reranker's score; positions not in it are unscored."""
    given = {i: float(s) for i, s in scores.items() if 0 <= i < len(passages) and math.isfinite(s)}
    scored = sorted(given, key=lambda i: (-given[i], i))
    floor = min(min(given.values(), default=0.0), 0.0)
    order = scored + [i for i in range(len(passages)) if i not in given]
    # `reorder` sorts by score with a stable tie-break on position: scores along `order` never rise, so it keeps it.
    return reorder([passages[i] for i in order], [given.get(i, floor) for i in order])
