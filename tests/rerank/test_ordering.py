"""Partial rankings: scored passages first, unscored ones after them in fused order, scores never rising."""

from __future__ import annotations

from ragfunnel.rerank.ordering import rank_partial


def test_scored_first_then_fused_order(passages):
    ranked = rank_partial(passages, {3: 0.9, 1: 0.4})
    assert [c.doc_id for c in ranked] == ["d", "b", "a", "c"]
    assert [c.score for c in ranked] == [0.9, 0.4, 0.0, 0.0]
    assert [c.rank for c in ranked] == [1, 2, 3, 4]
    assert ranked[2].sources == {"bm25": (1, 4.0), "fused": (1, 4.0)}
    assert ranked[2].best_chunks == passages[0].candidate.best_chunks


def test_an_unscored_passage_never_overtakes_a_scored_one_on_a_tie(passages):
    # d is scored 0.0 and a/b/c are unscored (floor 0.0): d still comes first.
    ranked = rank_partial(passages, {3: 0.0})
    assert [c.doc_id for c in ranked] == ["d", "a", "b", "c"]


def test_negative_scores_push_the_floor_down(passages):
    ranked = rank_partial(passages, {2: -1.5, 0: -3.0})
    assert [c.doc_id for c in ranked] == ["c", "a", "b", "d"]
    assert [c.score for c in ranked] == [-1.5, -3.0, -3.0, -3.0]


def test_ties_among_scored_keep_fused_order_and_bad_entries_are_ignored(passages):
    ranked = rank_partial(passages, {2: 0.5, 1: 0.5, 9: 1.0, -1: 2.0, 0: float("nan")})
    assert [c.doc_id for c in ranked] == ["b", "c", "a", "d"]


def test_all_or_nothing_scored(passages):
    assert [c.doc_id for c in rank_partial(passages, {})] == ["a", "b", "c", "d"]
    assert rank_partial([], {0: 1.0}) == []
    full = rank_partial(passages, {0: 1.0, 1: 4.0, 2: 3.0, 3: 2.0})
    assert [c.doc_id for c in full] == ["b", "c", "d", "a"]
