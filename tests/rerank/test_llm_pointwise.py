"""Pointwise LLM reranking: ranking with an injected score function, the llama.cpp glue with a fake Llama,
and the degraded paths (llama-cpp-python absent, model file missing, scorer failing)."""

from __future__ import annotations

import math
import sys
import types

import numpy as np
import pytest

from ragfunnel.rerank.llm_pointwise import PointwiseLLMReranker, llama_score_fn


def ids(result):
    return [c.doc_id for c in result.candidates]


def test_ranks_by_the_score_function(passages):
    calls = []

    def score(question, text):
        calls.append((question, text))
        return {"text a": -1.0, "text b": 2.5, "text c": 0.5, "text d": 2.5}[text]

    result = PointwiseLLMReranker("unused.gguf", score_fn=score).rerank("q?", passages)
    assert ids(result) == ["b", "d", "c", "a"]  # b and d tie: the fused order decides
    assert [c.score for c in result.candidates] == [2.5, 2.5, 0.5, -1.0]
    assert [c.rank for c in result.candidates] == [1, 2, 3, 4]
    assert result.candidates[0].sources["fused"] == (2, 3.0)
    assert calls == [("q?", "text a"), ("q?", "text b"), ("q?", "text c"), ("q?", "text d")]
    assert not result.degraded and result.notes == []


@pytest.mark.parametrize("bad", [RuntimeError("context full"), math.nan])
def test_failing_scorer_degrades(passages, bad):
    def score(question, text):
        if isinstance(bad, Exception):
            raise bad
        return bad

    result = PointwiseLLMReranker("m.gguf", score_fn=score).rerank("q", passages)
    assert result.degraded and result.candidates == [p.candidate for p in passages]
    assert result.notes[0].startswith("llm_pointwise failed (") and result.notes[0].endswith("kept the fused order")


def test_without_llama_cpp_keeps_order(passages, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # import fails as if not installed
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    rr = PointwiseLLMReranker(model)
    result = rr.rerank("q", passages)
    assert result.degraded and result.candidates == [p.candidate for p in passages]
    assert result.notes == ["llm_pointwise needs llama-cpp-python: pip install 'ragfunnel[llm]'; kept the fused order"]
    assert rr.warm_up() == "llm_pointwise needs llama-cpp-python: pip install 'ragfunnel[llm]'"


class FakeLlama:
    """Word-level tokens; the logits after the prompt favour " yes" when the passage contains "monkey"."""

    instances: list = []

    def __init__(self, model_path=None, n_ctx=0, logits_all=False, verbose=True):
        self.kwargs = {"model_path": model_path, "n_ctx": n_ctx, "logits_all": logits_all, "verbose": verbose}
        self.vocab = {"<bos>": 0, " yes": 1, " Yes": 2, " no": 3, " No": 4}
        self.evaluated: list[list[int]] = []
        self.scores = np.zeros((0, 0))
        self.n_tokens = 0
        FakeLlama.instances.append(self)

    def tokenize(self, text: bytes, add_bos: bool = True) -> list[int]:
        if text.decode() in (" yes", " Yes", " no", " No"):
            return [self.vocab[text.decode()]]
        words = text.decode().split()
        return ([0] if add_bos else []) + [self.vocab.setdefault(w, len(self.vocab)) for w in words]

    def reset(self):
        self.n_tokens = 0

    def eval(self, tokens):
        self.evaluated.append(list(tokens))
        self.n_tokens = len(tokens)
        self.scores = np.zeros((len(tokens), 64), dtype=np.float32)
        relevant = self.vocab.get("monkey") in tokens
        self.scores[-1, [1, 2, 3, 4]] = [3.0, 1.0, 0.0, 0.0] if relevant else [0.0, 0.0, 2.0, 0.0]


def test_llama_score_fn_reads_yes_and_no_logits():
    llm = FakeLlama()
    score = llama_score_fn(llm, n_ctx=512)
    assert score("Whose pet?", "Ross lost his monkey") > 0 > score("Whose pet?", "Ross lost his sandwich")
    assert score("q", "the monkey") == pytest.approx(math.log(math.exp(3) + math.exp(1)) - math.log(2))
    assert score("q", "pizza") == pytest.approx(math.log(2) - math.log(math.exp(2) + 1))
    assert llm.evaluated[-1][0] == 0  # the prompt starts with BOS


def test_llama_score_fn_cuts_the_passage_to_fit_n_ctx():
    llm = FakeLlama()
    llama_score_fn(llm, n_ctx=10_000)("q", "")
    fixed = len(llm.evaluated[-1])  # the prompt without a passage
    score = llama_score_fn(llm, n_ctx=fixed + 3)
    score("q", "one two three four five monkey")
    assert len(llm.evaluated[-1]) == fixed + 3  # "monkey" was cut off...
    assert score("q", "one two three four five monkey") < 0  # ...so it is judged irrelevant
    with pytest.raises(ValueError, match="n_ctx"):
        llama_score_fn(llm, n_ctx=fixed - 1)("q", "x")


def test_loads_llama_lazily_with_logits_all(passages, monkeypatch, tmp_path):
    FakeLlama.instances.clear()
    monkeypatch.setitem(sys.modules, "llama_cpp", types.SimpleNamespace(Llama=FakeLlama))
    model = tmp_path / "judge.gguf"
    model.write_bytes(b"GGUF")
    texts = ["pizza night", "the monkey Marcel", "a dinosaur", "monkey business"]
    rr = PointwiseLLMReranker(model, n_ctx=256)
    assert FakeLlama.instances == []  # nothing loaded at construction
    result = rr.rerank("Who had a monkey?", [p.__class__(p.candidate, t) for p, t in zip(passages, texts)])
    assert ids(result) == ["b", "d", "a", "c"] and not result.degraded
    (llm,) = FakeLlama.instances
    assert llm.kwargs == {"model_path": str(model), "n_ctx": 256, "logits_all": True, "verbose": False}
    rr.rerank("again", passages)
    assert len(FakeLlama.instances) == 1  # loaded once


def test_missing_model_file_keeps_order(passages, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "llama_cpp", types.SimpleNamespace(Llama=FakeLlama))
    result = PointwiseLLMReranker(tmp_path / "nope.gguf").rerank("q", passages)
    assert result.degraded and result.candidates == [p.candidate for p in passages]
    assert "model file not found" in result.notes[0] and "nope.gguf" in result.notes[0]


def test_unloadable_model_keeps_order(passages, monkeypatch, tmp_path):
    def broken(**kwargs):
        raise ValueError("failed to load model")

    monkeypatch.setitem(sys.modules, "llama_cpp", types.SimpleNamespace(Llama=broken))
    model = tmp_path / "bad.gguf"
    model.write_bytes(b"junk")
    result = PointwiseLLMReranker(model).rerank("q", passages)
    assert result.degraded
    assert result.notes == ["llm_pointwise: cannot load bad.gguf (ValueError: failed to load model); kept the fused order"]
