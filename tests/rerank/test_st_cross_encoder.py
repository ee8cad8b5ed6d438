"""The sentence-transformers cross-encoder with a fake CrossEncoder class: ranking, lazy loading, clear errors."""

from __future__ import annotations

import sys
import types

import pytest

from ragfunnel.errors import ConfigError
from ragfunnel.rerank.st_cross_encoder import SentenceTransformersCrossEncoder, looks_like_path


class FakeCrossEncoder:
    instances: list = []
    scores = {"text a": 0.1, "text b": -2.0, "text c": 7.5, "text d": 0.1}

    def __init__(self, model_name_or_path, max_length=None, device=None):
        if model_name_or_path.startswith("offline/"):
            raise OSError("We couldn't connect to 'https://huggingface.co'")
        self.args = (model_name_or_path, max_length, device)
        self.calls = []
        FakeCrossEncoder.instances.append(self)

    def predict(self, pairs, batch_size=32, show_progress_bar=None):
        self.calls.append((list(pairs), batch_size, show_progress_bar))
        return [self.scores[text] for _, text in pairs]


@pytest.fixture
def fake_st(monkeypatch):
    FakeCrossEncoder.instances.clear()
    monkeypatch.setitem(sys.modules, "sentence_transformers", types.SimpleNamespace(CrossEncoder=FakeCrossEncoder))
    return FakeCrossEncoder


def ids(result):
    return [c.doc_id for c in result.candidates]


def test_ranks_by_cross_encoder_scores(fake_st, passages, tmp_path):
    rr = SentenceTransformersCrossEncoder(str(tmp_path), max_length=128, batch_size=8, name="ce")
    assert fake_st.instances == []  # cheap construction
    result = rr.rerank("who?", passages)
    assert ids(result) == ["c", "a", "d", "b"]  # a and d tie at 0.1: the fused order decides
    assert [c.score for c in result.candidates] == [7.5, 0.1, 0.1, -2.0]
    assert [c.rank for c in result.candidates] == [1, 2, 3, 4]
    assert result.candidates[0].sources["fused"] == (3, 2.0)
    assert not result.degraded and result.notes == []
    (model,) = fake_st.instances
    assert model.args == (str(tmp_path), 128, None)
    assert model.calls == [([("who?", "text a"), ("who?", "text b"), ("who?", "text c"), ("who?", "text d")], 8, False)]
    rr.rerank("again", passages)
    assert len(fake_st.instances) == 1  # loaded once


def test_hub_id_is_passed_through(fake_st):
    SentenceTransformersCrossEncoder("cross-encoder/some-model").warm_up()
    assert fake_st.instances[0].args[0] == "cross-encoder/some-model"


def test_missing_package_is_a_config_error(monkeypatch, passages):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    rr = SentenceTransformersCrossEncoder("/models/ce")
    with pytest.raises(ConfigError, match="pip install sentence-transformers"):
        rr.warm_up()
    result = rr.rerank("q", passages)  # a request never raises
    assert result.degraded and result.candidates == [p.candidate for p in passages]
    assert "pip install sentence-transformers" in result.notes[0] and result.notes[0].endswith("kept the fused order")


def test_missing_directory_is_a_config_error(fake_st, tmp_path):
    with pytest.raises(ConfigError, match="cross-encoder directory not found: .*nowhere"):
        SentenceTransformersCrossEncoder(str(tmp_path / "nowhere")).warm_up()
    assert fake_st.instances == []


def test_unreachable_hub_is_a_config_error(fake_st, passages):
    rr = SentenceTransformersCrossEncoder("offline/ce-model")
    with pytest.raises(ConfigError, match="hub id 'offline/ce-model' .*no network"):
        rr.warm_up()
    with pytest.raises(ConfigError):
        rr.warm_up()  # the failure is remembered
    assert rr.rerank("q", passages).degraded


@pytest.mark.parametrize("bad", [[1.0, 2.0], [1.0, float("nan"), 0.0, 0.0]])
def test_bad_scores_degrade(fake_st, passages, tmp_path, monkeypatch, bad):
    monkeypatch.setattr(FakeCrossEncoder, "predict", lambda self, pairs, **kw: bad)
    result = SentenceTransformersCrossEncoder(str(tmp_path)).rerank("q", passages)
    assert result.degraded and result.candidates == [p.candidate for p in passages]
    assert result.notes[0].startswith("st_cross_encoder failed (ValueError")


@pytest.mark.parametrize(
    "model, is_path",
    [("/abs/dir", True), ("./rel", True), ("~/models/ce", True), ("a/b/c", True), ("org/name", False), ("name", False)],
)
def test_looks_like_path(model, is_path):
    assert looks_like_path(model) is is_path
