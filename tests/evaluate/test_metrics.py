"""Rank metrics on hand-made rankings: hits, misses, several gold parents, union coverage."""

from __future__ import annotations

import math

import pytest

from ragfunnel.evaluate.metrics import first_rank, mrr_at, ndcg_at, recall_at, summarize, union_coverage

RANKED = ["d1", "d2", "d3", "d4", "d5", "d6"]


def test_first_rank():
    assert first_rank(RANKED, ["d3"]) == 3
    assert first_rank(RANKED, ["d5", "d2"]) == 2
    assert first_rank(RANKED, ["x"]) is None
    assert first_rank([], ["d1"]) is None


@pytest.mark.parametrize(
    "gold, k, expected",
    [
        (["d1"], 1, 1.0),
        (["d2"], 1, 0.0),
        (["d2"], 2, 1.0),
        (["x"], 5, 0.0),  # a miss
        (["d2", "d5"], 3, 0.5),  # several gold parents: the share found
        (["d2", "d5"], 5, 1.0),
        (["d2", "d5", "x", "y"], 10, 0.5),
        (["d2", "d2"], 2, 1.0),  # duplicates in the gold list count once
        ([], 5, 0.0),
    ],
)
def test_recall_at(gold, k, expected):
    assert recall_at(RANKED, gold, k) == pytest.approx(expected)


@pytest.mark.parametrize(
    "gold, k, expected",
    [(["d1"], 10, 1.0), (["d4"], 10, 0.25), (["d4", "d2"], 10, 0.5), (["d6"], 5, 0.0), (["x"], 10, 0.0)],
)
def test_mrr_at(gold, k, expected):
    assert mrr_at(RANKED, gold, k) == pytest.approx(expected)


def test_ndcg_at():
    assert ndcg_at(RANKED, ["d1"]) == pytest.approx(1.0)
    assert ndcg_at(RANKED, ["d3"]) == pytest.approx(1 / math.log2(4))
    assert ndcg_at(RANKED, ["x"]) == 0.0
    assert ndcg_at(RANKED, []) == 0.0
    assert ndcg_at(RANKED, ["d6"], k=5) == 0.0
    # two gold parents at ranks 2 and 4: DCG / ideal DCG (both at the top)
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    idcg = 1 / math.log2(2) + 1 / math.log2(3)
    assert ndcg_at(RANKED, ["d2", "d4"]) == pytest.approx(dcg / idcg)
    # graded relevance
    graded = {"d1": 1.0, "d2": 3.0}
    assert ndcg_at(RANKED, graded) == pytest.approx((1 + 3 / math.log2(3)) / (3 + 1 / math.log2(3)))
    assert ndcg_at(["d2", "d1"], graded) == pytest.approx(1.0)


def test_summarize_means_over_questions():
    runs = [(RANKED, ["d1"]), (RANKED, ["d6"]), (RANKED, ["x"]), (["a"] * 0, ["d1"])]
    out = summarize(runs)
    assert out["n"] == 4
    assert out["recall@1"] == pytest.approx(0.25)
    assert out["recall@5"] == pytest.approx(0.25)
    assert out["recall@10"] == pytest.approx(0.5)
    assert out["recall@20"] == pytest.approx(0.5)
    assert out["mrr@10"] == pytest.approx((1 + 1 / 6) / 4)
    assert out["ndcg@10"] == pytest.approx((1 + 1 / math.log2(7)) / 4)
    assert list(out) == ["recall@1", "recall@5", "recall@10", "recall@20", "mrr@10", "ndcg@10", "n"]
    assert summarize([]) == {**{f"recall@{k}": 0.0 for k in (1, 5, 10, 20)}, "mrr@10": 0.0, "ndcg@10": 0.0, "n": 0}
    assert list(summarize(runs, ks=(3,))) == ["recall@3", "mrr@10", "ndcg@10", "n"]


def test_union_coverage():
    bm25 = [["a", "b", "c"], ["x", "y", "z"], ["p", "q", "r"]]
    dense = [["c", "d", "e"], ["z", "w", "v"], ["s", "t", "u"]]
    golds = [["d"], ["z"], ["nothing"]]
    assert union_coverage([bm25], golds, 2) == 0.0
    assert union_coverage([bm25], golds, 3) == pytest.approx(1 / 3)  # q2's z is bm25's third
    assert union_coverage([dense], golds, 2) == pytest.approx(2 / 3)
    assert union_coverage([bm25, dense], golds, 3) == pytest.approx(2 / 3)
    assert union_coverage([bm25, dense], golds, 1) == pytest.approx(1 / 3)  # q2: z is dense's first
    assert union_coverage([], golds, 5) == 0.0
    assert union_coverage([bm25], [], 5) == 0.0
