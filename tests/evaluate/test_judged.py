"""Evaluation on any collection: `eval questions FILE`, `eval beir --data DIR`, and `train reranker --questions`
for a collection that is not Friends. Small real indexes (a folder of Markdown notes, a tiny BEIR folder)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragfunnel.cli import app
from ragfunnel.corpus.beir import BeirCorpus, sentences
from ragfunnel.errors import CorpusError
from ragfunnel.evaluate.judged import JudgedRun, judged_metrics
from ragfunnel.questions import Question, load_questions

runner = CliRunner()

TOPICS = {
    "espresso": "Descale the espresso machine every month. Use filtered water for the boiler.",
    "grinder": "Grind the coffee beans just before brewing. Clean the burrs of the grinder weekly.",
    "oven": "Preheat the oven to 200 degrees for bread. Bake the loaf for forty minutes.",
    "kettle": "Boil the kettle for green tea at 80 degrees. Let black tea steep for four minutes.",
    "bicycle": "Pump the bicycle tyres to four bar. Oil the chain after riding in the rain.",
    "garden": "Water the tomato plants in the morning. Prune the roses in late winter.",
    "printer": "Replace the printer toner when pages fade. Clear paper jams from the back tray.",
    "aquarium": "Change a quarter of the aquarium water each week. Feed the fish once a day.",
    "piano": "Tune the piano twice a year. Keep the piano away from radiators and windows.",
    "camera": "Clean the camera sensor with a blower. Charge the camera battery before a trip.",
    "bread": "Knead the bread dough for ten minutes. Let the dough rise until it doubles.",
    "sailing": "Check the sails for tears before sailing. Coil the ropes neatly on deck.",
}
QUESTIONS = {
    "espresso": "how often should I descale the espresso machine",
    "grinder": "when to grind coffee beans",
    "oven": "what temperature to preheat the oven for bread",
    "kettle": "what temperature for green tea",
    "bicycle": "how much air in bicycle tyres",
    "garden": "when to prune roses",
    "printer": "pages fade on the printer",
    "aquarium": "how much aquarium water to change",
    "piano": "how often to tune a piano",
    "camera": "how to clean a camera sensor",
    "bread": "how long to knead bread dough",
    "sailing": "check sails before sailing",
}


@pytest.fixture
def notes(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGFUNNEL_HOME", str(tmp_path / "home"))
    folder = tmp_path / "notes"
    (folder / "home").mkdir(parents=True)
    for name, text in TOPICS.items():
        sub = "home/" if name in ("garden", "printer", "aquarium") else ""
        (folder / f"{sub}{name}.md").write_text(f"# {name.title()}\n\n{text}\n", encoding="utf-8")
    result = runner.invoke(app, ["index", str(folder), "--collection", "notes", "--json", "-q"])
    assert result.exit_code == 0, result.output
    qfile = tmp_path / "questions.jsonl"
    with qfile.open("w", encoding="utf-8") as fh:
        for name, q in QUESTIONS.items():
            doc = f"home/{name}.md" if name in ("garden", "printer", "aquarium") else f"{name}.md"
            fh.write(json.dumps({"id": name, "question": q, "relevant": {doc: 2, "bread.md" if name != "bread" else "oven.md": 0}}) + "\n")
    return tmp_path, qfile


def test_eval_questions_reports_the_promised_keys(notes):
    _, qfile = notes
    result = runner.invoke(app, ["eval", "questions", str(qfile), "--collection", "notes", "--mode", "bm25", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    for key in ("ndcg@10", "recall@10", "recall@100", "mrr@10", "n"):
        assert key in report
    assert report["n"] == len(QUESTIONS) and report["relevant_not_in_index"] == 0
    assert report["recall@10"] == 1.0  # 12 documents: every relevant one is in the top 10
    assert report["ndcg@10"] > 0.8  # the questions share words with their note only
    hybrid = json.loads(runner.invoke(app, ["eval", "questions", str(qfile), "-c", "notes", "--json", "--k", "3"]).stdout)
    assert {"ndcg@3", "recall@3", "mrr@3"} <= set(hybrid) and hybrid["mode"] == "hybrid"


def test_eval_questions_with_ids_of_another_collection_is_a_one_line_error(notes):
    tmp_path, _ = notes
    wrong = tmp_path / "wrong.jsonl"
    wrong.write_text(json.dumps({"id": 1, "question": "descale", "relevant": {"/abs/espresso.md": 1}}) + "\n")
    result = runner.invoke(app, ["eval", "questions", str(wrong), "-c", "notes", "--json"])
    assert result.exit_code != 0
    assert "none of the 1 relevant documents" in str(result.exception) and "relative to the PATH" in str(result.exception)


def test_train_reranker_on_a_collections_questions_then_accurate(notes):
    tmp_path, qfile = notes
    pytest.importorskip("lightgbm")
    result = runner.invoke(app, ["train", "reranker", "-c", "notes", "--questions", str(qfile), "--candidates", "5"])
    assert result.exit_code == 0, result.output
    model = tmp_path / "home" / "collections" / "notes" / "models" / "reranker"
    report = json.loads((model / "training_report.json").read_text())
    assert report["collection"] == "notes" and report["train_questions"] == 9 and report["holdout_questions"] == 3
    assert not (tmp_path / "home" / "models" / "reranker").exists()  # Friends' reranker is untouched
    out = runner.invoke(app, ["eval", "questions", str(qfile), "-c", "notes", "--mode", "accurate", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["n"] == len(QUESTIONS)


def test_train_reranker_needs_questions_outside_friends(notes):
    result = runner.invoke(app, ["train", "reranker", "-c", "notes"])
    assert result.exit_code != 0 and "--questions" in str(result.exception)


def write_beir(folder: Path) -> None:
    (folder / "qrels").mkdir(parents=True)
    with (folder / "corpus.jsonl").open("w", encoding="utf-8") as fh:
        for name, text in TOPICS.items():
            fh.write(json.dumps({"_id": f"d-{name}", "title": name.title(), "text": text}) + "\n")
    with (folder / "queries.jsonl").open("w", encoding="utf-8") as fh:
        for name, q in QUESTIONS.items():
            fh.write(json.dumps({"_id": f"q-{name}", "text": q}) + "\n")
    rows = ["query-id\tcorpus-id\tscore"] + [f"q-{n}\td-{n}\t1" for n in list(QUESTIONS)[:8]]
    (folder / "qrels" / "test.tsv").write_text("\n".join(rows) + "\n")


def test_eval_beir_indexes_the_folder_once_and_scores_its_split(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGFUNNEL_HOME", str(tmp_path / "home"))
    folder = tmp_path / "tiny"
    write_beir(folder)
    first = runner.invoke(app, ["eval", "beir", "--data", str(folder), "--mode", "bm25", "--json"])
    assert first.exit_code == 0, first.output
    report = json.loads(first.stdout)
    assert report["collection"] == "beir-tiny" and report["n"] == 8 and report["split"] == "test"
    assert " - done" in first.stderr  # the first index reports its progress on stderr, --json or not
    assert report["ndcg@10"] > 0.8
    own = (tmp_path / "home" / "collections" / "beir-tiny" / "collection.toml").read_text()
    assert 'corpus = "beir"' in own and "[modes.hybrid]" in own
    again = runner.invoke(app, ["eval", "beir", "--data", str(folder), "--json"])  # hybrid; no second build
    assert again.exit_code == 0, again.output
    assert "indexed" not in again.stderr and json.loads(again.stdout)["mode"] == "hybrid"
    missing = runner.invoke(app, ["eval", "beir", "--data", str(folder), "--split", "dev"])
    assert missing.exit_code != 0 and "dev.tsv: not found" in str(missing.exception)
    synced = runner.invoke(app, ["index", "--collection", "beir-tiny", "--json", "-q"])  # the one index path
    assert synced.exit_code == 0, synced.output
    assert json.loads(synced.stdout)["action"] == "none"  # its folder again, unchanged
    rebuilt = runner.invoke(app, ["index", "--collection", "beir-tiny", "--rebuild", "--json", "-q"])
    assert rebuilt.exit_code == 0, rebuilt.output
    assert {k: json.loads(rebuilt.stdout)[k] for k in ("action", "rebuild_reason")} == {
        "action": "built", "rebuild_reason": "--rebuild"}


def test_beir_documents_are_title_and_sentences_with_offsets(tmp_path):
    write_beir(tmp_path / "b")
    doc = next(d for d in BeirCorpus(tmp_path / "b").documents() if d.doc_id == "d-espresso")
    assert [u.text for u in doc.units] == ["Espresso", "Descale the espresso machine every month.",
                                           "Use filtered water for the boiler."]
    text = TOPICS["espresso"]
    assert all(text[u.start:u.end] == u.text for u in doc.units[1:])
    assert sentences("Dose was 2.5 mg (e.g. daily). Then it stopped.") == [
        ("Dose was 2.5 mg (e.g. daily).", 0, 29), ("Then it stopped.", 30, 46)]


def test_graded_ndcg_uses_linear_gain_and_ignores_grade_zero():
    q = Question("q", "x", ("a", "b"), grades={"a": 2.0, "b": 1.0, "c": 0.0})
    run = JudgedRun([q], [["b", "c", "a"]], [0.01])
    m = judged_metrics(run, k=2)
    dcg = 1 / math.log2(2) + 2 / math.log2(4)
    idcg = 2 / math.log2(2) + 1 / math.log2(3)
    assert m["ndcg@10"] == pytest.approx(dcg / idcg)
    assert m["recall@2"] == 0.5 and m["mrr@10"] == 1.0 and m["recall@100"] == 1.0


@pytest.mark.parametrize("line, why", [
    ('{"id": 1, "question": "q", "relevant": {"a": 0}}', "grade > 0"),
    ('{"id": 1, "question": "q", "relevant": ["a"]}', "not an object"),
    ('{"id": 1, "question": "q", "relevant": {"a": "high"}}', "not a number"),
    ('{"id": 1, "question": "", "relevant": {"a": 1}}', "non-empty"),
    ('{"id": 1, "question": "q"}', "missing field"),
    ('[1, 2]', "not a JSON object"),
])
def test_bad_question_lines_name_the_line_and_the_reason(tmp_path, line, why):
    f = tmp_path / "q.jsonl"
    f.write_text('{"id": "ok", "question": "fine", "relevant": {"a": 1}}\n' + line + "\n")
    with pytest.raises(CorpusError, match=f"line 2: .*{why}"):
        load_questions(f)


def test_eval_questions_with_a_filter_ranks_only_what_it_admits(notes):
    """`--filter 'path=home/*'` keeps the three notes under home/: their questions still find them, the others' relevant
    notes are left out (misses), and a bad filter is a one-line error."""
    _, qfile = notes
    out = runner.invoke(app, ["eval", "questions", str(qfile), "-c", "notes", "--mode", "bm25", "--json",
                              "--filter", "path=home/*"])
    assert out.exit_code == 0, out.output
    report = json.loads(out.stdout)
    assert report["filter"] and report["recall@100"] == pytest.approx(3 / len(QUESTIONS))
    bad = runner.invoke(app, ["eval", "questions", str(qfile), "-c", "notes", "--filter", "page=abc"])
    assert bad.exit_code != 0 and "page is a page number" in str(bad.exception)
