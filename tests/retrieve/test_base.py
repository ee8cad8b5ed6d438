"""Collapse of chunk hits to parent documents: one entry per parent, max score, first (best) occurrence."""

from __future__ import annotations

import random

from ragfunnel.retrieve.base import collapse_to_parents
from tests.helpers import hit

HITS = [
    hit("a#w3s1/0000", 9.0, 1, "bm25"),
    hit("b#w3s1/0004", 7.5, 2, "bm25"),
    hit("a#w3s1/0003", 7.0, 3, "bm25"),
    hit("c#w3s1/0001", 6.0, 4, "bm25"),
    hit("b#w3s1/0001", 2.0, 5, "bm25"),
    hit("a#w3s1/0009", 1.5, 6, "bm25"),
]


def test_one_candidate_per_parent_in_order_of_first_hit():
    out = collapse_to_parents(HITS)
    assert [c.doc_id for c in out] == ["a", "b", "c"]
    assert [c.rank for c in out] == [1, 2, 3]


def test_keeps_the_max_score_and_all_chunks_best_first():
    out = {c.doc_id: c for c in collapse_to_parents(HITS)}
    for doc_id, cand in out.items():
        assert cand.score == max(h.score for h in HITS if h.doc_id == doc_id)
    assert out["a"].best_chunks == ("a#w3s1/0000", "a#w3s1/0003", "a#w3s1/0009")
    assert out["b"].best_chunks == ("b#w3s1/0004", "b#w3s1/0001")
    assert out["c"].sources == {"bm25": (3, 6.0)}  # the parent's rank in the collapsed list
    assert out["a"].sources == {"bm25": (1, 9.0)}


def test_input_order_does_not_matter():
    shuffled = HITS[:]
    random.Random(3).shuffle(shuffled)
    assert collapse_to_parents(shuffled) == collapse_to_parents(HITS)
    assert [c.best_chunks for c in collapse_to_parents(shuffled)] == [c.best_chunks for c in collapse_to_parents(HITS)]


def test_empty():
    assert collapse_to_parents([]) == []
