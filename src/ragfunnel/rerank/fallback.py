"""A reranker that falls back: the primary first; when it raises, degrades or returns something other than a
re-ordering of its input, the fallback (if any), else the fused order. Notes of every step accumulate.

The result is `degraded` only when the fused order came back; a result from the fallback is not degraded, its
notes say the primary failed.
"""

from __future__ import annotations

from ragfunnel.rerank.base import Passage, Reranker, RerankResult, keep_order


def _attempt(reranker: Reranker, question: str, passages: list[Passage]) -> tuple[RerankResult | None, list[str]]:
    """(the result if the reranker did its job, else None; its notes)."""
    name = getattr(reranker, "name", type(reranker).__name__)
    try:
        result = reranker.rerank(question, passages)
    except Exception as exc:  # noqa: BLE001 - a failing reranker degrades, it never breaks the request
        return None, [f"{name} raised {type(exc).__name__}: {str(exc)[:200]}"]
    notes = list(result.notes)
    if result.degraded:
        return None, notes
    if sorted(c.doc_id for c in result.candidates) != sorted(p.candidate.doc_id for p in passages):
        return None, [*notes, f"{name} returned other candidates than it was given"]
    return result, notes


class FallbackReranker:
    def __init__(self, primary: Reranker, fallback: Reranker | None = None, name: str | None = None):
        self.primary, self.fallback = primary, fallback
        self.name = name or primary.name

    def rerank(self, question: str, passages: list[Passage]) -> RerankResult:
        result, notes = _attempt(self.primary, question, passages)
        if result is not None:
            return result
        if self.fallback is not None:
            notes.append(f"{self.primary.name} failed; used {self.fallback.name}")
            result, more = _attempt(self.fallback, question, passages)
            notes.extend(more)
            if result is not None:
                return RerankResult(result.candidates, notes=notes)
        degraded = keep_order(passages, f"{self.name}: no reranker succeeded; kept the fused order")
        degraded.notes[:0] = notes
        return degraded
