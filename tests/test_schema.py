"""The one result schema (ragfunnel.schema): the models themselves, the answer's conversion to them, and the same
JSON for one question from the three ways in: the CLI (`search --json`, `ask --json`), the Python API
(`present.search`, `Answerer.ask(...).to_schema()`) and the HTTP API (`POST /search`, the `done` event of `/ask`)."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ragfunnel import schema
from ragfunnel.cli import app
from ragfunnel.generate.answer import AnswerResult, Answerer, RetrievedScene
from ragfunnel.generate.citations import CheckedCitation
from ragfunnel.generate.llm import FakeLLM
from ragfunnel.pipeline import Pipeline
from ragfunnel.present import search as present_search
from ragfunnel.types import StageRecord, Trace

SRC = Path(__file__).resolve().parents[1] / "src" / "ragfunnel"
QUESTION = "Who did Rachel dump at the altar?"

runner = CliRunner()


# ---- the models --------------------------------------------------------------------------------------------------


def test_schema_imports_only_the_lowest_layers():
    tree = ast.parse((SRC / "schema.py").read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    imported |= {a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
    ours = {m for m in imported if m.split(".")[0] == "ragfunnel"}
    assert ours <= {"ragfunnel.types", "ragfunnel.store.base", "ragfunnel.errors"}, ours


def test_trace_info_keeps_every_stage_detail():
    trace = Trace("q", "hybrid", [StageRecord("fuse", 0.0012, {"candidates": 3, "top": [{"id": "a", "rank": 1}]})], ["n"])
    info = schema.TraceInfo.from_trace(trace)
    assert info.model_dump(mode="json") == trace.to_dict()
    assert info.stages[0].name == "fuse" and info.stages[0].ms == 1.2


def test_hit_json_keys_are_the_http_apis():
    hit = schema.SearchHit(id="s01_e01_c01", label="S01E01, Scene 1", title="t", rank=1, score=0.5,
                           sources={"bm25_scene": schema.SourceScore(rank=2, score=7.5)},
                           lines=[schema.Line(id="s01_e01_c01_u001", text="Monica: x", spans=[(0, 6)])])
    data = json.loads(schema.to_json(hit))
    assert data == {
        "id": "s01_e01_c01", "label": "S01E01, Scene 1", "title": "t", "rank": 1, "score": 0.5,
        "sources": {"bm25_scene": {"rank": 2, "score": 7.5}},
        "lines": [{"id": "s01_e01_c01_u001", "text": "Monica: x", "spans": [[0, 6]]}],
        "metadata": {}, "source_id": None, "passage": None,
    }
    assert schema.SearchHit.model_validate(data) == hit


def test_scene_hit_is_a_deprecated_name_of_search_hit():
    import ragfunnel

    with pytest.warns(DeprecationWarning, match="use SearchHit"):
        assert schema.SceneHit is schema.SearchHit
    with pytest.warns(DeprecationWarning):
        from ragfunnel.schema import SceneHit
    assert SceneHit is schema.SearchHit
    ragfunnel.__dict__.pop("SceneHit", None)  # loaded on first use, then kept
    with pytest.warns(DeprecationWarning):
        assert ragfunnel.SceneHit is ragfunnel.SearchHit


def test_answer_result_to_dict_is_its_schema():
    citation = CheckedCitation(2, "s01_e04_c04", "S01E04, Scene 4", "The One", "Barry at the altar", ("u1",), ("Rachel: Barry at the altar",))
    scene = RetrievedScene("s01_e04_c04", "S01E04, Scene 4", "The One", 1, 0.03, 2)  # positional, as before
    result = AnswerResult("q", "hybrid", "fake", "Barry [2].", [citation], False, [scene], {"total": 1.23456},
                          gate={"gate": "similarity", "score": 0.5, "threshold": 0.3}, trace=Trace("q", "hybrid"))
    data = result.to_dict()
    assert data == json.loads(schema.to_json(result.to_schema()))
    assert list(data) == ["question", "mode", "llm", "answer", "refused", "citations", "scenes", "timings", "notes",
                          "attempts", "drafts", "gate", "reader", "trace", "route", "route_info", "items", "count",
                          "exhaustive", "rewrite", "candidates", "short_answer"]
    assert data["route"] == "lookup" and data["route_info"] is None and data["items"] is None  # not routed
    assert data["rewrite"] is None and data["candidates"] is None  # not the extractive reader
    assert data["citations"][0]["span"] is None
    result.rewrite = {"asked": "Why did she?", "searched": "Why did Rachel?", "by": "rules"}
    assert result.to_schema().rewrite.searched == "Why did Rachel?"
    assert data["citations"] == [{"source_id": 2, "id": "s01_e04_c04", "label": "S01E04, Scene 4", "title": "The One",
                                  "quote": "Barry at the altar", "unit_ids": ["u1"], "lines": ["Rachel: Barry at the altar"], "context": [],
                                  "span": None}]
    assert data["scenes"][0]["source_id"] == 2 and data["scenes"][0]["sources"] == {} and data["timings"] == {"total": 1.235}
    assert data["gate"] == {"gate": "similarity", "score": 0.5, "threshold": 0.3}
    assert schema.AnswerResponse.model_validate(data).citations[0].id == "s01_e04_c04"


# ---- one question, three ways in: the same JSON ------------------------------------------------------------------


def without_times(data: Any) -> Any:
    """The JSON with what differs from run to run left out: the time taken (took_ms, timings, every *ms field)."""
    if isinstance(data, dict):
        return {k: without_times(v) for k, v in data.items() if k not in ("took_ms", "timings") and not k.endswith("ms")}
    if isinstance(data, list):
        return [without_times(v) for v in data]
    return data


def done_event(body: str) -> dict:
    events = [block for block in body.replace("\r\n", "\n").split("\n\n") if block.strip()]
    name, data = events[-1].split("\n", 1)
    assert name == "event: done", events[-1]
    return json.loads(data.removeprefix("data: "))


@pytest.fixture(scope="module")
def http(small_index):
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from ragfunnel.serve.app import create_app

    pipeline = Pipeline(small_index.settings, store=small_index.store)  # the store is closed by its own fixture
    with TestClient(create_app(small_index.settings, pipeline, FakeLLM(), token="")) as client:
        yield client


@pytest.mark.integration
def test_search_json_is_the_same_from_the_cli_python_and_http(small_index, http):
    cli = runner.invoke(app, ["search", QUESTION, "--mode", "fast", "--k", "5", "--index", str(small_index.path), "--json"])
    assert cli.exit_code == 0, cli.output
    from_cli = json.loads(cli.stdout)
    from_python = present_search(Pipeline(small_index.settings, store=small_index.store), QUESTION, "fast", k=5, route="auto")
    response = http.post("/search", json={"question": QUESTION, "mode": "fast", "k": 5})
    assert response.status_code == 200, response.text
    from_http = response.json()

    assert without_times(from_cli) == without_times(schema.to_data(from_python)) == without_times(from_http)
    assert set(from_http) == set(schema.SearchResponse.model_fields)
    assert from_http["requested_mode"] == "fast" and from_http["mode"] == "hybrid" and len(from_http["results"]) == 5
    assert from_http["results"][0]["metadata"]["season"] == 1 and from_http["results"][0]["lines"]


@pytest.mark.integration
def test_ask_json_is_the_same_from_the_cli_python_and_http(small_index, http):
    cli = runner.invoke(app, ["ask", QUESTION, "--mode", "fast", "--k", "5", "--llm", "fake", "--index",
                              str(small_index.path), "--json"])
    assert cli.exit_code == 0, cli.output
    from_cli = json.loads(cli.stdout)
    answerer = Answerer(Pipeline(small_index.settings, store=small_index.store), FakeLLM())
    from_python = answerer.ask(QUESTION, "fast", 5, route="auto")
    with http.stream("POST", "/ask", json={"question": QUESTION, "mode": "fast", "k": 5}) as response:
        assert response.status_code == 200
        from_http = done_event(response.read().decode())

    assert without_times(from_cli) == without_times(from_python.to_dict()) == without_times(from_http)
    assert from_python.to_dict() == schema.to_data(from_python.to_schema())
    assert set(from_http) == set(schema.AnswerResponse.model_fields)
    assert not from_http["refused"] and from_http["citations"]
    scene = from_http["scenes"][0]  # the answer's scenes are search hits, with their [n] in the prompt
    assert scene["lines"] and scene["sources"] and scene["source_id"] is not None
    searched = present_search(answerer.pipeline, QUESTION, "fast", k=5)
    assert [s["id"] for s in from_http["scenes"]] == [h.id for h in searched.results]
    assert [s["lines"] for s in from_http["scenes"]] == [schema.to_data(h)["lines"] for h in searched.results]
