"""Training the extractive reader on the small index: gold spans located in the lines, the windows a question's
groups hold, a short shared-normalisation run, the adapter the ONNX reader loads (it must compute what torch
computed), the examples and weights files, and the reader answering through `Answerer`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from ragfunnel.errors import ConfigError
from ragfunnel.generate.evidence import EvidenceSelector
from ragfunnel.generate.reader import SpanModel, TokenCounter, line_text, reader_tokenizer
from ragfunnel.questions import Question
from ragfunnel.train import reader as tr
from ragfunnel.train.cross_encoder import base_model_dir
from ragfunnel.types import Document, Unit

pytestmark = pytest.mark.integration


def scene(*lines) -> Document:
    units = tuple(Unit(f"s01_e01_c01_u{n:03d}", text, (speaker,) if speaker else (), not speaker)
                  for n, (speaker, text) in enumerate(lines))
    return Document("s01_e01_c01", "t", units)


def test_gold_spans_from_answers_detail_speakers_and_heuristic_lines():
    doc = scene((None, "[Scene: Central Perk.]"), ("Carol Willick", "Count faster!"),
                ("Ross Geller", "We want to call him Jordie ."), ("Ross Geller", "Or Jamie."))
    exact = Question("q", "Who told Ross to count faster?", ("s01_e01_c01",), ("Carol Willick",), {
        "answers_detail": [{"text": "Carol Willick", "utterance_id": "s01_e01_c01_u001", "is_speaker": True}]})
    spans = tr.gold_spans(exact, doc)
    assert list(spans) == [1] and line_text(doc, 1)[slice(*spans[1][0])] == "Carol Willick"
    tokenised = Question("q", "What name?", ("s01_e01_c01",), ("Jordie .",), {
        "answers_detail": [{"text": "Jordie .", "utterance_id": "s01_e01_c01_u002", "is_speaker": False}]})
    (c0, c1), = tr.gold_spans(tokenised, doc)[2]
    assert line_text(doc, 2)[c0:c1] == "Jordie"
    heuristic = Question("q", "Which names?", ("s01_e01_c01",), ("Jamie",), {"gold_utterance_ids": ["s01_e01_c01_u003"]})
    assert list(tr.gold_spans(heuristic, doc)) == [3]
    speaker = Question("q", "Who?", ("s01_e01_c01",), ("Ross Geller",), {})
    assert sorted(tr.gold_spans(speaker, doc)) == [2, 3]  # every line that speaker says
    nowhere = Question("q", "Who?", ("s01_e01_c01",), ("Phoebe",), {"gold_utterance_ids": ["s01_e01_c01_u002"]})
    assert tr.gold_spans(nowhere, doc) == {}


def test_a_window_record_round_trips_its_lines_and_spans():
    from ragfunnel.generate.reader import Window

    doc = scene((None, "[Scene: Central Perk.]"), ("Monica Geller & Rachel Green", "Hi!"), ("Ross Geller", "Hi."))
    record = tr.window_record(Window(doc, 0, 3, 2, 0.5, 1.5), {1: [(0, 13)]})
    text = "\n".join(record["lines"])
    assert text[slice(*record["spans"][0])] == "Monica Geller"
    back = tr.record_window(record)
    assert back.text()[0] == text and back.parent_rank == 2 and back.evidence == 1.5
    assert tr.speaker_chars(back.doc, 1) == len("Monica Geller & Rachel Green")


def test_encode_window_maps_character_spans_to_tokens():
    tok = reader_tokenizer(base_model_dir(), 64)
    text = "Ross Geller: We want to call him Jordie.\nCarol Willick: Count faster!"
    c0 = text.index("Carol Willick")
    enc = tr.encode_window(tok, "Who told Ross to count faster?", text, [[c0, c0 + len("Carol Willick")]])
    full = tok.encode("Who told Ross to count faster?", text)
    assert full.offsets[enc.starts[0]][0] == c0 and full.offsets[enc.ends[0]][1] == c0 + len("Carol Willick")
    cut = tr.encode_window(reader_tokenizer(base_model_dir(), 16), "Who told Ross to count faster?", text,
                           [[c0, c0 + 13]])
    assert cut.starts == [] and cut.ends == []  # truncated away: no target


@dataclass
class Trained:
    examples: list
    model: object
    report: dict
    folder: Path


@pytest.fixture(scope="module")
def trained(small_pipeline, small_questions, tmp_path_factory):
    selector = EvidenceSelector(small_pipeline.store)
    counter = TokenCounter(reader_tokenizer(base_model_dir(), tr.MAX_LENGTH))
    examples = tr.build_examples(small_pipeline, selector, counter, small_questions[:10], "hybrid", windows=3)
    fit, validation = examples[:7], examples[7:]
    model, report = tr.train_span_model(fit, validation=validation, epochs=2, lr=5e-4, groups_per_step=4, rank=4,
                                        threads=1)
    folder = tmp_path_factory.mktemp("reader") / "reader"
    tr.export_reader(model, folder, {"training": report})
    return Trained(examples, model, report, folder)


def test_examples_hold_the_gold_scene_and_the_retrieved_windows(trained, small_questions):
    e = trained.examples[0]
    gold = e.groups["gold"]
    assert {r["doc"] for r in gold} >= {e.scene}
    covered = {i for r in gold if r["doc"] == e.scene for i in range(r["start"], r["end"])}
    assert covered == set(range(max(r["end"] for r in gold if r["doc"] == e.scene)))
    assert any(r["spans"] for r in gold)
    for r in e.groups["retrieved"]:
        assert r["spans"] == [] or r["doc"] == e.scene
        text = "\n".join(r["lines"])
        for c0, c1 in r["spans"]:
            assert text[c0:c1].strip()
    assert 1 <= len(e.groups["retrieved"]) <= 3


def test_training_reports_epochs_and_keeps_the_best(trained):
    r = trained.report
    assert len(r["losses"]) == 2 and len(r["validation"]) == 2 and r["best_epoch"] in (1, 2)
    assert r["lora_rank"] == 4 and all(np.isfinite(r["losses"]))


def test_the_onnx_reader_computes_what_torch_computed(trained):
    """The adapter merged into the bundled ONNX weights (names mapped, MatMul weights transposed) gives the torch
    model's logits: the test that the shipped reader is the trained one."""
    import torch

    span = SpanModel(trained.folder)
    texts = ["Monica Geller: There's nothing to tell! He's just some guy I work with!",
             "Joey Tribbiani: C'mon, you're going out with the guy!"]
    question = "Who does Monica work with?"
    encs, start, end = span.logits(question, texts)
    _, start_t, end_t = tr.torch_logits(trained.model, span.tokenizer, question, texts, "cpu")
    finite = np.isfinite(start)
    assert np.array_equal(finite, np.isfinite(start_t))
    assert np.allclose(start[finite], start_t[finite], atol=2e-2) and np.allclose(end[finite], end_t[finite], atol=2e-2)
    meta = json.loads((trained.folder / "meta.json").read_text())
    assert meta["lora_rank"] == 4 and len(meta["adapter_sha256"]) == 64
    assert (trained.folder / "adapter.npz").stat().st_size < 3_000_000


def test_weights_round_trip_and_files_that_are_not_ours(trained, tmp_path):
    path = tmp_path / "w.pt"
    tr.save_weights(trained.model, path)
    back, _ = tr.base_reader("cpu", path)
    a, b = trained.model.state_dict(), back.state_dict()
    assert a.keys() == b.keys()
    assert all(np.allclose(a[k].float().numpy(), b[k].float().numpy(), atol=2e-3) for k in a)
    (tmp_path / "bad.pt").write_bytes(b"not torch")
    with pytest.raises(ConfigError, match="not a reader weights file"):
        tr.load_weights(tmp_path / "bad.pt")
    with pytest.raises(ConfigError, match="no such weights file"):
        tr.load_weights(tmp_path / "missing.pt")


def test_examples_file_round_trip_and_errors(trained, tmp_path):
    path = tmp_path / "ex.json.gz"
    tr.save_examples(trained.examples, path, {"questions": 10})
    back, about = tr.load_examples(path)
    assert [e.to_dict() for e in back] == [e.to_dict() for e in trained.examples] and about == {"questions": 10}
    (tmp_path / "x.gz").write_bytes(b"plain")
    with pytest.raises(ConfigError, match="not a reader examples file"):
        tr.load_examples(tmp_path / "x.gz")


def test_the_answerer_answers_with_a_span_of_a_cited_line(trained, small_pipeline):
    from ragfunnel.generate.answer import Answerer, AnswerSettings
    from ragfunnel.generate.reader import ExtractiveReader

    reader = ExtractiveReader(EvidenceSelector(small_pipeline.store), trained.folder)
    answerer = Answerer(small_pipeline, None, extractive=reader,
                        settings=AnswerSettings(reader="extractive", min_similarity=None))
    result = answerer.ask("Who was at Central Perk?", "hybrid", 5)
    assert result.reader == "extractive" and result.candidates
    if not result.refused:
        c = result.citations[0]
        assert c.quote[c.span[0]:c.span[1]] == result.answer  # copied from the cited line
        assert result.candidates[0].text == result.answer
    assert "reader" in result.timings and any(s.name == "read" for s in result.trace.stages)
    data = result.to_dict()
    assert data["candidates"][0]["citation"]["span"] is not None


def test_the_llm_phrases_the_readers_answer_after_it(trained, small_pipeline):
    from ragfunnel.generate.answer import Answerer, AnswerSettings
    from ragfunnel.generate.llm import FakeLLM
    from ragfunnel.generate.reader import ExtractiveReader

    reader = ExtractiveReader(EvidenceSelector(small_pipeline.store), trained.folder)
    answerer = Answerer(small_pipeline, FakeLLM(), extractive=reader,
                        settings=AnswerSettings(llm_input="candidates", min_similarity=None))
    events = list(answerer.ask_stream("Who was at Central Perk?", "hybrid", 5))
    kinds = [e["type"] for e in events]
    assert kinds[0] == "extractive" and kinds[-1] == "done"
    early, final = events[0]["result"], events[-1]["result"]
    if early["refused"]:
        assert final["refused"] and "token" not in kinds  # nothing to phrase
        return
    assert "token" in kinds and final["drafts"]
    assert final["short_answer"] in [c["text"] for c in early["candidates"][:3]]
    assert final["answer"].startswith(final["short_answer"]) or final["reader"] == "extractive"
    cited = final["citations"][0]
    assert cited["quote"][cited["span"][0]:cited["span"][1]] == final["short_answer"]
    assert "llm_first_token" in final["timings"]
