"""Fusion arithmetic: RRF, weighted RRF, query-aware RRF (IDF-driven weights), min-max score fusion."""

from __future__ import annotations

import pytest

from ragfunnel.retrieve.fusion import QueryAwareRRFFuser, RRFFuser, ScoreFuser, idf_sparse_weight
from tests.helpers import cands

KINDS = {"bm25": "sparse", "dense": "dense"}


def scores_of(fused):
    return {c.doc_id: c.score for c in fused}


def assert_well_ranked(fused):
    assert [c.rank for c in fused] == list(range(1, len(fused) + 1))
    assert len({c.doc_id for c in fused}) == len(fused)
    assert [c.score for c in fused] == sorted((c.score for c in fused), reverse=True)


def test_rrf_arithmetic():
    lists = {"bm25": cands(["a", "b", "c"], name="bm25"), "dense": cands(["c", "a"], name="dense")}
    fused = RRFFuser(k=60).fuse(lists, KINDS)
    assert_well_ranked(fused)
    assert scores_of(fused) == pytest.approx({"a": 1 / 61 + 1 / 62, "b": 1 / 62, "c": 1 / 63 + 1 / 61})
    assert [c.doc_id for c in fused] == ["a", "c", "b"]
    a = fused[0]
    assert a.sources == {"bm25": (1, 3.0), "dense": (2, 1.0)}
    assert a.best_chunks == ("a#w3s1/0001", "a#w3s1/0002")  # chunks from every list, no duplicates


def test_rrf_k_and_weights():
    lists = {"bm25": cands(["a", "b"], name="bm25"), "dense": cands(["b", "a"], name="dense")}
    fused = RRFFuser(k=1, weights={"dense": 3.0}).fuse(lists, KINDS)
    assert scores_of(fused) == pytest.approx({"a": 1 / 2 + 3 / 3, "b": 1 / 3 + 3 / 2})
    assert [c.doc_id for c in fused] == ["b", "a"]
    assert RRFFuser(k=1).weight("unlisted", KINDS, None) == 1.0


def test_rrf_ties_break_by_doc_id():
    lists = {"bm25": cands(["z", "y"], name="bm25"), "dense": cands(["y", "z"], name="dense")}
    assert [c.doc_id for c in RRFFuser().fuse(lists, KINDS)] == ["y", "z"]


def test_rrf_of_nothing():
    assert RRFFuser().fuse({"bm25": [], "dense": []}, KINDS) == []


@pytest.mark.parametrize(
    "idf, weight",
    [(None, 0.5), (0.0, 0.2), (1.5, 0.2), (2.0, 0.2), (2.75, 0.35), (3.5, 0.5), (4.25, 0.65), (5.0, 0.8), (9.0, 0.8)],
)
def test_idf_sparse_weight_interpolates(idf, weight):
    assert idf_sparse_weight(idf, 2.0, 5.0, 0.2, 0.8) == pytest.approx(weight)


def test_query_aware_weights_follow_idf():
    lists = {"bm25": cands(["s"], name="bm25"), "dense": cands(["d"], name="dense")}
    fuser = QueryAwareRRFFuser(k=60)
    rare = fuser.fuse(lists, KINDS, mean_idf=6.0)  # rare words: trust BM25
    assert scores_of(rare) == pytest.approx({"s": 0.8 / 61, "d": 0.2 / 61})
    assert [c.doc_id for c in rare] == ["s", "d"]
    common = fuser.fuse(lists, KINDS, mean_idf=1.0)  # common words: trust the vectors
    assert scores_of(common) == pytest.approx({"s": 0.2 / 61, "d": 0.8 / 61})
    assert [c.doc_id for c in common] == ["d", "s"]
    middle = fuser.fuse(lists, KINDS, mean_idf=4.1)
    assert scores_of(middle) == pytest.approx({"s": 0.62 / 61, "d": 0.38 / 61})
    unknown = fuser.fuse(lists, KINDS, mean_idf=None)
    assert scores_of(unknown) == pytest.approx({"s": 0.5 / 61, "d": 0.5 / 61})


def test_query_aware_custom_bounds_and_weights():
    fuser = QueryAwareRRFFuser(k=10, weights={"bm25": 2.0}, idf_low=1.0, idf_high=3.0, w_low=0.0, w_high=1.0)
    lists = {"bm25": cands(["s"], name="bm25"), "dense": cands(["d"], name="dense")}
    assert scores_of(fuser.fuse(lists, KINDS, mean_idf=2.5)) == pytest.approx({"s": 2 * 0.75 / 11, "d": 0.25 / 11})
    # several sparse lists share the sparse weight each
    kinds = {"bm25": "sparse", "bm25_w": "sparse", "dense": "dense"}
    lists["bm25_w"] = cands(["s"], name="bm25_w")
    assert scores_of(fuser.fuse(lists, kinds, mean_idf=3.0))["s"] == pytest.approx(2 / 11 + 1 / 11)


def test_score_fusion_min_max_and_bonus():
    lists = {
        "bm25": cands(["a", "b", "c"], scores=[12.0, 8.0, 2.0], name="bm25"),
        "dense": cands(["c", "d"], scores=[0.9, 0.5], name="dense"),
    }
    fused = ScoreFuser().fuse(lists, KINDS)
    assert scores_of(fused) == pytest.approx({"a": 1.0, "b": 0.6, "c": 0.0 + 1.0, "d": 0.0})
    assert_well_ranked(fused)
    assert [c.doc_id for c in fused] == ["a", "c", "b", "d"]
    bonus = ScoreFuser(weights={"bm25": 0.5, "dense": 2.0}, both_bonus=0.25).fuse(lists, KINDS)
    assert scores_of(bonus) == pytest.approx({"a": 0.5, "b": 0.3, "c": 2.0 + 0.25, "d": 0.0})
    assert bonus[0].doc_id == "c" and bonus[0].sources == {"bm25": (3, 2.0), "dense": (1, 0.9)}


def test_score_fusion_degenerate_lists():
    lists = {"bm25": cands(["a"], scores=[5.0], name="bm25"), "dense": [], "x": cands(["b", "c"], [1.0, 1.0], "x")}
    fused = ScoreFuser(both_bonus=1.0).fuse(lists, {"bm25": "sparse", "dense": "dense", "x": "dense"})
    assert scores_of(fused) == pytest.approx({"a": 0.0, "b": 0.0, "c": 0.0})  # no spread: no information
    assert [c.doc_id for c in fused] == ["a", "b", "c"]
