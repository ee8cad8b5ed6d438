"""The HTTP API over the small real index and the fake LLM: /search, /ask (SSE), /scenes, /health, /results, the
4xx cases, auth, the 503s for what is not available, and parallel requests on a live server."""

from __future__ import annotations

import json
import re
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from fastapi.testclient import TestClient

from ragfunnel import __version__
from ragfunnel.errors import ConfigError
from ragfunnel.generate.citations import REFUSAL
from ragfunnel.generate.llm import FakeLLM
from ragfunnel.pipeline import MAX_QUESTION_CHARS
from tests.conftest import SMALL_EPISODES
from tests.serve.conftest import RESULTS, parse_sse, static_files

pytestmark = pytest.mark.integration

QUESTION = "Who did Rachel dump at the altar?"
OUT_OF_SCOPE = "What is the GDP of Luxembourg?"


# ---- /search --------------------------------------------------------------------------------------------------------


def test_search_returns_ranked_scenes_with_lines_spans_and_trace(client, small_index, serve_pipeline):
    r = client.post("/search", json={"question": f"  {QUESTION}\n", "mode": "fast", "k": 5})
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["question"], body["mode"], body["requested_mode"], body["k"]) == (QUESTION, "hybrid", "fast", 5)
    expected = serve_pipeline.search(QUESTION, "hybrid", k=5).candidates
    results = body["results"]
    assert [x["id"] for x in results] == [c.doc_id for c in expected]  # the same ranking as the Python API
    assert [x["rank"] for x in results] == [1, 2, 3, 4, 5]
    assert [x["score"] for x in results] == sorted((x["score"] for x in results), reverse=True)
    docs = {d.doc_id: d for d in small_index.docs}
    terms = set(small_index.store.analyze(QUESTION))
    spans_seen = 0
    for x in results:
        assert x["id"].startswith(SMALL_EPISODES)
        assert (x["label"], x["title"]) == (docs[x["id"]].label, docs[x["id"]].title)
        assert set(x["sources"]) <= {"bm25_scene", "bm25_w3s1", "bm25_utt", "dense_w3s1", "dense_utt"}
        assert all(s["rank"] >= 1 for s in x["sources"].values())
        rendered = {u.unit_id: u.render() for u in docs[x["id"]].units}
        assert x["lines"], x
        for line in x["lines"]:
            assert line["text"] == rendered[line["id"]]
            for start, end in line["spans"]:  # every span is a query term in the line
                assert small_index.store.analyze(line["text"][start:end])[0] in terms
                spans_seen += 1
    assert spans_seen >= 3
    stages = [s["name"] for s in body["trace"]["stages"]]
    assert stages[0] == "route" and body["route"] == "lookup" and body["route_info"]["source"] == "classifier"
    stages = stages[1:]
    assert stages[:5] == ["retrieve:bm25_scene", "retrieve:bm25_w3s1", "retrieve:bm25_utt", "retrieve:dense_w3s1", "retrieve:dense_utt"]
    assert stages[-1] == "fuse" and all(isinstance(s["ms"], float) for s in body["trace"]["stages"])
    assert body["trace"]["stages"][-1]["top"][0]["id"] == results[0]["id"]
    assert body["took_ms"] > 0


@pytest.mark.parametrize("mode", ["bm25", "vector", "hybrid"])
def test_search_modes(client, serve_pipeline, mode):
    r = client.post("/search", json={"question": QUESTION, "mode": mode, "k": 3})
    assert r.status_code == 200, r.text
    assert [x["id"] for x in r.json()["results"]] == [c.doc_id for c in serve_pipeline.search(QUESTION, mode, k=3).candidates]
    assert r.json()["mode"] == mode


def test_search_deep_transforms_the_question_with_the_servers_llm(client):
    body = client.post("/search", json={"question": QUESTION, "mode": "deep", "k": 3}).json()
    stages = {s["name"]: s for s in body["trace"]["stages"]}
    assert body["mode"] == "deep" and len(body["results"]) == 3
    assert stages["transform:rewrite"]["llm"] == "fake" and "generation_ms" in stages["transform:hyde"]


def test_search_deep_without_an_llm_is_503_and_other_modes_work(small_index):
    from ragfunnel.pipeline import Pipeline
    from ragfunnel.serve.app import create_app

    class Unloadable(FakeLLM):
        def warm_up(self):
            raise ConfigError("LLM model file not found: /nowhere.gguf")

    app = create_app(small_index.settings, pipeline=Pipeline(small_index.settings, store=small_index.store),
                     llm=Unloadable(), token="")
    with TestClient(app) as c:
        r = c.post("/search", json={"question": QUESTION, "mode": "deep"})
        assert r.status_code == 503 and "LLM model file not found" in r.text
        assert c.post("/search", json={"question": QUESTION, "mode": "hybrid"}).status_code == 200


def test_search_defaults_to_fast_and_k_10(client):
    body = client.post("/search", json={"question": QUESTION}).json()
    assert body["mode"] == "hybrid" and body["requested_mode"] == "fast" and len(body["results"]) == 10


def test_question_of_exactly_the_limit_is_accepted(client):
    question = ("rachel altar " * 200)[:MAX_QUESTION_CHARS - 1] + "x"
    assert len(question) == MAX_QUESTION_CHARS
    r = client.post("/search", json={"question": question, "mode": "bm25", "k": 1})
    assert r.status_code == 200, r.text


@pytest.mark.parametrize(
    "body, field, says",
    [
        ({"question": ""}, "question", "the question is empty"),
        ({"question": "  \n\t  "}, "question", "the question is empty"),
        ({"question": "x" * (MAX_QUESTION_CHARS + 1)}, "question", f"is {MAX_QUESTION_CHARS + 1} characters long; the limit is 2000"),
        ({"question": QUESTION, "k": 0}, "k", "greater than or equal to 1"),
        ({"question": QUESTION, "k": 51}, "k", "less than or equal to 50"),
        ({"question": QUESTION, "k": "ten"}, "k", "valid integer"),
        ({"k": 5}, "question", "Field required"),
        ({"question": 42}, "question", "valid string"),
        ({"question": QUESTION, "top_k": 5}, "top_k", "Extra inputs are not permitted"),
    ],
)
@pytest.mark.parametrize("route", ["/search", "/ask"])
def test_invalid_requests_are_422_with_a_readable_message(client, route, body, field, says):
    r = client.post(route, json=body)
    assert r.status_code == 422, r.text
    out = r.json()
    assert out["error"]["code"] == "invalid_request"
    assert out["error"]["message"].startswith(f"{field}: ") and says in out["error"]["message"]
    assert [e["field"] for e in out["error"]["fields"]] == [field]


def test_unknown_mode_lists_the_valid_ones(client, small_index):
    r = client.post("/search", json={"question": QUESTION, "mode": "turbo"})
    assert r.status_code == 422
    error = r.json()["error"]["message"]
    assert error.startswith("mode: unknown mode 'turbo': choose one of ")
    listed = error.rsplit("choose one of ", 1)[1].split(", ")
    assert listed == small_index.settings.mode_names and {"fast", "accurate", "bm25", "vector", "hybrid"} <= set(listed)
    assert client.post("/ask", json={"question": QUESTION, "mode": "turbo"}).status_code == 422


def test_body_that_is_not_json(client):
    r = client.post("/search", content=b"{not json", headers={"Content-Type": "application/json"})
    assert r.status_code == 422 and "not valid JSON" in r.json()["error"]["message"]


def test_accurate_without_a_trained_model_is_503_while_fast_works(client):
    r = client.post("/search", json={"question": QUESTION, "mode": "accurate"})
    assert r.status_code == 503
    assert "reranker" in r.json()["error"]["message"] and "ragfunnel train" in r.json()["error"]["message"]
    r = client.post("/ask", json={"question": QUESTION, "mode": "accurate"})
    assert r.status_code == 503 and r.headers["content-type"].startswith("application/json")
    assert "reranker" in r.json()["error"]["message"]
    assert client.post("/search", json={"question": QUESTION, "mode": "fast"}).status_code == 200
    assert client.post("/ask", json={"question": QUESTION, "mode": "fast"}).status_code == 200


# ---- /ask -----------------------------------------------------------------------------------------------------------


def ask_events(client, question, **kw):
    with client.stream("POST", "/ask", json={"question": question, **kw}) as r:
        assert r.status_code == 200, r.read()
        assert r.headers["content-type"].startswith("text/event-stream")
        assert r.headers["cache-control"] == "no-cache"
        return parse_sse(r.read().decode())


def test_ask_streams_tokens_then_one_done_with_citations(client, serve_pipeline):
    events = ask_events(client, QUESTION, mode="fast", k=5)
    names = [e for e, _ in events]
    assert names[-1] == "done" and set(names[:-1]) == {"token"} and len(names) > 5
    tokens = "".join(json.loads(d)["text"] for e, d in events if e == "token")
    result = json.loads(events[-1][1])
    assert result["llm"] == "fake"  # it quotes the line sharing most content words with the question, and cites it
    assert not result["refused"] and result["answer"] and "CITATION" not in tokens
    assert tokens.strip() == result["answer"]  # citation lines held back from the stream
    (citation,) = result["citations"]
    assert re.search(rf"\[{citation['source_id']}\]$", result["answer"])
    doc = serve_pipeline.store.document(citation["id"])
    lines = {u.unit_id: u.render() for u in doc.units}
    assert citation["lines"] == [lines[u] for u in citation["unit_ids"]]
    assert citation["label"] == doc.label and citation["lines"][0] in result["answer"]
    assert [s["rank"] for s in result["scenes"]] == [1, 2, 3, 4, 5]
    assert citation["id"] in {s["id"] for s in result["scenes"]}
    assert {"retrieval", "prompt", "llm_first_token", "llm_total", "validation", "total"} == set(result["timings"])
    assert [s["name"] for s in result["trace"]["stages"]][-4:] == ["prompt", "gate", "generate", "validate"]
    assert result["drafts"][0].startswith(tokens.strip())


def test_ask_aggregate_lists_every_scene_each_with_its_citations(client, serve_pipeline):
    """POST /ask with an aggregation question: route aggregate, every scene where Joey says "Ross" (in the small
    index: S01E01, E02, E04), each item citing its own lines; a count question gets the count."""
    events = ask_events(client, 'In which scenes does Joey say "Ross"?', mode="fast", k=5)
    assert [e for e, _ in events] == ["done"]
    result = json.loads(events[-1][1])
    assert result["route"] == "aggregate" and result["route_info"]["source"] == "rule" and result["reader"] == "aggregate"
    expected = set()
    for doc_id in serve_pipeline.store.doc_ids():
        for u in serve_pipeline.store.document(doc_id).units:
            if any(s.startswith("Joey") for s in u.speakers) and re.search(r"\bross\b", u.text, re.I):
                expected.add(doc_id)
    assert expected and {i["id"] for i in result["items"]} == expected
    for item in result["items"]:
        assert item["matches"] >= len(item["citations"]) >= 1
        assert all(c["id"] == item["id"] and c["quote"].startswith("Joey") for c in item["citations"])
    counted = ask_events(client, 'How many times does Joey say "Ross"?', mode="fast", k=5)
    assert json.loads(counted[-1][1])["count"] == sum(i["matches"] for i in result["items"])
    r = client.post("/search", json={"question": 'Which episodes mention Monica?', "k": 3})
    body = r.json()
    assert r.status_code == 200 and body["route"] == "aggregate" and len(body["items"]) == 3  # three episodes
    assert [i["id"] for i in body["items"]] == ["s01_e01", "s01_e02", "s01_e04"] and len(body["results"]) == 3
    r = client.post("/search", json={"question": 'Which episodes mention Monica?', "route": "lookup", "k": 3})
    assert r.json()["route"] == "lookup" and r.json()["items"] is None
    r = client.post("/search", json={"question": "x", "route": "sideways"})
    assert r.status_code == 422


def test_ask_with_a_history_answers_the_rewritten_follow_up(client):
    history = [{"role": "user", "content": "Who did Rachel dump at the altar?"}, {"role": "assistant", "content": "Barry [1]"}]
    events = ask_events(client, "Why did she leave him?", history=history, reader="evidence", k=3)
    result = json.loads(events[-1][1])
    assert result["question"] == "Why did Rachel leave Barry?"
    assert result["rewrite"] == {"asked": "Why did she leave him?", "searched": "Why did Rachel leave Barry?", "by": "rules"}
    assert result["trace"]["stages"][0]["name"] == "rewrite"
    plain = json.loads(ask_events(client, QUESTION, reader="evidence", k=3)[-1][1])
    assert plain["rewrite"] is None
    bad = client.post("/ask", json={"question": "Why?", "history": [{"role": "robot", "content": "x"}]})
    assert bad.status_code == 422 and "error" in bad.json()


def test_ask_out_of_scope_is_refused(client):
    events = ask_events(client, OUT_OF_SCOPE)
    result = json.loads(events[-1][1])
    assert result["refused"] and result["answer"] == REFUSAL and result["citations"] == []
    # refused by the model, or before any LLM call when nothing retrieved is close to the question
    assert "".join(json.loads(d)["text"] for e, d in events if e == "token").strip() in (REFUSAL, "")


class SecondTimeLucky:
    """A first reply with no valid citation (the check sends it back), then the fake LLM's."""

    name = "scripted"

    def __init__(self):
        self.calls = 0

    def stream(self, system, user, max_tokens):
        self.calls += 1
        reply = "Barry, I think [1]." if self.calls == 1 else FakeLLM().reply(user)
        yield from re.findall(r"\s*\S+", reply)


def test_ask_retry_event_between_two_replies(make_app):
    with TestClient(make_app(llm=SecondTimeLucky())) as c:
        events = ask_events(c, QUESTION)
    names = [e for e, _ in events]
    retry = names.index("retry")
    assert names[:retry] == ["token"] * retry and names[retry + 1 : -1] == ["token"] * (len(names) - retry - 2)
    result = json.loads(events[-1][1])
    assert result["attempts"] == 2 and result["citations"] and json.loads(events[retry][1])["reason"] == "no valid citation"


def test_ask_validated_streams_only_the_checked_answer(make_app):
    with TestClient(make_app(llm=SecondTimeLucky())) as c:
        events = ask_events(c, QUESTION, stream="validated")
        refused = ask_events(c, "What is the capital of Mongolia?", stream="validated")
    assert [e for e, _ in events] == ["token", "done"]  # no draft, no retry: the withdrawn reply never showed
    result = json.loads(events[-1][1])
    assert result["attempts"] == 2 and json.loads(events[0][1])["text"] == result["answer"]
    assert "Barry, I think" not in events[0][1] and result["drafts"][0].startswith("Barry, I think")
    assert [e for e, _ in refused][-1] == "done" and json.loads(refused[-1][1])["refused"]


def test_ask_failure_after_the_stream_started_is_an_error_event(make_app):
    class BreaksMidway:
        name = "breaks"

        def stream(self, system, user, max_tokens):
            yield "Barry "
            raise ConfigError("the model file vanished: reinstall it")

    with TestClient(make_app(llm=BreaksMidway())) as c:
        events = ask_events(c, QUESTION)
    assert events[0] == ("token", json.dumps({"text": "Barry "}))
    assert events[-1] == ("error", json.dumps({"error": {"code": "unavailable", "message": "the model file vanished: reinstall it"}}))
    assert "done" not in [e for e, _ in events]


def test_without_an_llm_ask_answers_with_a_reader_and_only_the_llm_reader_is_503(make_app, tmp_path):
    app = make_app(llm=None, llm_name=f"local:{tmp_path / 'missing.gguf'}")
    with TestClient(app) as c:
        r = c.post("/ask", json={"question": QUESTION, "reader": "llm"})
        assert r.status_code == 503 and ("llama-cpp-python" in r.json()["error"]["message"] or "not found" in r.json()["error"]["message"])
        health = c.get("/health").json()
        assert health["status"] == "degraded" and health["llm"] is None and health["llm_error"] == r.json()["error"]["message"]
        assert c.post("/search", json={"question": QUESTION}).status_code == 200
        events = ask_events(c, QUESTION)  # the default: a reader that needs no LLM, its answer first
        kinds = [e for e, _ in events]
        assert kinds[0] in ("extractive", "evidence") and kinds[-1] == "done" and "token" not in kinds
        done = json.loads(events[-1][1])
        assert done["reader"] == kinds[0] and done["llm"] == "none"


# ---- /scenes, /health, /results, docs and page ------------------------------------------------------------------


def test_scene_is_the_full_scene_with_speakers_and_spans(client, small_index):
    doc = next(d for d in small_index.docs if any("altar" in u.text.lower() for u in d.units))
    r = client.get(f"/scenes/{doc.doc_id}", params={"q": QUESTION})
    assert r.status_code == 200
    scene = r.json()
    assert (scene["id"], scene["label"], scene["title"]) == (doc.doc_id, doc.label, doc.title)
    assert scene["metadata"]["season"] == doc.metadata["season"]
    assert [ln["id"] for ln in scene["lines"]] == [u.unit_id for u in doc.units]
    assert [ln["speakers"] for ln in scene["lines"]] == [list(u.speakers) for u in doc.units]
    assert [ln["rendered"] for ln in scene["lines"]] == [u.render() for u in doc.units]
    assert [ln["direction"] for ln in scene["lines"]] == [u.is_direction for u in doc.units]
    altar = [ln for ln in scene["lines"] if "altar" in ln["rendered"].lower()]
    assert altar and all(any(ln["rendered"][s:e].lower() == "altar" for s, e in ln["spans"]) for ln in altar)
    plain = client.get(f"/scenes/{doc.doc_id}").json()
    assert all(ln["spans"] == [] for ln in plain["lines"])


def test_unknown_scene_is_404(client):
    r = client.get("/scenes/s99_e99_c99")
    assert r.status_code == 404 and r.json() == {"error": {"code": "not_found", "message": "no scene with id 's99_e99_c99'"}}


def test_health(client, small_index):
    h = client.get("/health").json()
    assert h["status"] == "ok" and h["index_loaded"] and h["index_error"] is None
    assert h["documents"] == len(small_index.docs) and h["chunks"]["scene"] == len(small_index.docs)
    assert {"fast", "accurate", "bm25", "vector", "hybrid"} <= set(h["modes"]) and h["default_mode"] == "hybrid"
    assert (h["version"], h["llm"], h["auth_required"]) == (__version__, "fake", False)


def test_missing_index_degrades_to_503s(tmp_path):
    from ragfunnel.config import load_settings
    from ragfunnel.serve.app import create_app

    app = create_app(load_settings(home=tmp_path, index=tmp_path / "nothing"), llm=FakeLLM(), token="")
    with TestClient(app) as c:
        h = c.get("/health").json()
        assert not h["index_loaded"] and h["status"] == "degraded" and "no index at" in h["index_error"]
        for r in (c.post("/search", json={"question": QUESTION}), c.post("/ask", json={"question": QUESTION}),
                  c.get("/scenes/s01_e01_c01")):
            assert r.status_code == 503 and "ragfunnel index" in r.json()["error"]["message"]
        assert c.get("/").status_code == 200


def test_results_endpoint(make_app, tmp_path):
    committed = RESULTS / "first_stage.json"
    with TestClient(make_app()) as c:
        if committed.is_file():
            assert c.get("/results/first_stage").json() == json.loads(committed.read_text())
        assert c.get("/results/..%2Fsecrets").status_code == 404
    (tmp_path / "first_stage.json").write_text('{"direct": {"bm25": {"recall@5": 0.5}}}')
    with TestClient(make_app(results_dir=tmp_path)) as c:
        assert c.get("/results/first_stage").json() == {"direct": {"bm25": {"recall@5": 0.5}}}
    with TestClient(make_app(results_dir=tmp_path / "none")) as c:
        r = c.get("/results/first_stage")
        assert r.status_code == 404 and "no committed results" in r.json()["error"]["message"]


def test_results_directory_defaults_to_the_current_directory_and_says_when_there_is_none(make_app, tmp_path, monkeypatch):
    monkeypatch.delenv("RAGFUNNEL_RESULTS_DIR", raising=False)
    monkeypatch.chdir(tmp_path)  # no docs/results here, as when the package is installed from a wheel
    with TestClient(make_app(results_dir=None)) as c:
        r = c.get("/results/first_stage")
        assert r.status_code == 404 and "no results directory" in r.json()["error"]["message"] and "--results-dir" in r.json()["error"]["message"]
    local = tmp_path / "docs" / "results" / "first_stage"
    local.mkdir(parents=True)
    (local / "first_stage.json").write_text('{"direct": {}}')
    with TestClient(make_app(results_dir=None)) as c:
        assert c.get("/results/first_stage").json() == {"direct": {}}
        r = c.get("/results/other")
        assert r.status_code == 404 and "has no other.json" in r.json()["error"]["message"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "first_stage.json").write_text('{"reworded": {}}')
    monkeypatch.setenv("RAGFUNNEL_RESULTS_DIR", str(elsewhere))  # what `serve --workers N --results-dir` passes on
    with TestClient(make_app(results_dir=None)) as c:
        assert c.get("/results/first_stage").json() == {"reworded": {}}


def test_openapi_docs(client):
    spec = client.get("/openapi.json").json()
    assert {"/search", "/ask", "/scenes/{scene_id}", "/health", "/results/{name}"} <= set(spec["paths"])
    body = spec["components"]["schemas"]["QueryBody"]["properties"]
    assert body["k"]["minimum"] == 1 and body["k"]["maximum"] == 50 and body["question"]["maxLength"] == MAX_QUESTION_CHARS
    assert "text/event-stream" in spec["paths"]["/ask"]["post"]["responses"]["200"]["content"]
    schemas = spec["components"]["schemas"]
    assert {"SearchResponse", "SearchHit", "Line", "SourceScore", "TraceInfo"} <= set(schemas)  # ragfunnel.schema
    assert {"id", "label", "title", "rank", "score", "sources", "lines"} <= set(schemas["SearchHit"]["properties"])
    answer = schemas["AnswerResponse"]["properties"]  # the data of /ask's done event
    assert answer["scenes"]["items"] == {"$ref": "#/components/schemas/SearchHit"} and "Citation" in schemas
    for page, asset in (("/docs", "swagger-ui-bundle.js"), ("/redoc", "redoc.standalone.js")):
        html = client.get(page)
        assert html.status_code == 200 and f"/docs-assets/{asset}" in html.text
        assert "cdn" not in html.text.lower() and "https://" not in html.text  # served from here, not a CDN
        assert client.get(f"/docs-assets/{asset}").status_code == 200


def test_page_and_static_files_are_local(client):
    page = client.get("/")
    assert page.status_code == 200 and 'id="ask-q"' in page.text
    files = static_files()
    assert {p.name for p in files} >= {"index.html", "app.js", "charts.js", "style.css"}
    for p in files:
        assert client.get(f"/static/{p.name}").status_code == 200
        text = p.read_text()
        # nothing loaded from elsewhere: no remote src/href/url()/import/fetch
        assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//|url\(\s*["']?(https?:)?//|@import|fetch\(\s*["']https?:""", text), p.name


# ---- auth -------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("from_env", [False, True])
def test_bearer_token_guards_every_api_route(make_app, monkeypatch, from_env):
    if from_env:
        monkeypatch.setenv("RAGFUNNEL_API_TOKEN", "s3cret")
        app = make_app(token=None)
    else:
        monkeypatch.delenv("RAGFUNNEL_API_TOKEN", raising=False)
        app = make_app(token="s3cret")
    calls = [
        ("post", "/search", {"json": {"question": QUESTION, "k": 1}}),
        ("post", "/ask", {"json": {"question": QUESTION, "k": 1}}),
        ("get", "/scenes/s01_e04_c01", {}),
        ("get", "/results/first_stage", {}),
    ]
    with TestClient(app) as c:
        for method, path, kw in calls:
            none = getattr(c, method)(path, **kw)
            assert none.status_code == 401, path
            assert none.headers["www-authenticate"] == "Bearer" and "got no token" in none.json()["error"]["message"]
            wrong = getattr(c, method)(path, headers={"Authorization": "Bearer nope"}, **kw)
            assert wrong.status_code == 401 and "got a wrong token" in wrong.json()["error"]["message"]
            basic = getattr(c, method)(path, headers={"Authorization": "Basic czNjcmV0"}, **kw)
            assert basic.status_code == 401
            right = getattr(c, method)(path, headers={"Authorization": "Bearer s3cret"}, **kw)
            assert right.status_code == 200, (path, right.text)
        for path in ("/", "/health", "/static/app.js", "/docs", "/openapi.json", "/docs-assets/swagger-ui.css"):
            assert c.get(path).status_code == 200, path
        assert c.get("/health").json()["auth_required"] is True


def test_no_token_means_no_auth(make_app, monkeypatch):
    monkeypatch.delenv("RAGFUNNEL_API_TOKEN", raising=False)
    with TestClient(make_app(token=None)) as c:
        assert c.post("/search", json={"question": QUESTION, "k": 1}).status_code == 200
        assert c.get("/health").json()["auth_required"] is False


# ---- concurrency on a live server ---------------------------------------------------------------------------------


def test_parallel_searches_on_a_live_server(live_url, serve_pipeline):
    cases = [(q, m) for q in (QUESTION, "Monica's new boyfriend", "Ross is getting divorced", "the job interview")
             for m in ("fast", "bm25", "vector", "hybrid", "fast")]
    assert len(cases) == 20
    expected = {(q, m): [c.doc_id for c in serve_pipeline.search(q, m, k=5).candidates] for q, m in cases}
    start = threading.Barrier(len(cases))

    def one(case):
        q, m = case
        with httpx.Client(base_url=live_url, timeout=60) as http:
            start.wait()
            r = http.post("/search", json={"question": q, "mode": m, "k": 5})
        return case, r.status_code, r.json()

    with ThreadPoolExecutor(len(cases)) as pool:
        results = list(pool.map(one, cases))
    for case, status, body in results:
        assert status == 200, body
        assert [x["id"] for x in body["results"]] == expected[case], case
    with httpx.Client(base_url=live_url, timeout=30) as http:
        assert http.get("/health").json()["status"] == "ok"  # still serving


def test_a_default_mode_that_cannot_run_does_not_stop_the_server(small_index, serve_pipeline):
    from ragfunnel.pipeline import Pipeline
    from ragfunnel.serve.app import create_app

    settings = small_index.settings.model_copy(update={"default_mode": "accurate"})
    app = create_app(settings, pipeline=Pipeline(settings, store=small_index.store), llm=FakeLLM(), token="")
    with TestClient(app) as c:
        assert c.get("/health").json()["index_loaded"] is True
        assert c.post("/search", json={"question": QUESTION, "mode": "accurate"}).status_code == 503
        assert c.post("/search", json={"question": QUESTION, "mode": "fast"}).status_code == 200


def test_an_llm_that_cannot_load_at_startup_makes_ask_503(make_app):
    class Unloadable(FakeLLM):
        name = "unloadable"

        def warm_up(self):
            raise ConfigError("LLM model file not found: /nowhere.gguf")

    class Loads(FakeLLM):
        warmed = 0

        def warm_up(self):
            Loads.warmed += 1

    with TestClient(make_app(llm=Unloadable())) as c:
        assert c.get("/health").json()["llm_error"] == "LLM model file not found: /nowhere.gguf"
        r = c.post("/ask", json={"question": QUESTION, "reader": "llm"})
        assert r.status_code == 503 and r.json()["error"]["message"] == "LLM model file not found: /nowhere.gguf"
    with TestClient(make_app(llm=Loads())) as c:
        assert Loads.warmed == 1 and c.get("/health").json()["llm"] == "fake"


def test_app_from_env_serves_the_index_named_by_the_environment(small_index, monkeypatch):
    """`ragfunnel serve --workers N` hands settings to its worker processes through the environment."""
    import asyncio.base_events

    from ragfunnel.serve.app import app_from_env

    monkeypatch.setattr(asyncio.base_events, "_set_nodelay", asyncio.base_events._set_nodelay)  # restored after
    monkeypatch.setenv("RAGFUNNEL_INDEX", str(small_index.path))
    monkeypatch.setenv("RAGFUNNEL_LLM", "fake")
    monkeypatch.delenv("RAGFUNNEL_API_TOKEN", raising=False)
    with TestClient(app_from_env()) as c:
        h = c.get("/health").json()
        assert h["documents"] == len(small_index.docs) and h["llm"] == "fake"
        r = c.post("/search", json={"question": "Who did Rachel dump at the altar?", "mode": "fast", "k": 3})
        assert r.status_code == 200 and len(r.json()["results"]) == 3


def test_worker_sockets_get_tcp_nodelay(monkeypatch):
    """uvicorn's multi-worker socket has proto 0; asyncio would leave Nagle on (+40 ms per keep-alive reply)."""
    import asyncio.base_events
    import socket

    from ragfunnel.serve.app import _nodelay_for_shared_sockets

    monkeypatch.setattr(asyncio.base_events, "_set_nodelay", asyncio.base_events._set_nodelay)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:  # proto 0, as uvicorn binds it
        asyncio.base_events._set_nodelay(sock)
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 0  # the stock rule skips it
        _nodelay_for_shared_sockets()
        asyncio.base_events._set_nodelay(sock)
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0


# ---- filters ----------------------------------------------------------------------------------------------------


def test_search_with_a_filter_returns_k_scenes_that_match(client, serve_pipeline):
    """A filter on the episode (a few percent of the index): k scenes of that episode, the same as the Python API."""
    from ragfunnel.store.filters import Filter

    body = {"question": QUESTION, "mode": "hybrid", "k": 5, "filter": {"episode": 4, "scene": {"gte": 2}}}
    r = client.post("/search", json=body)
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    assert len(results) == 5 and all(x["id"].startswith("s01_e04_") and x["metadata"]["scene"] >= 2 for x in results)
    expected = serve_pipeline.search(QUESTION, "hybrid", k=5, where=Filter.parse(["episode=4", "scene>=2"])).candidates
    assert [x["id"] for x in results] == [c.doc_id for c in expected]
    (stage,) = [s for s in r.json()["trace"]["stages"] if s["name"] == "filter"]
    assert stage["filter"] == "episode=4, scene>=2" and stage["documents"] >= 5
    glob = client.post("/search", json={"question": QUESTION, "k": 3, "filter": {"id": "s01_e02_*"}}).json()
    assert len(glob["results"]) == 3 and all(x["id"].startswith("s01_e02_") for x in glob["results"])
    nothing = client.post("/search", json={"question": QUESTION, "filter": {"season": 9}}).json()
    assert nothing["results"] == [] and any("no document matches" in n for n in nothing["notes"])


@pytest.mark.parametrize("bad, says", [
    ({"season": {"between": [1, 2]}}, "unknown filter operator 'between'"),
    ({"date": {"gte": "2020-13-45"}}, "not a valid date"),
    ({"page": "first"}, "page is a page number"),
    ({"season": None}, "is null"),
    ([1, 2], "valid dictionary"),
])
@pytest.mark.parametrize("route", ["/search", "/ask"])
def test_a_bad_filter_is_422_with_a_readable_message(client, route, bad, says):
    r = client.post(route, json={"question": QUESTION, "filter": bad})
    assert r.status_code == 422, r.text
    assert r.json()["error"]["message"].startswith("filter: ") and says in r.json()["error"]["message"], r.json()


def test_ask_answers_from_the_filtered_scenes(client):
    r = client.post("/ask", json={"question": QUESTION, "k": 3, "filter": {"episode": 2}})
    assert r.status_code == 200, r.text
    done = json.loads([data for event, data in parse_sse(r.text) if event == "done"][-1])
    assert done["scenes"] and all(s["id"].startswith("s01_e02_") for s in done["scenes"])
