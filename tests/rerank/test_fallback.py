"""The fallback wrapper: primary success, primary raising or degrading, fallback failing too, notes accumulating."""

from __future__ import annotations

from ragfunnel.rerank.base import RerankResult, keep_order, reorder
from ragfunnel.rerank.fallback import FallbackReranker


class Scripted:
    """A reranker that reverses the input, degrades, raises, or drops a candidate, and counts its calls."""

    def __init__(self, name, mode="reverse", notes=()):
        self.name, self.mode, self.notes, self.calls = name, mode, list(notes), 0

    def rerank(self, question, passages):
        self.calls += 1
        if self.mode == "raise":
            raise ConnectionError("api down")
        if self.mode == "degrade":
            return keep_order(passages, f"{self.name} unreachable; kept the fused order")
        scores = [float(i) for i in range(len(passages))]  # later fused = better: the reverse order
        candidates = reorder(passages, scores)
        if self.mode == "drop":
            candidates = candidates[1:]
        return RerankResult(candidates, notes=list(self.notes))


def ids(result):
    return [c.doc_id for c in result.candidates]


def test_primary_success_is_returned_as_is(passages):
    primary, fallback = Scripted("p", notes=["p: partial"]), Scripted("f")
    result = FallbackReranker(primary, fallback).rerank("q", passages)
    assert ids(result) == ["d", "c", "b", "a"] and result.notes == ["p: partial"] and not result.degraded
    assert (primary.calls, fallback.calls) == (1, 0)


def test_primary_raises_fallback_answers(passages):
    fallback = Scripted("f", notes=["f: note"])
    rr = FallbackReranker(Scripted("p", "raise"), fallback)
    assert rr.name == "p"
    result = rr.rerank("q", passages)
    assert ids(result) == ["d", "c", "b", "a"] and not result.degraded
    assert result.notes == ["p raised ConnectionError: api down", "p failed; used f", "f: note"]
    assert fallback.calls == 1


def test_primary_degraded_fallback_answers(passages):
    result = FallbackReranker(Scripted("p", "degrade"), Scripted("f")).rerank("q", passages)
    assert ids(result) == ["d", "c", "b", "a"] and not result.degraded
    assert result.notes == ["p unreachable; kept the fused order", "p failed; used f"]


def test_both_fail(passages):
    result = FallbackReranker(Scripted("p", "degrade"), Scripted("f", "raise"), name="chain").rerank("q", passages)
    assert result.degraded and result.candidates == [p.candidate for p in passages]
    assert result.notes == [
        "p unreachable; kept the fused order",
        "p failed; used f",
        "f raised ConnectionError: api down",
        "chain: no reranker succeeded; kept the fused order",
    ]


def test_no_fallback_keeps_order(passages):
    result = FallbackReranker(Scripted("p", "raise")).rerank("q", passages)
    assert result.degraded and result.candidates == [p.candidate for p in passages]
    assert result.notes == ["p raised ConnectionError: api down", "p: no reranker succeeded; kept the fused order"]


def test_a_result_that_loses_candidates_counts_as_a_failure(passages):
    result = FallbackReranker(Scripted("p", "drop"), Scripted("f")).rerank("q", passages)
    assert ids(result) == ["d", "c", "b", "a"]
    assert result.notes == ["p returned other candidates than it was given", "p failed; used f"]
