"""The Python API: `ragfunnel.open(...)` -> `Client`, returning the same models as the CLI's --json and the HTTP
API, on the small Friends index and a small folder collection; follow-ups with history; one-line errors."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

import ragfunnel
from ragfunnel.api.conversation import standalone_question
from ragfunnel.cli import app
from ragfunnel.errors import ConfigError, QueryError, RagfunnelError
from ragfunnel.present import search as present_search
from ragfunnel.schema import AnswerResponse, CollectionSummary, PassageResponse, SearchResponse
from tests.conftest import REPO

pytestmark = pytest.mark.integration
QUESTION = "Who did Rachel dump at the altar?"


def _stable(data: dict) -> dict:
    """A response without its timings."""
    data = json.loads(json.dumps(data))
    data.pop("took_ms", None)
    data.pop("timings", None)
    for stage in (data.get("trace") or {}).get("stages", []):
        stage.pop("ms", None)
    return data


def test_import_ragfunnel_loads_nothing_heavy():
    code = ("import sys, ragfunnel; heavy = [m for m in ('numpy', 'pydantic', 'ragfunnel.pipeline', 'ragfunnel.api') "
            "if m in sys.modules]; print(heavy); assert callable(ragfunnel.open); print('ragfunnel.api' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True,
                         env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"})
    assert out.stdout.split("\n")[:2] == ["[]", "True"]


def test_search_is_the_cli_and_http_response(friends_client, small_pipeline):
    got = friends_client.search(f"  {QUESTION} ", mode="fast", k=5)
    assert isinstance(got, SearchResponse)
    assert (got.question, got.mode, got.requested_mode, got.k) == (QUESTION, "hybrid", "fast", 5)
    assert got.results[0].id == "s01_e04_c04"  # the gold scene (tests/conftest.py)
    expected = present_search(small_pipeline, QUESTION, "fast", k=5)
    assert _stable(got.model_dump(mode="json")) == _stable(expected.model_dump(mode="json"))


def test_search_deep_transforms_the_question_with_the_clients_llm(friends_client):
    got = friends_client.search(QUESTION, mode="deep", k=3)
    stages = {s["name"]: s for s in got.model_dump(mode="json")["trace"]["stages"]}
    assert got.mode == "deep" and got.results[0].id == "s01_e04_c04"
    assert stages["transform:rewrite"]["llm"] == "fake"


def test_search_filters_in_json_or_cli_form(friends_client):
    as_json = friends_client.search(QUESTION, k=3, filter={"episode": 2})
    as_cli = friends_client.search(QUESTION, k=3, filter="episode=2")
    assert [h.id for h in as_json.results] == [h.id for h in as_cli.results]
    assert as_json.results and all(h.metadata["episode"] == 2 for h in as_json.results)


def test_search_and_ask_route_an_aggregation_question(friends_client):
    got = friends_client.search('Which episodes mention Monica?', route="auto")
    assert got.route == "aggregate" and [i.id for i in got.items] == ["s01_e01", "s01_e02", "s01_e04"]
    assert all(c.id.startswith(i.id) and "monica" in c.quote.lower() for i in got.items for c in i.citations)
    assert friends_client.search('Which episodes mention Monica?').items is None  # unrouted by default
    answer = friends_client.ask('How many times does Joey say "Ross"?', reader="evidence", route="auto")
    assert answer.route == "aggregate" and answer.count == sum(i.matches for i in answer.items) > 0


@pytest.mark.parametrize("call, message", [
    (lambda c: c.search("   "), "the question is empty"),
    (lambda c: c.search(QUESTION, k=0), "k must be"),
    (lambda c: c.search(QUESTION, mode="nope"), "unknown mode 'nope'"),
    (lambda c: c.search(QUESTION, filter={"year": {"between": 1}}), "filter"),
    (lambda c: c.ask(QUESTION, reader="oracle"), "unknown reader 'oracle'"),
    (lambda c: c.ask(QUESTION, history="hello"), "history must be a list"),
    (lambda c: c.search(QUESTION, route="both"), "unknown route 'both'"),
    (lambda c: c.passage("no_such_id"), "no document, chunk or line with id 'no_such_id'"),
])
def test_bad_input_is_a_one_line_ragfunnel_error(friends_client, call, message):
    with pytest.raises(RagfunnelError) as caught:
        call(friends_client)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_ask_returns_the_answer_schema_with_checked_citations(friends_client):
    answer = friends_client.ask(QUESTION, k=3)
    assert isinstance(answer, AnswerResponse) and answer.llm == "fake" and not answer.refused
    assert answer.citations and answer.citations[0].quote in answer.citations[0].lines[0]
    evidence = friends_client.ask(QUESTION, reader="evidence", k=3)
    assert evidence.reader == "evidence" and evidence.citations


def test_ask_stream_ends_with_the_same_answer(friends_client):
    events = list(friends_client.ask_stream(QUESTION, k=3))
    assert [e.type for e in events][-1] == "done" and events[-1].result is not None
    shown = "".join(e.text for e in events if e.type == "token")
    assert shown.strip() and "CITATION" not in shown  # citation lines are held back, as `ask` prints it
    plain = friends_client.ask(QUESTION, k=3)
    assert events[-1].result.answer == plain.answer
    assert [c.id for c in events[-1].result.citations] == [c.id for c in plain.citations]


def test_history_carries_names_into_a_follow_up(friends_client):
    history = [{"role": "user", "content": QUESTION}, {"role": "assistant", "content": "Barry [1]"}]
    assert standalone_question("Why did she leave him?", history) == "Why did Rachel leave Barry?"
    assert standalone_question("Who is Monica's brother?", history) == "Who is Monica's brother?"  # no reference back
    assert standalone_question("Why did she leave him?", None) == "Why did she leave him?"
    answer = friends_client.ask("Why did she leave him?", history=history, reader="evidence", k=3)
    assert answer.question == "Why did Rachel leave Barry?"
    assert answer.notes[0].startswith("a follow-up: read with the conversation as")
    assert answer.rewrite.model_dump() == {"asked": "Why did she leave him?", "searched": "Why did Rachel leave Barry?",
                                           "by": "rules"}
    assert answer.trace.stages[0].name == "rewrite" and answer.trace.stages[0].model_extra["searched"] == answer.question
    # the llm reader asks its LLM for the rewrite (the fake LLM's reply is no question: the rules stand in)
    streamed = list(friends_client.ask_stream("Why did she leave him?", history=history, k=3))
    assert streamed[-1].result.rewrite.searched == "Why did Rachel leave Barry?"
    assert friends_client.ask(QUESTION, k=3).rewrite is None


def test_passage_of_a_document_a_chunk_and_a_line(friends_client):
    hit = friends_client.search(QUESTION, k=1).results[0]
    doc = friends_client.passage(hit.id)
    assert isinstance(doc, PassageResponse) and (doc.kind, doc.parent_id, doc.char_start) == ("document", hit.id, 0)
    chunk = friends_client.passage(hit.passage.chunk_id)
    assert chunk.kind == "chunk" and doc.text[chunk.char_start:chunk.char_end] == chunk.text
    line = friends_client.passage(hit.lines[0].id)
    assert line.kind == "unit" and line.text == hit.lines[0].text == doc.text[line.char_start:line.char_end]


def test_async_variants(friends_client):
    async def run():
        found, answer = await asyncio.gather(friends_client.asearch(QUESTION, k=2),
                                             friends_client.aask(QUESTION, reader="evidence", k=2))
        events = [e async for e in friends_client.aask_stream(QUESTION, k=2)]
        return found, answer, events

    found, answer, events = asyncio.run(run())
    assert len(found.results) == 2 and answer.citations and events[-1].type == "done"


def test_folder_collection_index_search_and_collections(notes_home, tmp_path):
    with ragfunnel.open("kitchen", home=notes_home) as rf:
        hits = rf.search("how often should I clean the grinder burrs", k=2)
        assert hits.results[0].id == "machines/grinder.md" and hits.results[0].passage.section == ["Grinder", "Cleaning"]
        listed = rf.collections()
        assert all(isinstance(c, CollectionSummary) for c in listed)
        kitchen = next(c for c in listed if c.name == "kitchen")
        assert kitchen.built and kitchen.documents == 4
        again = rf.index(kitchen.sources)  # the same folder again: a sync with nothing to do
        assert again.action == "none" and again.counts()["unchanged"] == 4
        passage = rf.passage(hits.results[0].lines[0].id)
        assert passage.kind == "unit" and passage.parent_id == "machines/grinder.md"
    # the CLI's `collections --json` prints the same models
    result = CliRunner().invoke(app, ["collections", "--json"], env={"RAGFUNNEL_HOME": str(notes_home)})
    assert result.exit_code == 0, result.output
    assert [CollectionSummary.model_validate(c) for c in json.loads(result.stdout)] == listed


def test_index_refuses_friends_and_a_missing_collection_says_how_to_build_it(tmp_path):
    with ragfunnel.open(home=tmp_path) as rf, pytest.raises(ConfigError, match="Friends collection"):
        rf.index([tmp_path])
    with ragfunnel.open("nothing-here", home=tmp_path) as rf, pytest.raises(RagfunnelError) as caught:
        rf.search("anything")
    assert "\n" not in str(caught.value)


def test_a_dsn_without_the_postgres_extra_is_a_one_line_config_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if the postgres extra were not installed
    with ragfunnel.open(home=tmp_path, dsn="postgresql://localhost/x") as rf:
        assert rf.settings.dsn == "postgresql://localhost/x" and rf.settings.backend == "postgres"
        with pytest.raises(ConfigError, match=r"needs the postgres extra: pip install 'ragfunnel\[postgres\]'") as caught:
            rf.search("anything")
    assert "\n" not in str(caught.value)
