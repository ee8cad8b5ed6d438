"""Fitting the learned fusion (train/fusion.py) on synthetic lists whose answer is known: a list that always holds
the gold first gets the weight, a question-dependent truth is learnt only by the query-dependent model, and the model
file is written, loadable and honest about what it was trained on."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from ragfunnel.errors import ConfigError
from ragfunnel.questions import Question
from ragfunnel.retrieve.learned import LearnedFusion
from ragfunnel.train.fusion import (
    QuestionLists, cross_validate, default_metric, fit, hits_at, model_dict, per_question, prepare, train_fusion,
)
from tests.helpers import cands

KINDS = {"bm25": "sparse", "dense": "dense"}
NAMES = ["bm25", "dense"]


def synthetic(n: int, seed: int = 1, split_by_question_word: bool = False) -> list[QuestionLists]:
    """Each question's gold is first in one list and 6th-15th in the other. Which list holds it first: always BM25,
    or (split_by_question_word) BM25 for who-questions and the dense list for descriptions."""
    rng = random.Random(seed)
    out = []
    for q in range(n):
        gold = f"g{q}"
        noise = [f"n{q}_{i}" for i in range(30)]
        described = split_by_question_word and q % 2 == 1
        text = f"the scene where person {q} does a thing" if described else f"Who did thing {q}?"
        good = [gold, *rng.sample(noise, 14)]
        bad = rng.sample(noise, 15)
        bad.insert(rng.randrange(5, 15), gold)
        lists = {"bm25": cands(bad if described else good, name="bm25"),
                 "dense": cands(good if described else bad, name="dense")}
        out.append(QuestionLists(Question(f"q{q}", text, (gold,)), lists, {}))
    return out


def test_the_list_that_holds_the_gold_gets_the_weight():
    data = synthetic(60)
    p = prepare(data, NAMES, KINDS)
    assert len(p.starts) == 60 and p.x.shape[1:] == (2, 3)
    bias, theta, info = fit(p, 2, use_theta=False)
    assert not theta.any() and info["iterations"] > 0
    assert np.exp(bias[0]).sum() > 3 * np.exp(bias[1]).sum()  # BM25 outweighs the dense list
    fusion = LearnedFusion(model_dict(NAMES, KINDS, bias, theta, info["mean"], info["std"]))
    assert np.mean(hits_at(fusion, p)) == 1.0


def test_only_the_query_dependent_model_learns_which_list_to_trust():
    data = synthetic(120, split_by_question_word=True)
    p = prepare(data, NAMES, KINDS)
    convex = fit(p, 2, use_theta=False)
    varying = fit(p, 2, l2=0.3, use_theta=True)
    scored = {}
    for name, (bias, theta, info) in {"convex": convex, "varying": varying}.items():
        fusion = LearnedFusion(model_dict(NAMES, KINDS, bias, theta, info["mean"], info["std"]))
        scored[name] = np.mean(hits_at(fusion, p, k=1))
    assert scored["varying"] == 1.0 and scored["convex"] < 0.75
    cv = cross_validate(p, NAMES, KINDS, folds=3, grid=[(False, 0.0), (True, 1.0)], metric="recall@1")
    assert cv[1]["recall@1"] > cv[0]["recall@1"]


def test_weights_give_each_set_its_say():
    data = synthetic(40, split_by_question_word=True)
    p = prepare(data, NAMES, KINDS, weights=[3.0 if q % 2 else 1.0 for q in range(40)])
    assert p.weight.mean() == pytest.approx(1.0) and p.weight[1] == pytest.approx(3 * p.weight[0])
    bias, _, _ = fit(p, 2, use_theta=False)
    assert np.exp(bias[1]).sum() > np.exp(bias[0]).sum()  # the heavier descriptions pull towards the dense list


def test_graded_questions_are_scored_by_ndcg():
    data = synthetic(20)
    graded = [QuestionLists(Question(d.question.qid, d.question.text, (d.question.gold[0], "n0_0"),
                                     grades={d.question.gold[0]: 2.0, "n0_0": 1.0}), d.lists, d.idfs) for d in data]
    assert default_metric(data) == "recall@5" and default_metric(graded) == "ndcg@10"
    p = prepare(graded[:1], NAMES, KINDS)
    assert sorted(p.target[p.target > 0].tolist()) == pytest.approx([1 / 3, 2 / 3])  # relevance shares by grade
    bias, theta, info = fit(prepare(graded, NAMES, KINDS), 2, use_theta=False)
    fusion = LearnedFusion(model_dict(NAMES, KINDS, bias, theta, info["mean"], info["std"]))
    scores = per_question(fusion, prepare(graded, NAMES, KINDS), "ndcg@10")
    assert all(0.0 < s <= 1.0 for s in scores)


def test_questions_no_list_found_are_left_out():
    data = synthetic(12)
    lost = QuestionLists(Question("lost", "Who?", ("nowhere",)), data[0].lists, {})
    assert len(prepare([*data, lost], NAMES, KINDS).starts) == 12
    with pytest.raises(ConfigError, match="none of the training questions"):
        prepare([lost], NAMES, KINDS)


def test_train_fusion_writes_a_model_hybrid_can_load(tmp_path):
    report = train_fusion(synthetic(40), NAMES, KINDS, tmp_path / "fusion", modes=["hybrid", "accurate"],
                          encoder="default", idf_view="scene")
    assert report["query_dependent"] is False  # under 150 questions: one convex combination
    assert report["cross_validation"] == [{"query_dependent": False, "l2": 0.0, "recall@5": 1.0}]
    assert report["train_recall@5"] == 1.0 and report["modes"] == ["hybrid", "accurate"]
    saved = json.loads((tmp_path / "fusion" / "model.json").read_text())
    assert saved["training"]["questions"] == 40 and saved["encoder"] == "default" and saved["idf_view"] == "scene"
    fusion = LearnedFusion.load(tmp_path / "fusion")
    assert fusion.modes == ["hybrid", "accurate"] and fusion.retrievers == NAMES and not fusion.query_dependent
    with pytest.raises(ConfigError, match="too few"):
        train_fusion(synthetic(5), NAMES, KINDS, tmp_path / "small")
