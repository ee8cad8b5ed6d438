"""`register` on a fresh typer app: `ask` and `eval answers` with the fake LLM on the tiny index; the filter that
keeps citation lines out of the streamed text."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from ragfunnel.generate.citations import REFUSAL
from ragfunnel.generate.cli import register
from ragfunnel.generate.stream import CitationLineFilter
from tests.generate.conftest import SSEReply, sse

runner = CliRunner()


@pytest.fixture(scope="module")
def app():
    main = typer.Typer()
    eval_app = typer.Typer()
    main.add_typer(eval_app, name="eval")
    register(main, eval_app)
    return main


def test_ask_streams_the_answer_then_the_cited_scenes(app, tiny):
    res = runner.invoke(app, ["ask", "Who was Joey in love with?", "--llm", "fake", "--index", str(tiny.clean)])
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert "Joey Tribbiani: I think I'm falling in love with you. [" in out and "CITATION" not in out
    assert "Cited scenes:\n  [" in out and "] S08E16, Scene 9 — The One Where Joey Tells Rachel\n" in out
    assert "      Joey Tribbiani: I think I'm falling in love with you.\n" in out
    assert "[fake · mode hybrid" in res.stderr


def test_ask_json_prints_the_answer_result(app, tiny, monkeypatch):
    monkeypatch.setenv("RAGFUNNEL_LLM", "fake")
    res = runner.invoke(app, ["ask", "What is the capital of France?", "--json", "--k", "3", "--route", "lookup",
                              "--index", str(tiny.clean)])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["refused"] is True and data["llm"] == "fake" and len(data["scenes"]) == 3 and data["citations"] == []
    assert data["route"] == "lookup" and data["route_info"]["source"] == "override"


def test_ask_refuses_what_the_router_reads_as_out_of_scope_without_an_llm(app, tiny, monkeypatch):
    monkeypatch.setenv("RAGFUNNEL_LLM", "fake")
    res = runner.invoke(app, ["ask", "What is the capital of France?", "--json", "--k", "3", "--index", str(tiny.clean)])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["refused"] is True and data["route"] == "out_of_scope" and data["llm"] == "none" and data["drafts"] == []
    assert data["route_info"]["source"] == "classifier" and data["route_info"]["scores"]["out_of_scope"] >= 0.9
    assert any("out of scope" in n for n in data["notes"])
    assert [s["name"] for s in data["trace"]["stages"]][0] == "route"


def test_ask_lists_every_scene_of_an_aggregation_question(app, tiny):
    res = runner.invoke(app, ["ask", 'In which scenes does Joey say "Rachel"?', "--json", "--index", str(tiny.clean)])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["route"] == "aggregate" and data["reader"] == "aggregate" and data["llm"] == "none"
    assert data["items"] and data["count"] is None
    for item in data["items"]:
        assert item["citations"] and all(c["id"] == item["id"] for c in item["citations"])
        assert all("rachel" in c["quote"].lower() and c["quote"].startswith("Joey") for c in item["citations"])
    res = runner.invoke(app, ["ask", 'How many times does Joey say "Rachel"?', "--json", "--index", str(tiny.clean)])
    data2 = json.loads(res.stdout)
    assert data2["count"] == sum(i["matches"] for i in data["items"]) > 0
    res = runner.invoke(app, ["ask", 'How many times does Joey say "Rachel"?', "--index", str(tiny.clean)])
    assert res.exit_code == 0 and f"{data2['count']}: " in res.stdout and "route aggregate" in res.stderr
    res = runner.invoke(app, ["ask", "Rachel", "--route", "sideways", "--index", str(tiny.clean)])
    assert res.exit_code != 0 and "unknown route 'sideways'" in str(res.exception)


def test_ask_with_a_filter_answers_from_the_matching_scenes(app, tiny, monkeypatch):
    monkeypatch.setenv("RAGFUNNEL_LLM", "fake")
    res = runner.invoke(app, ["ask", "Who was Joey in love with?", "--json", "--k", "3", "--filter", "id=s0[1-4]_*",
                              "--index", str(tiny.clean)])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)  # without the filter, S08E16 (Joey tells Rachel) comes first
    assert len(data["scenes"]) == 3 and all(s["id"][:3] in ("s01", "s02", "s03", "s04") for s in data["scenes"])


def test_ask_errors_are_ragfunnel_errors(app, tiny):
    from ragfunnel.errors import ConfigError, QueryError

    res = runner.invoke(app, ["ask", "  ", "--llm", "fake", "--index", str(tiny.clean)])
    assert isinstance(res.exception, QueryError)
    res = runner.invoke(app, ["ask", "Who?", "--llm", "nonsense", "--index", str(tiny.clean)])
    assert isinstance(res.exception, ConfigError) and "unknown LLM" in str(res.exception)
    res = runner.invoke(app, ["ask", "Who?", "--llm", "fake", "--mode", "nope", "--index", str(tiny.clean)])
    assert isinstance(res.exception, ConfigError) and "unknown mode" in str(res.exception)
    res = runner.invoke(app, ["ask", "Who?", "--llm", "fake", "--filter", "season>", "--index", str(tiny.clean)])
    assert isinstance(res.exception, QueryError) and "cannot read the filter" in str(res.exception)


def test_eval_answers_writes_the_table(app, tiny, tmp_path):
    out = tmp_path / "answers.md"
    res = runner.invoke(app, [
        "eval", "answers", "--llm", "fake", "--limit", "3", "--oos", "4", "--seed", "7", "--index", str(tiny.clean),
        "--data", str(tiny.data), "--out", str(out),
    ])
    assert res.exit_code == 0, res.output
    doc = out.read_text()
    assert doc.startswith("# Grounded answers on Friends\n") and "- command: `" in doc and "- machine: " in doc
    assert "3 FriendsQA dev questions (seed 7) + 4 out-of-scope questions" in doc
    for label in ("gold-span answer rate (dev)", "citation precision", "refusal rate, out of scope",
                  "false-refusal rate (dev)", "faithfulness", "time to first token p50 (ms)", "total time p50 (ms)"):
        assert f"| {label}" in doc
    data = json.loads(out.with_suffix(".json").read_text())
    assert data["summary"]["dev_questions"] == 3 and len(data["questions"]) == 7
    assert data["summary"]["llm"] == "fake" and data["questions"][0]["kind"] == "dev"
    assert not (tmp_path / "answers.partial.jsonl").exists()  # the journal of a finished run is removed
    assert "7/7 questions" in res.output  # progress, also when stderr is not a terminal


def test_eval_answers_over_the_evidence_lines(app, tiny, tmp_path):
    """--llm-input evidence with --evidence-context: the run says what the LLM read, in the table and the JSON."""
    out = tmp_path / "evidence.md"
    res = runner.invoke(app, [
        "eval", "answers", "--llm", "fake", "--limit", "2", "--oos", "1", "--index", str(tiny.clean),
        "--data", str(tiny.data), "--out", str(out), "--llm-input", "evidence", "--evidence-context", "0",
    ])
    assert res.exit_code == 0, res.output
    assert "reading the selected evidence lines (0 of context either side)" in out.read_text()
    summary = json.loads(out.with_suffix(".json").read_text())["summary"]
    assert summary["llm_input"] == "evidence" and summary["evidence_context"] == 0
    bad = runner.invoke(app, ["eval", "answers", "--llm", "fake", "--index", str(tiny.clean), "--evidence-context", "9"])
    assert bad.exit_code == 2 and "evidence-context" in bad.output


def feed_all(pieces):
    f = CitationLineFilter()
    return "".join(f.feed(p) for p in pieces) + f.flush()


@pytest.mark.parametrize(
    "pieces, shown",
    [
        (["Joey loves ", "Rachel [1].\n", "CIT", "ATION [1]: \"I lo", "ve you\"\n"], "Joey loves Rachel [1].\n"),
        (["Answer [1].\nCitations:\n**CITATION [1]:** \"x y\""], "Answer [1].\n"),
        (["Cited ", "twice [1]."], "Cited twice [1]."),
        (["Sources", ": the scenes say so"], "Sources: the scenes say so"),
        (["I don't know based on the provided scenes."], "I don't know based on the provided scenes."),
        (["a\n\nb\n"], "a\n\nb\n"),
    ],
)
def test_citation_line_filter(pieces, shown):
    assert feed_all(pieces) == shown


def test_filter_shows_ordinary_text_as_it_streams():
    f = CitationLineFilter()
    assert f.feed("Joey") == "Joey" and f.feed(" loves") == " loves" and f.feed("\nCI") == "\n" and f.feed("A") == "CIA"


def openai_stream(text: str) -> list[str]:
    return [sse(None, {"choices": [{"delta": {"content": text}}]}), "data: [DONE]\n\n"]


def test_ask_withdraws_an_answer_without_a_valid_quote(app, tiny, sse_server):
    sse_server.reply(SSEReply(chunks=openai_stream('Joey loved pizza [1].\nCITATION [1]: "Pizza forever"')))
    res = runner.invoke(app, ["ask", "Who was Joey in love with?", "--llm", f"openai:{sse_server.url}|m", "--index", str(tiny.clean)])
    assert res.exit_code == 0, res.output
    assert res.stdout.count("Joey loved pizza [1].") == 2 and "CITATION" not in res.stdout  # both attempts streamed
    assert "(the reply above could not be verified against the sources, so it was withdrawn; the selected evidence " \
           "lines instead:)\n" in res.stdout
    assert REFUSAL not in res.stdout and "Joey Tribbiani: I think I'm falling in love with you." in res.stdout
    assert "asking again with a stricter prompt" in res.stderr and len(sse_server.requests) == 2


def test_ask_lists_the_scenes_when_the_llm_fails(app, tiny, sse_server):
    sse_server.reply(SSEReply(chunks=[sse(None, {"error": {"type": "invalid_request_error"}})]))
    res = runner.invoke(app, ["ask", "Who was Joey in love with?", "--llm", f"openai:{sse_server.url}|m", "--index", str(tiny.clean)])
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("No answer: the LLM failed (see the note below).\n\nRetrieved scenes:\n  [1] ")
    assert "S08E16, Scene 9 — The One Where Joey Tells Rachel" in res.stdout
    assert "chat completion failed (error event invalid_request_error)" in res.stderr


def test_ask_a_folder_collection_cites_the_file_and_section(tmp_path, monkeypatch):
    """A tiny folder collection (Markdown with headings): the prompt speaks of documents, not Friends, and the citation
    names the file and the section path of the quoted line."""
    from ragfunnel.cli import app as main_app
    from ragfunnel.corpus import GENERIC_DOMAIN

    monkeypatch.setenv("RAGFUNNEL_HOME", str(tmp_path / "home"))
    docs = tmp_path / "manuals"
    (docs / "guide").mkdir(parents=True)
    (docs / "guide" / "setup.md").write_text(
        "# Install\n\n## Linux\n\nThe installer puts the espresso app in /opt/espresso by default.\n\n"
        "## Windows\n\nDouble-click the setup file.\n"
    )
    (docs / "care.md").write_text("# Cleaning\n\nDescale the espresso machine every month with citric acid.\n")
    indexed = runner.invoke(main_app, ["index", str(docs), "--collection", "manuals", "-q", "--json"])
    assert indexed.exit_code == 0, indexed.output
    res = runner.invoke(main_app, ["ask", "Where does the installer put the espresso app on Linux?", "--collection",
                                   "manuals", "--llm", "fake", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert not data["refused"] and "/opt/espresso" in data["answer"]
    (citation,) = data["citations"]
    assert citation["id"] == "guide/setup.md" and citation["label"] == "guide/setup.md § Install › Linux"
    off = runner.invoke(main_app, ["ask", "Who won the football world cup in 1954?", "--collection", "manuals",
                                   "--llm", "fake", "--json"])
    assert off.exit_code == 0 and json.loads(off.stdout)["answer"] == GENERIC_DOMAIN.refusal
