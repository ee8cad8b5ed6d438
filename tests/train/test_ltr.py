"""LambdaMART training: the feature matrix (one group per question, label = gold scene), the saved model and its
meta, the extra cross-encoder column, reproducibility from the seed."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ragfunnel.rerank.features import FeatureExtractor
from ragfunnel.evaluate.candidates import CandidateSet
from ragfunnel.train.ltr import LTR_PARAMS, matrix, train_ltr, train_ltr_cv

pytestmark = pytest.mark.integration

lgb = pytest.importorskip("lightgbm")


@pytest.fixture(scope="module")
def extractor(small_store, small_settings):
    return FeatureExtractor(small_store, small_settings.modes["hybrid"].retrievers)


def test_matrix_groups_and_labels(extractor, small_candidate_sets):
    sets = small_candidate_sets[:4]
    x, y, groups = matrix(extractor, sets, n=10)
    assert x.shape == (40, len(extractor.names)) and y.shape == (40,)
    assert groups == [10, 10, 10, 10]
    expected = [float(c.doc_id in cs.question.gold) for cs in sets for c in cs.candidates[:10]]
    assert y.tolist() == expected and y.sum() >= 1
    # the rows of a group are the extractor's features of that question's candidates
    first = extractor.features(extractor.question_context(sets[1].question.text), sets[1].candidates[:10],
                               sets[1].documents[:10])
    assert np.array_equal(x[10:20], first)


def test_matrix_skips_questions_without_candidates_and_cuts_at_n(extractor, small_candidate_sets):
    cs = small_candidate_sets[0]
    empty = CandidateSet(cs.question, [], [])
    short = CandidateSet(cs.question, cs.candidates[:3], cs.documents[:3])
    x, y, groups = matrix(extractor, [empty, short, cs], n=5)
    assert groups == [3, 5] and x.shape[0] == len(y) == 8


def test_matrix_extra_column(extractor, small_candidate_sets):
    sets = small_candidate_sets[:2]
    extra = [np.arange(20, dtype=np.float32) + 100 * i for i in range(2)]
    x, _, groups = matrix(extractor, sets, n=6, extra=extra)
    assert x.shape == (12, len(extractor.names) + 1)
    assert x[:, -1].tolist() == [*range(6), *range(100, 106)]
    plain, _, _ = matrix(extractor, sets, n=6)
    assert np.array_equal(x[:, :-1], plain)


def test_trained_model_and_meta(tiny_ltr_model, extractor):
    """`tiny_ltr_model` (conftest) is train_ltr on 17 questions, early-stopped on all 26, n=20, 40 rounds."""
    assert {p.name for p in tiny_ltr_model.iterdir()} == {"model.txt", "meta.json"}
    meta = json.loads((tiny_ltr_model / "meta.json").read_text())
    assert meta["kind"] == "ltr"
    assert meta["retrievers"] == extractor.retrievers
    assert meta["features"] == extractor.names
    assert (meta["candidates"], meta["seed"], meta["train_questions"], meta["holdout_questions"]) == (20, 13, 17, 26)
    assert 1 <= meta["best_iteration"] <= 40
    assert meta["seconds"] >= 0
    booster = lgb.Booster(model_file=str(tiny_ltr_model / "model.txt"))
    assert booster.feature_name() == extractor.names
    assert booster.num_trees() == meta["best_iteration"]  # saved at the best iteration


def test_ltr_params_rank_questions():
    assert LTR_PARAMS["objective"] == "lambdarank"
    assert LTR_PARAMS["num_threads"] <= 2


def test_extra_column_and_reproducibility(extractor, small_candidate_sets, tmp_path):
    train, holdout = small_candidate_sets[:10], small_candidate_sets[10:16]
    ce = lambda sets: [np.linspace(1, 0, len(cs.candidates), dtype=np.float32) for cs in sets]  # noqa: E731
    kwargs = dict(n=10, rounds=15, extra_names=("cross_encoder",), extra_train=ce(train), extra_holdout=ce(holdout))
    meta = train_ltr(extractor, train, holdout, tmp_path / "a", seed=7, **kwargs)
    assert meta["features"] == [*extractor.names, "cross_encoder"]
    assert (meta["train_questions"], meta["holdout_questions"], meta["seed"]) == (10, 6, 7)
    booster = lgb.Booster(model_file=str(tmp_path / "a" / "model.txt"))
    assert booster.num_feature() == len(extractor.names) + 1 and booster.feature_name()[-1] == "cross_encoder"
    train_ltr(extractor, train, holdout, tmp_path / "b", seed=7, **kwargs)
    assert (tmp_path / "a" / "model.txt").read_text() == (tmp_path / "b" / "model.txt").read_text()


def test_cross_validated_fit(extractor, small_candidate_sets, tmp_path):
    """train_ltr_cv: folds by gold scene, the round count with the best mean nDCG@5, a final model on every
    question, and out-of-fold scores (from models that did not see the question), reproducibly."""
    sets = small_candidate_sets
    meta, oof = train_ltr_cv(extractor, sets, tmp_path / "a", n=10, rounds=15, folds=3, seed=7)
    assert (meta["fit_on"], meta["folds"], meta["train_questions"], meta["seed"]) == ("holdout", 3, len(sets), 7)
    assert 1 <= meta["best_iteration"] <= 15 and 0.0 <= meta["cv_ndcg@5"] <= 1.0
    assert [len(s) for s in oof] == [len(cs.candidates[:10]) for cs in sets]
    final = lgb.Booster(model_file=str(tmp_path / "a" / "model.txt"))
    assert final.num_trees() == meta["best_iteration"]
    in_sample = [final.predict(extractor.features(extractor.question_context(cs.question.text), cs.candidates[:10],
                                                  cs.documents[:10])) for cs in sets]
    assert any(not np.allclose(a, b) for a, b in zip(oof, in_sample))
    train_ltr_cv(extractor, sets, tmp_path / "b", n=10, rounds=15, folds=3, seed=7)
    assert (tmp_path / "a" / "model.txt").read_text() == (tmp_path / "b" / "model.txt").read_text()


def test_matrix_extra_rows_of_columns(extractor, small_candidate_sets):
    """A question's extra values may be one row per candidate (several columns), cut at n like the features."""
    sets = small_candidate_sets[:2]
    extra = [np.stack([np.arange(20.0), -np.arange(20.0)], axis=1) + 100 * i for i in range(2)]
    x, _, _ = matrix(extractor, sets, n=4, extra=extra)
    assert x.shape == (8, len(extractor.names) + 2)
    assert x[:, -2].tolist() == [0, 1, 2, 3, 100, 101, 102, 103]
    assert x[:, -1].tolist() == [0, -1, -2, -3, 100, 99, 98, 97]


def test_cross_validated_fit_with_extra_columns(extractor, small_candidate_sets, tmp_path):
    """Extra columns reach every fold and the final model, and stay aligned with their question when questions
    without candidates are dropped."""
    cs0 = small_candidate_sets[0]
    sets = [CandidateSet(cs0.question, [], []), *small_candidate_sets]
    # a column that marks the gold scene: the model must learn to use it, which it can only if rows stay aligned
    extra = [np.zeros(0)] + [np.array([float(c.doc_id in cs.question.gold) for c in cs.candidates])
                             for cs in small_candidate_sets]
    meta, oof = train_ltr_cv(extractor, sets, tmp_path / "a", n=10, rounds=15, folds=3, seed=7,
                             extra_names=("oracle",), extra=extra)
    assert meta["features"] == [*extractor.names, "oracle"] and meta["train_questions"] == len(small_candidate_sets)
    booster = lgb.Booster(model_file=str(tmp_path / "a" / "model.txt"))
    assert booster.feature_name()[-1] == "oracle"
    gain = booster.feature_importance("gain")
    assert int(np.argmax(gain)) == len(extractor.names)  # the gold-marking column is the model's main evidence
    assert [len(s) for s in oof] == [len(cs.candidates[:10]) for cs in small_candidate_sets]
