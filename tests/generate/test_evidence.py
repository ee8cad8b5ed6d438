"""The evidence selector and the evidence reader on the tiny index: lines ranked over the retrieved scenes, the
selected lines as an answer with citations and context (no LLM), a trained LambdaMART scorer, and the evaluation."""

from __future__ import annotations

import json

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from ragfunnel.generate.answer import Answerer, AnswerSettings
from ragfunnel.generate.evidence import (
    FEATURES, EvidenceSelector, LambdaMARTScorer, UnsupervisedScorer, question_type, trained_scorer,
)
from ragfunnel.questions import Question, answer_unit_ids
from tests.generate.conftest import ScriptedLLM

runner = CliRunner()


def test_question_types():
    assert [question_type(q) for q in ("Who is Joey?", "How many kids does Ross have?", "How did it end?",
                                       "Why?", "And then Monica went where?")] == ["who", "how_many", "how", "why", "other"]


def test_the_line_that_answers_ranks_first_with_its_neighbours_as_context(clean_pipeline):
    selector = EvidenceSelector(clean_pipeline.store)
    question = "Where did Chandler spend Thanksgiving?"
    candidates = clean_pipeline.search(question, "hybrid", k=5).candidates
    q = selector.context(question)
    pool = selector.pool(q, candidates)
    assert pool.x.shape == (sum(len(d.units) for d in pool.docs), len(FEATURES)) and len(pool.docs) == 5
    found = selector.select(question, candidates)
    assert found.scorer == "unsupervised" and found.parents == 5 and len(found.lines) == 3
    best = found.lines[0]
    assert best.unit.unit_id == "s04_e08_c04_u003" and best.context == (1, 2)
    assert [ln.score for ln in found.lines] == sorted((ln.score for ln in found.lines), reverse=True)
    assert len({(ln.doc.doc_id, ln.index) for ln in found.lines}) == 3


def test_the_evidence_reader_answers_with_cited_lines_and_no_llm(clean_pipeline):
    answerer = Answerer(clean_pipeline, None, settings=AnswerSettings(reader="evidence"))
    events = list(answerer.ask_stream("What opens at the museum on Monday?", "hybrid", 5))
    assert [e["type"] for e in events] == ["evidence", "done"] and events[0]["result"] == events[1]["result"]
    result = events[1]["result"]
    assert result["reader"] == "evidence" and not result["refused"] and result["llm"] == "none"
    first = result["answer"].splitlines()[0]
    assert first == "Ross Geller: The dinosaur exhibit at the museum opens on Monday. [1]"
    cited = result["citations"][0]
    assert cited["label"] == "S02E01, Scene 2" and cited["unit_ids"] == ["s02_e01_c02_u001"]
    assert cited["context"] == ["Rachel Green: Nobody cares about the fossils, Ross."]
    assert [c["source_id"] for c in result["citations"]] == [1, 2, 3] and "evidence" in result["timings"]
    assert any(s["name"] == "evidence" for s in result["trace"]["stages"])
    off = answerer.ask("What is the boiling point of tungsten in kelvin?", "hybrid", 5)
    assert off.refused and off.citations == [] and off.gate is not None


def test_the_llm_reader_can_send_the_evidence_before_any_token(clean_pipeline):
    from ragfunnel.generate.llm import FakeLLM

    answerer = Answerer(clean_pipeline, FakeLLM(), settings=AnswerSettings(evidence_first=True))
    kinds = [e["type"] for e in answerer.ask_stream("Who was Joey in love with?", "hybrid", 5)]
    assert kinds[0] == "evidence" and kinds[1] == "token" and kinds[-1] == "done"
    with pytest.raises(Exception, match="needs an LLM"):
        Answerer(clean_pipeline, None)
    with pytest.raises(Exception, match="unknown reader"):
        Answerer(clean_pipeline, ScriptedLLM("x"), settings=AnswerSettings(reader="oracle"))


def test_a_trained_lambdamart_scorer_is_saved_loaded_and_used(clean_pipeline, tmp_path):
    pytest.importorskip("lightgbm")
    from ragfunnel.train.evidence import fit_evidence, question_pools

    gold = {"Where did Chandler spend Thanksgiving?": ("s04_e08_c04", "s04_e08_c04_u003"),
            "What opens at the museum on Monday?": ("s02_e01_c02", "s02_e01_c02_u001"),
            "What did Phoebe write on her guitar?": ("s03_e01_c03", "s03_e01_c03_u002"),
            "Who did Rachel leave at the altar?": ("s01_e04_c01", "s01_e04_c01_u001"),
            "Where did Rachel run in a wedding dress?": ("s01_e04_c01", "s01_e04_c01_u002")}
    questions = [Question(f"q{i}", text, (scene,), (), {"gold_utterance_ids": [unit]})
                 for i, (text, (scene, unit)) in enumerate(gold.items())]
    assert answer_unit_ids(questions[0]) == {"s04_e08_c04_u003"}
    selector = EvidenceSelector(clean_pipeline.store)
    pools = question_pools(clean_pipeline, selector, questions, "hybrid", parents=5)
    assert [int(p.labels.sum()) for p in pools] == [1] * 5
    meta = fit_evidence(pools, tmp_path / "evidence", max_rounds=30)
    assert meta["features"] == list(FEATURES) and (tmp_path / "evidence" / "model.txt").is_file()
    scorer = trained_scorer(tmp_path / "evidence")
    assert isinstance(scorer, LambdaMARTScorer) and scorer.scores(pools[0].x).shape == (len(pools[0].labels),)
    assert isinstance(trained_scorer(tmp_path / "nothing"), UnsupervisedScorer)
    (tmp_path / "evidence" / "meta.json").write_text(json.dumps({"features": ["other"]}))
    assert isinstance(trained_scorer(tmp_path / "evidence"), UnsupervisedScorer)  # other features: not used


def test_eval_answers_with_the_evidence_reader(tiny, tmp_path):
    from ragfunnel.generate.cli import register

    app = typer.Typer()
    eval_app = typer.Typer()
    app.add_typer(eval_app, name="eval")
    register(app, eval_app)
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({
        "question_id": "q1", "question": "Where did Chandler spend Thanksgiving?", "answers": ["in a box"],
        "answers_detail": [{"text": "in a box", "utterance_id": "s04_e08_c04_u003"}], "gold_scene_ids": ["s04_e08_c04"],
    }) + "\n")
    res = runner.invoke(app, ["eval", "answers", "--reader", "evidence", "--questions", str(questions), "--oos", "2",
                              "--json", "--index", str(tiny.clean), "--data", str(tiny.data), "--mode", "hybrid"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout.splitlines()[0])
    for key in ("evidence_recall@1", "evidence_recall@3", "gold_span_rate", "token_f1", "citation_precision",
                "false_refusal_rate", "out_of_scope_refusal_rate", "ttft_p50_ms", "total_p50_ms", "n"):
        assert key in summary
    assert summary["n"] == 1 and summary["n_out_of_scope"] == 2
    assert summary["evidence_recall@1"] == 1.0 and summary["gold_span_rate"] == 1.0 and summary["citation_precision"] > 0
    asked = runner.invoke(app, ["ask", "Where did Chandler spend Thanksgiving?", "--reader", "evidence", "--index", str(tiny.clean)])
    assert asked.exit_code == 0, asked.output
    assert asked.stdout.startswith("Chandler Bing: I spent Thanksgiving in a box. [1]\n") and "Cited lines:" in asked.stdout


def test_unsupervised_weights_name_real_features():
    assert set(UnsupervisedScorer.WEIGHTS) <= set(FEATURES)
    x = np.zeros((2, len(FEATURES)), np.float32)
    x[1, FEATURES.index("dense_utt")] = 1.0
    assert list(UnsupervisedScorer().scores(x)) == [0.0, 1.0]


def test_the_llm_can_read_only_the_selected_lines(clean_pipeline):
    from ragfunnel.generate.prompt import EvidenceInput, build_evidence_prompt, parse_user_message

    line = "Chandler Bing: I spent Thanksgiving in a box."
    llm = ScriptedLLM(f'Answer: In a box.\nCITATION: "{line}" [1]')
    answerer = Answerer(clean_pipeline, llm, settings=AnswerSettings(llm_input="evidence", retry=False))
    result = answerer.ask("Where did Chandler spend Thanksgiving?", "hybrid", 5)
    question, shown = parse_user_message(llm.calls[0][1])
    assert question == "Where did Chandler spend Thanksgiving?"
    assert sum(len(v) for v in shown.values()) <= 9 and line in shown[1]  # 3 lines with one line either side, not scenes
    assert not result.refused and result.reader == "llm" and result.citations[0].unit_ids == ("s04_e08_c04_u003",)
    stage = next(s for s in result.trace.stages if s.name == "prompt")
    assert stage.detail["input"] == "evidence" and "evidence" in result.timings
    # lines of one scene that touch are one source; the order is that of the best line
    doc = clean_pipeline.store.document("s04_e08_c04")
    prompt = build_evidence_prompt("q?", [EvidenceInput(doc, 2, 1, 1.0), EvidenceInput(doc, 3, 1, 0.5)])
    assert len(prompt.sources) == 1 and prompt.sources[0].lines == tuple(range(1, min(5, len(doc.units))))
    with pytest.raises(Exception, match="unknown LLM input"):
        Answerer(clean_pipeline, llm, settings=AnswerSettings(llm_input="whole books"))
