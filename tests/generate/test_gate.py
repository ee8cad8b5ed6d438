"""The answerability gate: the similarity gate, the learned gate (fit, threshold, load, judge), training it over a
real index, and the Answerer using whichever gate the index has."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ragfunnel.errors import ConfigError
from ragfunnel.generate.answer import Answerer, AnswerSettings
from ragfunnel.generate.evaluate import off_topic_training_questions, out_of_scope_questions
from ragfunnel.generate.gate import (
    FEATURES, GATE_FILE, GateFeatures, GateDecision, LearnedGate, SimilarityGate, load_gate,
)
from ragfunnel.train.gate import cross_validated_scores, fit_gate, standardise, train_gate
from ragfunnel.store.files import read_file_artifact, write_file_artifact
from ragfunnel.types import Candidate
from tests.generate.conftest import ScriptedLLM


def cand(doc_id: str, **sources: tuple[int, float]) -> Candidate:
    return Candidate(doc_id=doc_id, score=1.0, rank=1, sources=dict(sources))


def test_similarity_gate_refuses_below_its_threshold_and_abstains_without_dense_evidence():
    gate = SimilarityGate(0.5)
    near = gate.judge("q", [cand("a", dense_w3s1=(1, 0.7), bm25_scene=(1, 12.0))])
    assert near == GateDecision(True, 0.7, 0.5, "")
    far = gate.judge("q", [cand("a", dense_w3s1=(3, 0.3)), cand("b", dense_utt=(1, 0.42))])
    assert not far.answerable and far.score == 0.42 and "0.42 < 0.50" in far.reason
    assert gate.judge("q", [cand("a", bm25_scene=(1, 12.0))]) is None  # BM25 scores are not cosines
    assert gate.describe() == "similarity ≥ 0.50"


def separable(n_pos: int = 60, n_neg: int = 40, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    pos = rng.normal(0.0, 1.0, (n_pos, len(FEATURES)))
    neg = rng.normal(0.0, 1.0, (n_neg, len(FEATURES)))
    pos[:, 0] += 3.0  # the answerable questions are far more similar to what was retrieved
    return np.vstack([pos, neg]), np.array([1] * n_pos + [0] * n_neg)


def test_fit_gate_sets_its_threshold_on_cross_validated_scores():
    x, y = separable()
    model = fit_gate(x, y, target_refusal=0.05)
    cv = model["cross_validated"]
    assert cv["answerable"] == 60 and cv["off_topic"] == 40
    assert 0.0 < cv["answerable_refused"] <= 0.1  # ~ the target, measured on held-out folds
    assert cv["off_topic_refused"] > 0.8
    assert model["features"] == list(FEATURES) and model["coef"][0] > 0  # similarity counts for answerable
    gate = LearnedGate(model, features=lambda q, c: x[0] if q == "pos" else x[-1])
    assert gate.judge("pos", [cand("a")]).answerable
    verdict = gate.judge("neg", [cand("a")])
    assert not verdict.answerable and "learned gate" in verdict.reason and verdict.threshold == model["threshold"]
    assert gate.judge("anything", []) is None


def test_cross_validated_scores_are_the_ones_the_threshold_is_set_on():
    x, y = separable()
    z, mean, scale = standardise(x)
    assert np.allclose(z.mean(axis=0), 0.0) and np.allclose(z.std(axis=0), 1.0)
    cv = cross_validated_scores(z, y)
    assert cv[y == 1].mean() > 0.8 > 0.2 > cv[y == 0].mean()
    for target in (0.02, 0.05, 0.2):
        assert fit_gate(x, y, target)["threshold"] == pytest.approx(np.quantile(cv[y == 1], target))
    constant = np.hstack([x, np.ones((len(x), 1))])
    assert standardise(constant)[2][-1] == 1.0  # a constant column is not divided by zero


def test_fit_gate_needs_both_kinds_of_question():
    x, y = separable()
    with pytest.raises(ConfigError, match="answerable and"):
        fit_gate(x[y == 1], y[y == 1])
    with pytest.raises(ConfigError):
        fit_gate(x[:62], y[:62])  # two off-topic questions cannot fill five folds


def test_learned_gate_rejects_a_model_of_other_features_or_a_broken_file(tmp_path: Path):
    x, y = separable()
    model = fit_gate(x, y)
    with pytest.raises(ConfigError, match="train gate"):
        LearnedGate({**model, "features": ["dense__best"]}, features=lambda q, c: x[0])
    with pytest.raises(ConfigError, match="train gate"):
        LearnedGate.load("{not json", store=None, where="a broken gate.json")


def test_the_bundled_off_topic_questions_are_not_the_evaluation_ones():

    training = off_topic_training_questions()
    assert len(training) >= 100 and not set(training) & set(out_of_scope_questions())


class IndexAt:
    """A read-only view of a shared store whose gate lives in another directory (the session index stays clean)."""

    def __init__(self, store, path: Path):
        self._store, self._path = store, path

    def read_artifact(self, name: str):
        return read_file_artifact(self._path, name)

    def write_artifact(self, name: str, text: str) -> str:
        return write_file_artifact(self._path, name, text)

    def __getattr__(self, name):
        return getattr(self._store, name)


def test_train_gate_on_a_real_index_and_the_answerer_uses_it(small_pipeline, small_store, tmp_path: Path):
    from ragfunnel.pipeline import Pipeline

    pipeline = Pipeline(small_pipeline.settings, store=IndexAt(small_store, tmp_path))
    answerable = ["Who was Joey in love with?", "What did Ross say to Rachel?", "Where is Monica's apartment?",
                  "Why is Chandler upset with Joey?", "What did Phoebe sing?", "Who did Rachel date?",
                  "What does Joey want to eat?", "Who is Ross's sister?"]
    off_topic = off_topic_training_questions()[:8]
    model = train_gate(pipeline, answerable, off_topic, k=3)
    assert Path(model["path"]) == tmp_path / GATE_FILE
    saved = json.loads((tmp_path / GATE_FILE).read_text())
    assert saved["features"] == list(FEATURES) and saved["similarity_gate"]["min_similarity"] == 0.46
    assert saved["cross_validated"]["answerable"] == 8

    gate = load_gate(pipeline, 0.46)
    assert isinstance(gate, LearnedGate) and gate.describe() == f"learned (gate.json of the index, threshold {gate.threshold:.3f})"
    assert load_gate(pipeline, None) is None  # the gate switched off stays off
    x = GateFeatures(pipeline.store)("Who was Joey in love with?", pipeline.search("Who was Joey in love with?", k=3).candidates)
    assert x.shape == (len(FEATURES),) and 0.0 < x[0] <= 1.0 and x[5] == 0.0  # every word is in the corpus

    llm = ScriptedLLM("I don't know based on the provided scenes.")
    result = Answerer(pipeline, llm).ask("Who discovered penicillin?", k=3)
    assert result.gate["gate"] == "learned" and result.refused
    assert (result.gate["score"] < result.gate["threshold"]) == (not llm.calls)


def test_without_a_trained_gate_the_answerer_uses_the_similarity_gate(clean_pipeline):
    answerer = Answerer(clean_pipeline, ScriptedLLM("I don't know based on the provided scenes."),
                        settings=AnswerSettings(min_similarity=0.99))
    result = answerer.ask("What is the capital of France?")
    assert isinstance(answerer.gate, SimilarityGate) and result.gate["gate"] == "similarity" and result.refused
    assert result.gate["threshold"] == 0.99 and result.gate["score"] < 0.99


def test_a_gate_given_to_the_answerer_wins(clean_pipeline):
    class Never:
        name = "never"

        def judge(self, question, candidates):
            return GateDecision(False, 0.0, 1.0, "refused by the test gate")

    llm = ScriptedLLM("Joey was in love with Rachel.")
    result = Answerer(clean_pipeline, llm, gate=Never()).ask("Who was Joey in love with?")
    assert result.refused and not llm.calls and "refused by the test gate" in result.notes
    assert result.gate == {"gate": "never", "score": 0.0, "threshold": 1.0}


def test_the_similarity_threshold_fits_the_index_vectors():
    from ragfunnel.generate.gate import DEFAULT_MIN_SIMILARITY, IN_CONTEXT_MIN_SIMILARITY, similarity_threshold
    from ragfunnel.store import StoreSettings

    assert similarity_threshold(StoreSettings()) == IN_CONTEXT_MIN_SIMILARITY < DEFAULT_MIN_SIMILARITY  # the default
    assert similarity_threshold(StoreSettings(late_chunked_views=[], derived_views={})) == DEFAULT_MIN_SIMILARITY
    # lines read in context only matter when they have vectors
    assert similarity_threshold(StoreSettings(dense_views=["w3s1"], late_chunked_views=["utt"])) == DEFAULT_MIN_SIMILARITY
