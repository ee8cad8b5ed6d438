"""The Reranker protocol.

A reranker receives the question and the fused candidates, each with the text chosen by the pipeline's passage
setting (matched window, window plus context, or whole scene), and returns them re-ordered with its own scores.
A reranker that cannot do its job (API down, model missing at run time) returns the input order with a note;
it never raises for a request.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from ragfunnel.types import Candidate, Document


@dataclass(frozen=True)
class Passage:
    """A candidate parent as the reranker sees it: the text chosen for it, and the whole parent for rerankers
    that look at more than the text (learning-to-rank features)."""

    candidate: Candidate
    text: str
    document: Document | None = None


@dataclass
class RerankResult:
    candidates: list[Candidate]  # re-ordered, ranks 1..n, score = the reranker's score
    notes: list[str] = field(default_factory=list)  # e.g. "cohere unreachable: kept fused order"
    degraded: bool = False  # True when the input order was returned because the reranker failed


class Reranker(Protocol):
    name: str

    def rerank(self, question: str, passages: list[Passage]) -> RerankResult:
        """Score every passage for the question; best first."""


def reorder(passages: list[Passage], scores: list[float]) -> list[Candidate]:
    """Candidates sorted by `scores` (stable on ties: the fused order decides), re-ranked from 1."""
    order = sorted(range(len(passages)), key=lambda i: (-scores[i], i))
    return [
        Candidate(
            doc_id=passages[i].candidate.doc_id,
            score=float(scores[i]),
            rank=r,
            sources={**passages[i].candidate.sources, "fused": (passages[i].candidate.rank, passages[i].candidate.score)},
            best_chunks=passages[i].candidate.best_chunks,
        )
        for r, i in enumerate(order, 1)
    ]


def keep_order(passages: list[Passage], note: str) -> RerankResult:
    """The degraded result: the fused order, unchanged, with a note saying why."""
    return RerankResult([p.candidate for p in passages], notes=[note], degraded=True)
