"""POST /ask with `reader: extractive` on a collection with an extractive reader (the one the Friends corpus ships):
the reader's answer and the retrieved scenes first (an `extractive` event), then, on a server started to phrase its
candidates, the LLM's phrasing of one of them; without an LLM, the extractive answer alone. The default reader stays
the LLM over the scenes (or the evidence lines): the extractive reader measures below them."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from ragfunnel.generate.reader import usable_reader
from tests.serve.conftest import parse_sse

QUESTION = "Who did Rachel dump at the altar?"


@pytest.fixture(scope="module")
def shipped(serve_pipeline):
    if usable_reader(serve_pipeline.settings.models_dir, serve_pipeline.corpus) is None:
        pytest.skip("no usable extractive reader (the `reader` extra: onnx)")


def events_of(client, **body):
    with client.stream("POST", "/ask", json={"question": QUESTION, **body}) as r:
        assert r.status_code == 200, r.read()
        return parse_sse(r.read().decode())


def test_the_extractive_answer_comes_first_then_the_llm_phrases_it(make_app, shipped):
    with TestClient(make_app(llm_input="candidates")) as c:
        events = events_of(c, k=5, reader="auto")
    kinds = [e for e, _ in events]
    assert kinds[0] == "extractive" and kinds[-1] == "done"
    early, final = json.loads(events[0][1]), json.loads(events[-1][1])
    assert early["scenes"] and early["candidates"] is not None and early["llm"] == "fake"
    if early["refused"]:
        assert "token" not in kinds and final["refused"]
        return
    assert "token" in kinds and early["citations"][0]["span"] is not None
    tokens = "".join(json.loads(d)["text"] for e, d in events if e == "token")
    assert tokens.startswith("Answer: ")  # the fake LLM phrases a candidate: `Answer: <candidate> [n]`
    assert final["short_answer"] in [c["text"] for c in early["candidates"][:3]]
    assert final["reader"] in ("llm", "extractive") and final["citations"]
    assert {"retrieval", "reader", "llm_first_token", "llm_total", "total"} <= set(final["timings"])
    assert any(s["name"] == "read" for s in final["trace"]["stages"])


def test_without_an_llm_the_extractive_answer_is_the_answer(make_app, shipped, tmp_path):
    with TestClient(make_app(llm=None, llm_name=f"local:{tmp_path / 'missing.gguf'}", llm_input=None)) as c:
        default = events_of(c, k=5)
        events = events_of(c, k=5, reader="extractive")
        explicit = events_of(c, k=5, reader="extractive")
    assert [e for e, _ in default] == ["evidence", "done"]  # the default without an LLM: the evidence lines
    assert [e for e, _ in events] == ["extractive", "done"]
    final = json.loads(events[-1][1])
    assert final["reader"] == "extractive" and final["llm"] == "none"
    if not final["refused"]:
        c0, c1 = final["citations"][0]["span"]
        assert final["citations"][0]["quote"][c0:c1] == final["answer"] == final["short_answer"]
    assert json.loads(explicit[-1][1])["answer"] == final["answer"]
