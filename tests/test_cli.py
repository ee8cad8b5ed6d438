"""The command line: `search` and `eval friends` on the small index (in process, with typer's CliRunner), and the
error paths through the real `ragfunnel` entry point (exit status 2, a message, no traceback)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragfunnel.cli import app
from ragfunnel.evaluate.metrics import summarize, union_coverage
from ragfunnel.pipeline import Pipeline

LABEL = re.compile(r"^S\d\dE\d\d, Scene \d+$")
METRICS = ["recall@1", "recall@5", "recall@10", "recall@20", "mrr@10", "ndcg@10", "n"]

runner = CliRunner()


def ragfunnel(*args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    """Run the installed `ragfunnel` script (falls back to `python -m ragfunnel.cli`)."""
    script = Path(sys.executable).with_name("ragfunnel")
    cmd = [str(script)] if script.is_file() else [sys.executable, "-m", "ragfunnel.cli"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=timeout, env=dict(os.environ))


def one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


# ---- error paths through main() -------------------------------------------------------------------------------------


def test_empty_question_exits_2_without_traceback():
    proc = ragfunnel("search", "   ")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr + proc.stdout
    assert one_line(proc.stderr).startswith("error:") and "empty" in proc.stderr
    assert proc.stdout == ""


def test_missing_index_exits_2_with_a_message(tmp_path):
    missing = tmp_path / "no-index"
    qfile = tmp_path / "q.jsonl"
    qfile.write_text(json.dumps(QUESTIONS[0]) + "\n")
    for args in (["search", "Who did Rachel dump at the altar?"], ["eval", "friends", "--questions", str(qfile)]):
        proc = ragfunnel(*args, "--index", str(missing))
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr + proc.stdout
        message = one_line(proc.stderr)
        assert message.startswith("error:") and "no index" in message and str(missing) in message.replace(" ", "")


def test_error_message_is_one_line(tmp_path):
    proc = ragfunnel("search", "   ")
    assert len(proc.stderr.strip().splitlines()) == 1
    proc = ragfunnel("search", "Who?", "--index", str(tmp_path / ("a-rather-long-directory-name" * 2) / "index"))
    assert len(proc.stderr.strip().splitlines()) == 1


# ---- search and eval on the small index ------------------------------------------------------------------------------


@pytest.mark.integration
def test_search_json(small_index):
    result = runner.invoke(app, ["search", "Who did Rachel dump at the altar?", "--index", str(small_index.path),
                                 "--json", "--k", "5"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["question"] == "Who did Rachel dump at the altar?" and out["mode"] == "hybrid"
    results = out["results"]
    assert len(results) == 5
    assert [r["rank"] for r in results] == [1, 2, 3, 4, 5]
    assert len({r["id"] for r in results}) == 5
    docs = {d.doc_id: d for d in small_index.docs}
    for r in results:
        assert LABEL.match(r["label"]), r["label"]
        doc = docs[r["id"]]
        assert r["label"] == doc.label and r["title"] == doc.title
        season, episode, scene = (int(x) for x in re.findall(r"\d+", r["id"]))
        assert r["label"] == f"S{season:02d}E{episode:02d}, Scene {scene}"
        assert r["lines"] and r["sources"]
        texts = {u.render() for u in doc.units}
        for line in r["lines"]:
            assert line["text"] in texts
            assert all(0 <= s < e <= len(line["text"]) for s, e in line["spans"])
    assert [s["name"] for s in out["trace"]["stages"]][-1] == "fuse"
    gold = next(r for r in results if r["id"] == "s01_e04_c04")
    assert gold["label"] == "S01E04, Scene 4"
    marked = [line["text"][s:e].lower() for line in gold["lines"] for s, e in line["spans"]]
    assert "altar" in marked  # the query terms are marked in the best lines


@pytest.mark.integration
def test_search_text_output(small_index):
    result = runner.invoke(app, ["search", "Who broke her watch?", "--index", str(small_index.path), "--k", "3",
                                 "--mode", "bm25"])
    assert result.exit_code == 0, result.output
    assert "mode=bm25" in result.stdout
    assert len(re.findall(r"^\d\. S\d\dE\d\d, Scene \d+", result.stdout, flags=re.M)) == 3


QUESTIONS = [
    {"question_id": "q1", "question": "Who did Rachel dump at the altar?", "gold_scene_ids": ["s01_e04_c04"]},
    {"question_id": "q2", "question": "Who broke her watch?", "gold_scene_ids": ["s01_e01_c05"]},
    {"qa_id": "q3", "question": "How does Chandler describe the hockey players?", "ground_truth_scene_id": "s01_e04_c08"},
    {"question_id": "q4", "question": "Where was Ross stuck?", "gold_scene_ids": ["s01_e02_c06", "s01_e02_c07"]},
    {"question_id": "q5", "question": "What did Paul the wine guy say?", "gold_scene_ids": ["s09_e09_c09"]},  # not there
]


@pytest.mark.integration
def test_eval_json_matches_the_metrics_computed_here(small_index, tmp_path):
    qfile = tmp_path / "questions.jsonl"
    qfile.write_text("\n".join(json.dumps(q) for q in QUESTIONS) + "\n")
    result = runner.invoke(app, ["eval", "friends", "--questions", str(qfile), "--json", "--index",
                                 str(small_index.path)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert set(METRICS) <= set(report)
    assert report["n"] == len(QUESTIONS) and report["mode"] == "hybrid" and report["set"] == str(qfile)
    for key in METRICS[:-1]:
        assert 0.0 <= report[key] <= 1.0
    assert report["recall@1"] <= report["recall@5"] <= report["recall@10"] <= report["recall@20"]
    assert report["recall@20"] <= 0.8 + 1e-9  # q5's gold is not in the index

    pipe = Pipeline(small_index.settings, store=small_index.store)
    ranked, golds, per_retriever = [], [], {}
    for q in QUESTIONS:
        gold = q.get("gold_scene_ids") or [q["ground_truth_scene_id"]]
        result = pipe.search(q["question"], "hybrid", k=50)
        ranked.append([c.doc_id for c in result.candidates])
        for name, cands in result.lists.items():
            per_retriever.setdefault(name, []).append([c.doc_id for c in cands])
        golds.append(gold)
    expected = summarize(list(zip(ranked, golds)))
    for key in METRICS:
        assert report[key] == pytest.approx(expected[key]), key
    assert report["recall@50"] == pytest.approx(union_coverage([ranked], golds, 50))
    for k in (5, 10, 20, 50):  # the ceiling: gold in the top k of any retriever's own list
        assert report[f"union@{k}"] == pytest.approx(union_coverage(list(per_retriever.values()), golds, k))
    assert report["recall@5"] > 0  # the altar question at least


@pytest.mark.integration
def test_eval_mode_and_limit(small_index, tmp_path):
    qfile = tmp_path / "questions.jsonl"
    qfile.write_text("\n".join(json.dumps(q) for q in QUESTIONS) + "\n")
    result = runner.invoke(app, ["eval", "friends", "--questions", str(qfile), "--json", "--index",
                                 str(small_index.path), "--mode", "bm25", "--limit", "2"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["n"] == 2 and report["mode"] == "bm25"


@pytest.mark.integration
def test_search_and_eval_with_filters(small_index, tmp_path):
    result = runner.invoke(app, ["search", "Who did Rachel dump at the altar?", "--index", str(small_index.path),
                                 "--json", "--k", "4", "--filter", "episode in 1,2", "-f", "scene>=3"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert len(out["results"]) == 4
    assert all(r["metadata"]["episode"] in (1, 2) and r["metadata"]["scene"] >= 3 for r in out["results"])
    assert [s for s in out["trace"]["stages"] if s["name"] == "filter"][0]["filter"] == "episode in 1,2, scene>=3"
    qfile = tmp_path / "questions.jsonl"
    qfile.write_text("\n".join(json.dumps(q) for q in QUESTIONS) + "\n")
    evaluated = runner.invoke(app, ["eval", "friends", "--questions", str(qfile), "--json", "--index",
                                    str(small_index.path), "--filter", "episode=4"])
    assert evaluated.exit_code == 0, evaluated.output
    report = json.loads(evaluated.stdout)
    assert report["filter"] == "episode=4" and report["n"] == len(QUESTIONS)
    assert report["recall@20"] == pytest.approx(0.4)  # only q1 and q3 have their gold in episode 4


@pytest.mark.parametrize("bad", ["format", "page=first", "date>=2020-13-01", "season in ,"])
def test_a_bad_filter_exits_2_with_one_line(tmp_path, bad):
    proc = ragfunnel("search", "Who?", "--filter", bad, "--index", str(tmp_path / "no-index"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr + proc.stdout
    assert len(proc.stderr.strip().splitlines()) == 1 and proc.stderr.startswith("error:") and "filter" in proc.stderr


def test_bad_question_file_is_an_error(tmp_path):
    qfile = tmp_path / "questions.jsonl"
    qfile.write_text('{"question_id": "q1", "question": "Who?", "gold_scene_ids": ["s01_e01_c01"]}\n{oops\n')
    proc = ragfunnel("eval", "friends", "--questions", str(qfile), "--json", "--index", str(tmp_path / "x"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "line 2" in one_line(proc.stderr)


def test_index_then_search_a_small_corpus(tmp_path):
    """`ragfunnel index` on a tiny JSONL corpus, a second run that finds it up to date, then a search on it."""
    from ragfunnel.store import StoreSettings
    from tests.helpers import TOPICS, write_topics_corpus

    corpus = write_topics_corpus(tmp_path / "tiny.jsonl")
    index = tmp_path / "index"
    result = runner.invoke(app, ["index", "--corpus", str(corpus), "--index", str(index), "--quiet"])
    assert result.exit_code == 0, result.output
    manifest = json.loads((index / "manifest.json").read_text())
    assert manifest["complete"] and manifest["documents"] == len(TOPICS)
    assert StoreSettings.model_validate(manifest["settings"]) == StoreSettings()  # the default settings
    again = runner.invoke(app, ["index", "--corpus", str(corpus), "--index", str(index), "--quiet"])
    assert again.exit_code == 0 and "up to date" in one_line(again.stderr)
    found = runner.invoke(app, ["search", "pepperoni pizza", "--index", str(index), "--json", "--k", "2"])
    assert found.exit_code == 0, found.output
    top = json.loads(found.stdout)["results"][0]
    assert top["id"] == "s09_e01_c01" and top["label"] == "S09E01, Scene 1" and top["title"] == "Tiny"

    # the answerability gate of `ask`, trained on the user's own questions, lands beside the index
    answerable, off_topic = tmp_path / "answerable.txt", tmp_path / "off_topic.txt"
    answerable.write_text("\n".join(["What did Joey order?", "Who could not believe the pizza?", "What opens on Monday?",
                                      "What did Phoebe write?", "How long does the turkey need?", "Where did Joey put his head?"]))
    off_topic.write_text("# comments and blank lines are skipped\n\n" + "\n".join([
        "Who invented the telephone?", "What is the capital of Australia?", "How do I sort a list in Python?",
        "What is photosynthesis?", "Who wrote Hamlet?", "What year did World War II end?"]))
    trained = runner.invoke(app, ["train", "gate", "--questions", str(answerable), "--off-topic", str(off_topic),
                                  "--index", str(index), "--quiet", "--k", "2"])
    assert trained.exit_code == 0, trained.output
    assert json.loads(trained.stdout)["cross_validated"]["off_topic"] == 6 and (index / "gate.json").is_file()
    missing = ragfunnel("train", "gate", "--questions", str(tmp_path / "nope.txt"), "--index", str(index))
    assert missing.returncode == 2 and "Traceback" not in missing.stderr and "no such file" in one_line(missing.stderr)


def test_unknown_mode_raises_a_config_error(tmp_path):
    from ragfunnel.errors import ConfigError

    result = runner.invoke(app, ["search", "Who?", "--index", str(tmp_path / "index"), "--mode", "turbo"])
    assert isinstance(result.exception, ConfigError)  # main() turns it into exit status 2


# ---- train reranker / accurate mode ----------------------------------------------------------------------------------


@pytest.mark.integration
def test_train_reranker_smoke(small_index, small_questions, monkeypatch, tmp_path):
    """`ragfunnel train reranker --limit 8` on the small index, with the split replaced by questions whose gold
    scenes the small index holds; the model replaces what was at --out, and no .partial directory is left."""
    pytest.importorskip("lightgbm")
    from ragfunnel.train import run
    from ragfunnel.corpus.friends_questions import Split

    monkeypatch.setattr(run, "training_split",
                        lambda friends_dir, seed=13: Split(small_questions[:16], small_questions[16:], 42))
    out = tmp_path / "reranker"
    (out / "old").mkdir(parents=True)  # a previous model
    (tmp_path / "reranker.partial" / "junk").mkdir(parents=True)  # an interrupted run
    result = runner.invoke(app, ["train", "reranker", "--limit", "8", "--seed", "3", "--out", str(out),
                                 "--index", str(small_index.path)])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == ["ltr", "training_report.json"]
    assert (out / "ltr" / "model.txt").is_file()
    meta = json.loads((out / "ltr" / "meta.json").read_text())
    assert meta["seed"] == 3 and meta["train_questions"] == 8
    assert not (tmp_path / "reranker.partial").exists()
    report = json.loads((out / "training_report.json").read_text())
    assert (report["seed"], report["train_questions"], report["excluded_sample_questions"]) == (3, 8, 42)
    printed = json.loads(result.stdout)
    assert printed == {k: v for k, v in report.items() if k != "ltr"}
    assert "reranker saved to" in result.stderr and str(out) in one_line(result.stderr).replace(" ", "")


@pytest.mark.integration
def test_train_embedder_smoke(small_index, small_questions, monkeypatch, tmp_path):
    """`ragfunnel train embedder` on the small index: with the real split (whose scenes the small index lacks) a
    clear error; with questions of the small index a model in the bundled layout, and no .partial left."""
    pytest.importorskip("torch")
    from ragfunnel.errors import RagfunnelError
    from ragfunnel.corpus import friends_questions as data
    from ragfunnel.corpus.friends_questions import Split

    out = tmp_path / "embedder"
    empty = runner.invoke(app, ["train", "embedder", "--limit", "4", "--out", str(out), "--index", str(small_index.path)])
    assert isinstance(empty.exception, RagfunnelError) and "no training pairs" in str(empty.exception)
    assert not out.exists()
    monkeypatch.setattr(data, "training_split", lambda friends_dir, seed=13: Split(small_questions[:16], [], 0))
    result = runner.invoke(app, ["train", "embedder", "--limit", "4", "--epochs", "1", "--out", str(out),
                                 "--index", str(small_index.path)])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == ["meta.json", "onnx", "tokenizer.json"]
    assert json.loads(result.stdout)["questions"] == 4 and not (tmp_path / "embedder.partial").exists()
    assert "--encoder tuned" in one_line(result.stderr)


@pytest.mark.integration
def test_train_embedder_on_judged_questions(small_index, small_questions, tmp_path):
    """Any collection trains on --questions (document judgments); a collection other than friends without them is
    a one-line error."""
    pytest.importorskip("torch")
    missing = runner.invoke(app, ["train", "embedder", "-c", "notes", "--index", str(small_index.path)])
    assert missing.exit_code != 0 and "pass --questions" in one_line(str(missing.exception) + missing.output)
    questions = tmp_path / "judged.jsonl"
    questions.write_text("".join(json.dumps({"id": q.qid, "question": q.text, "relevant": {q.gold[0]: 1}}) + "\n"
                                 for q in small_questions[:6]), encoding="utf-8")
    out = tmp_path / "embedder"
    result = runner.invoke(app, ["train", "embedder", "--questions", str(questions), "--limit", "4", "--epochs", "1",
                                 "--out", str(out), "--index", str(small_index.path)])
    assert result.exit_code == 0, result.output
    meta = json.loads((out / "meta.json").read_text())
    assert meta["questions"] == 4 and meta["view"] == "scene" and meta["max_passage"] == 256
    assert meta["questions_from"] == str(questions) and meta["pairs"] == 4
    assert json.loads(result.stdout)["view"] == "scene"

    saved = tmp_path / "pairs.json.gz"
    result = runner.invoke(app, ["train", "embedder", "--questions", str(questions), "--limit", "4",
                                 "--save-pairs", str(saved), "--index", str(small_index.path)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["pairs"] == 4 and "--pairs" in one_line(result.stderr)
    elsewhere = tmp_path / "from_pairs"
    result = runner.invoke(app, ["train", "embedder", "--pairs", str(saved), "--epochs", "1", "--device", "cpu",
                                 "--out", str(elsewhere)])
    assert result.exit_code == 0, result.output
    trained = json.loads((elsewhere / "meta.json").read_text())
    assert (trained["pairs"], trained["max_passage"], trained["view"], trained["device"]) == (4, 256, "scene", "cpu")
    assert trained["pairs_from"] == str(saved) and trained["collection"] == "friends"
    narrower = runner.invoke(app, ["train", "embedder", "--pairs", str(saved), "--epochs", "1", "--device", "cpu",
                                   "--max-passage", "64", "--out", str(tmp_path / "narrower")])
    assert narrower.exit_code == 0, narrower.output
    assert json.loads((tmp_path / "narrower" / "meta.json").read_text())["max_passage"] == 64
    both = runner.invoke(app, ["train", "embedder", "--pairs", str(saved), "--save-pairs", str(saved)])
    assert both.exit_code != 0 and "exclude each other" in one_line(str(both.exception) + both.output)


@pytest.mark.integration
def test_train_reranker_limit_must_be_at_least_4(small_index, tmp_path):
    result = runner.invoke(app, ["train", "reranker", "--limit", "2", "--out", str(tmp_path / "r"),
                                 "--index", str(small_index.path)])
    assert result.exit_code == 2 and not (tmp_path / "r").exists()


@pytest.mark.integration
def test_accurate_without_a_model_exits_2_naming_the_train_command(small_index):
    proc = ragfunnel("search", "Who did Rachel dump at the altar?", "--mode", "accurate", "--index",
                     str(small_index.path))
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert one_line(proc.stderr).startswith("error:") and "ragfunnel train reranker" in one_line(proc.stderr)


@pytest.mark.integration
def test_search_deep_transforms_the_question_with_the_llm_given(small_index):
    result = runner.invoke(app, ["search", "Who did Rachel dump at the altar?", "--index", str(small_index.path),
                                 "--mode", "deep", "--llm", "fake", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    stages = {s["name"]: s for s in out["trace"]["stages"]}
    assert out["mode"] == "deep" and out["results"]
    for kind in ("rewrite", "hyde"):
        assert stages[f"transform:{kind}"]["llm"] == "fake"
        assert {"queries", "cached", "generation_ms", "approx_prompt_tokens"} <= set(stages[f"transform:{kind}"])


@pytest.mark.integration
def test_search_deep_with_an_llm_that_cannot_load_is_a_one_line_error(small_index, tmp_path):
    proc = ragfunnel("search", "Who did Rachel dump at the altar?", "--index", str(small_index.path),
                     "--mode", "deep", "--llm", f"local:{tmp_path / 'missing.gguf'}")
    assert proc.returncode != 0
    assert len(proc.stderr.strip().splitlines()) == 1 and "LLM model file not found" in proc.stderr
