"""Our ONNX cross-encoder as a reranker: a clear error without a trained model; with a tiny model exported by
train/cross_encoder.py, one score per passage and the order of those scores."""

from __future__ import annotations

import os

import numpy as np
import pytest

from ragfunnel.errors import ConfigError
from ragfunnel.rerank.base import Passage
from ragfunnel.rerank.cross_encoder import OnnxCrossEncoder
from tests.helpers import cands

QUESTION = "Who did Rachel dump at the altar?"
TEXTS = [
    "Ross Geller: I got a new dinosaur for the museum.",
    "Rachel Green: I left Barry at the altar, I couldn't marry him.\nMonica Geller: You dumped him at the altar?",
    "Joey Tribbiani: How you doin'?",
    "Chandler Bing: Could this BE any more of a wedding?",
]


def test_missing_model_is_a_config_error_naming_the_train_command(tmp_path, passages):
    missing = tmp_path / "models" / "reranker" / "cross_encoder"
    ce = OnnxCrossEncoder(missing)  # cheap, never fails
    for call in (ce.warm_up, lambda: ce.scores("who?", ["a"]), lambda: ce.rerank("who?", passages)):
        with pytest.raises(ConfigError, match="ragfunnel train reranker") as err:
            call()
        assert str(missing) in str(err.value)


def test_threads_default():
    assert OnnxCrossEncoder("x").threads == min(os.cpu_count() or 1, 4)
    assert OnnxCrossEncoder("x", threads=1).threads == 1


@pytest.fixture(scope="module")
def ce(tiny_cross_encoder):
    model = OnnxCrossEncoder(tiny_cross_encoder.path, threads=1)
    model.warm_up()
    return model


@pytest.mark.integration
def test_one_score_per_passage(ce):
    scores = ce.scores(QUESTION, TEXTS)
    assert scores.shape == (4,) and scores.dtype == np.float32 and np.isfinite(scores).all()
    assert len(set(scores.tolist())) == 4
    assert ce.scores(QUESTION, []).shape == (0,)


@pytest.mark.integration
def test_scores_do_not_depend_on_the_batch(ce):
    """Padding to the longest pair of the batch must not change a pair's score."""
    together = ce.scores(QUESTION, TEXTS)
    alone = [ce.scores(QUESTION, [t])[0] for t in TEXTS]
    assert together == pytest.approx(alone, abs=1e-4)
    assert ce.scores(QUESTION, TEXTS[::-1]) == pytest.approx(together[::-1], abs=1e-4)


@pytest.mark.integration
def test_rerank_orders_by_score(ce):
    passages = [Passage(c, t) for c, t in zip(cands(["a", "b", "c", "d"], name="bm25"), TEXTS)]
    scores = ce.scores(QUESTION, TEXTS)
    result = ce.rerank(QUESTION, passages)
    assert not result.degraded and result.notes == []
    expected = [passages[i].candidate.doc_id for i in np.argsort(-scores, kind="stable")]
    assert [c.doc_id for c in result.candidates] == expected
    assert [c.rank for c in result.candidates] == [1, 2, 3, 4]
    assert [c.score for c in result.candidates] == pytest.approx(sorted(scores.tolist(), reverse=True))
    first = result.candidates[0]
    original = next(p.candidate for p in passages if p.candidate.doc_id == first.doc_id)
    assert first.sources["fused"] == (original.rank, original.score)
    assert ce.rerank(QUESTION, []).candidates == []


@pytest.mark.integration
def test_max_length_comes_from_meta_unless_given(ce, tiny_cross_encoder):
    assert ce._tok.truncation["max_length"] == 64 == tiny_cross_encoder.meta["max_length"]
    short = OnnxCrossEncoder(tiny_cross_encoder.path, max_length=16, threads=1)
    short.warm_up()
    assert short._tok.truncation["max_length"] == 16
    # a long passage is cut: at 16 tokens the end of the passage no longer counts
    long_a, long_b = "Rachel Green: hello " * 10 + "Barry", "Rachel Green: hello " * 10 + "dinosaur"
    a, b = short.scores(QUESTION, [long_a, long_b])
    assert a == pytest.approx(b, abs=1e-6)
    a, b = ce.scores(QUESTION, ["Barry", "dinosaur"])
    assert a != pytest.approx(b, abs=1e-6)


@pytest.mark.integration
def test_without_meta_the_default_max_length(tiny_cross_encoder, tmp_path):
    for name in ("model.onnx", "tokenizer.json"):
        os.symlink(tiny_cross_encoder.path / name, tmp_path / name)
    bare = OnnxCrossEncoder(tmp_path, threads=1)
    bare.warm_up()
    assert bare._tok.truncation["max_length"] == 192
    assert bare.scores(QUESTION, TEXTS[:2]).shape == (2,)
