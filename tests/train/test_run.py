"""`train_reranker`, the whole recipe, as a smoke test on the small index: files, report keys, and the report's
hold-out numbers against the first stage and the saved model."""

from __future__ import annotations

import json

import pytest

from ragfunnel.rerank.base import Passage
from ragfunnel.rerank.ltr import LTRReranker
from ragfunnel.rerank.passages import passage_text
from ragfunnel.train import run
from ragfunnel.corpus.friends_questions import Split
from ragfunnel.evaluate.candidates import CandidateSet
from ragfunnel.train.run import recall_at, train_reranker
from ragfunnel.types import Candidate

pytestmark = pytest.mark.integration

pytest.importorskip("lightgbm")

KEYS = {"collection", "seed", "fit_on", "train_questions", "holdout_questions", "excluded_sample_questions", "holdout_fused_recall@5",
        "ltr", "holdout_ltr_recall@5", "seconds"}


@pytest.fixture
def small_split(monkeypatch, small_questions):
    """The split replaced by questions whose gold scenes are in the small index (the real training questions'
    scenes are not): 16 to train on, the other 10 held out."""
    split = Split(train=small_questions[:16], holdout=small_questions[16:], excluded=123)
    monkeypatch.setattr(run, "training_split", lambda friends_dir, seed=13: split)
    return split


def test_smoke_with_the_real_split(small_pipeline, tmp_path):
    """The real training questions' gold scenes are not in the small index: no positive label, it still runs."""
    report = train_reranker(small_pipeline, tmp_path / "out", limit=8, cross_encoder=False)
    assert set(report) == KEYS
    assert (report["train_questions"], report["holdout_questions"]) == (8, 5)
    assert report["excluded_sample_questions"] == 777
    assert report["holdout_fused_recall@5"] == report["holdout_ltr_recall@5"] == 0.0
    assert (tmp_path / "out" / "ltr" / "model.txt").is_file()


def test_writes_model_meta_and_report(small_pipeline, small_split, tmp_path):
    out = tmp_path / "reranker"
    calls: list = []
    report = train_reranker(small_pipeline, out, limit=8, cross_encoder=False, progress=lambda *a: calls.append(a))
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == [
        "ltr", "ltr/meta.json", "ltr/model.txt", "training_report.json"
    ]
    assert json.loads((out / "training_report.json").read_text()) == report
    assert set(report) == KEYS  # no cross-encoder keys without the cross-encoder
    assert report["seed"] == 13 and report["excluded_sample_questions"] == 123
    assert (report["train_questions"], report["holdout_questions"]) == (8, 5)  # limit // 4, at least 5
    assert report["ltr"] == json.loads((out / "ltr" / "meta.json").read_text())
    assert report["ltr"]["candidates"] == 20 and report["ltr"]["train_questions"] == 8
    assert report["ltr"]["retrievers"] == small_pipeline.settings.modes["hybrid"].retrievers
    assert report["seconds"] >= report["ltr"]["seconds"]
    stages = {c[0] for c in calls}
    assert stages == {"first stage (train)", "first stage (hold-out)"}
    assert ("first stage (train)", 8, 8) in calls and ("first stage (hold-out)", 5, 5) in calls


def test_report_numbers_match_the_first_stage_and_the_model(small_pipeline, small_split, small_store, tmp_path):
    out = tmp_path / "reranker"
    report = train_reranker(small_pipeline, out, limit=8, cross_encoder=False)
    held = small_split.holdout[:5]
    fused = [small_pipeline.search(q.text, "hybrid", k=20).candidates for q in held]
    hit = lambda cands, q: bool({c.doc_id for c in cands[:5]} & set(q.gold))  # noqa: E731
    assert report["holdout_fused_recall@5"] == pytest.approx(sum(hit(c, q) for c, q in zip(fused, held)) / 5)
    assert report["holdout_fused_recall@5"] > 0  # gold scenes are in the index: the numbers mean something
    reranker = LTRReranker(small_store, out / "ltr")
    # the report scores the hold-out with the saved model, as the accurate mode does
    ltr_hits = 0
    for q, cands in zip(held, fused):
        docs = [small_store.document(c.doc_id) for c in cands]
        passages = [Passage(c, passage_text(small_store, d, c), d) for c, d in zip(cands, docs)]
        ltr_hits += hit(reranker.rerank(q.text, passages).candidates, q)
    assert report["holdout_ltr_recall@5"] == pytest.approx(ltr_hits / 5)


def test_the_seed_is_recorded_and_passed_on(small_pipeline, monkeypatch, small_questions, tmp_path):
    seen = {}

    def fake_split(friends_dir, seed=13):
        seen["seed"], seen["dir"] = seed, friends_dir
        return Split(small_questions[:8], small_questions[8:14], 0)

    monkeypatch.setattr(run, "training_split", fake_split)
    report = train_reranker(small_pipeline, tmp_path / "r", seed=5, limit=8)
    assert seen == {"seed": 5, "dir": small_pipeline.settings.friends_dir}
    assert report["seed"] == 5 and report["ltr"]["seed"] == 5


def cset(gold: str, ranked: list[str]) -> CandidateSet:
    from ragfunnel.questions import Question

    cands = [Candidate(d, 1.0 / r, r, {}, ()) for r, d in enumerate(ranked, 1)]
    return CandidateSet(Question("q", "?", (gold,)), cands, [])


def test_recall_at():
    import numpy as np

    sets = [cset("g", ["a", "b", "g"]), cset("g", ["g", "a", "b"]), cset("g", ["a", "b", "c"])]
    assert recall_at(sets, None, n=3, k=1) == pytest.approx(1 / 3)
    assert recall_at(sets, None, n=3, k=3) == pytest.approx(2 / 3)
    scores = [np.array([0.0, 0.1, 0.9]), np.array([0.0, 0.5, 0.5]), np.array([1.0, 2.0, 3.0])]
    assert recall_at(sets, scores, n=3, k=1) == pytest.approx(1 / 3)  # the first by score; ties: fused order
    assert recall_at(sets, None, n=2, k=5) == pytest.approx(1 / 3)  # only the top n count
    assert recall_at([], None, n=3) == 0.0


def test_fit_on_the_holdout_cross_validates_and_skips_the_training_questions(small_pipeline, small_split, tmp_path):
    """For an index whose bi-encoder saw the training questions: LambdaMART is fit on the hold-out alone, and the
    report's hold-out figure is out-of-fold."""
    calls: list = []
    report = train_reranker(small_pipeline, tmp_path / "r", limit=8, fit_on="holdout", progress=lambda *a: calls.append(a))
    assert report["fit_on"] == "holdout" and report["ltr"]["fit_on"] == "holdout"
    assert report["ltr_fit_questions"] == report["holdout_questions"] == 5
    assert 0.0 <= report["holdout_ltr_recall@5_out_of_fold"] <= 1.0 and "holdout_ltr_recall@5" not in report
    assert {c[0] for c in calls} == {"first stage (hold-out)"}  # the training questions are not even searched
    assert (tmp_path / "r" / "ltr" / "model.txt").is_file()


def test_fit_on_values(small_pipeline, tmp_path):
    from ragfunnel.errors import ConfigError

    with pytest.raises(ConfigError, match="fit_on"):
        train_reranker(small_pipeline, tmp_path / "a", limit=8, fit_on="everything")
    with pytest.raises(ConfigError, match="cross-encoder"):
        train_reranker(small_pipeline, tmp_path / "b", limit=8, fit_on="holdout", cross_encoder=True)
