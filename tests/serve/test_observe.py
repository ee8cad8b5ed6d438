"""Observability (issue 21.8): X-Request-ID, structured JSON logs with per-stage timings, Prometheus /metrics."""

from __future__ import annotations

import json
import logging
import re

import pytest
from fastapi.testclient import TestClient

from ragfunnel.serve.observe import JsonFormatter, log_config

pytestmark = pytest.mark.integration

QUESTION = "Who did Rachel dump at the altar?"


def metric(text: str, name: str, **labels) -> float:
    """The value of one sample of the Prometheus text `text` (labels must all match)."""
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', line.split(" ")[0] if "{" not in line else line[: line.rindex("}") + 1]))
        if all(found.get(k) == v for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no sample {name} {labels} in\n{text[:3000]}")


def test_every_response_has_a_request_id(client):
    r = client.post("/search", json={"question": QUESTION, "k": 2})
    assert re.fullmatch(r"[0-9a-f]{32}", r.headers["x-request-id"])
    assert client.get("/health", headers={"X-Request-ID": "abc-123"}).headers["x-request-id"] == "abc-123"
    bad = client.get("/health", headers={"X-Request-ID": "x" * 500}).headers["x-request-id"]
    assert bad != "x" * 500 and len(bad) == 32
    assert client.get("/", headers={"Host": "evil.example"}).headers["x-request-id"]  # refused requests too


def test_metrics_count_requests_stages_tokens_and_the_index(make_app, small_index):
    with TestClient(make_app()) as c:
        for _ in range(2):
            assert c.post("/search", json={"question": QUESTION, "mode": "hybrid", "k": 3}).status_code == 200
        assert c.post("/search", json={"question": ""}).status_code == 422
        assert c.post("/ask", json={"question": QUESTION}).status_code == 200
        r = c.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    text = r.text
    assert metric(text, "ragfunnel_http_requests_total", route="/search", method="POST", status="200") == 2
    assert metric(text, "ragfunnel_http_requests_total", route="/search", method="POST", status="422") == 1
    assert metric(text, "ragfunnel_http_request_seconds_count", route="/search") == 3
    assert metric(text, "ragfunnel_search_seconds_count", mode="hybrid") >= 2
    assert metric(text, "ragfunnel_stage_seconds_count", mode="hybrid", stage="fuse") >= 2
    assert metric(text, "ragfunnel_stage_seconds_count", mode="hybrid", stage="retrieve:bm25_scene") >= 2
    assert metric(text, "ragfunnel_llm_tokens_total", mode="hybrid") > 0
    assert metric(text, "ragfunnel_answer_first_token_seconds_count", mode="hybrid") == 1
    assert metric(text, "ragfunnel_index_documents") == len(small_index.docs)
    assert metric(text, "ragfunnel_index_loaded") == 1 and metric(text, "ragfunnel_answers_in_progress") == 0
    assert "ragfunnel_index_generation_info{" in text
    # every metric the committed Grafana dashboard plots is one the server exports
    from tests.conftest import REPO

    dashboard = (REPO / "docs" / "grafana" / "ragfunnel.json").read_text()
    for name in set(re.findall(r"ragfunnel_[a-z_]+", dashboard)):
        assert re.search(rf"^{name}[{{ ]", text, re.M), f"the dashboard plots {name}, which /metrics lacks"


def test_metrics_need_the_api_key_when_one_is_set(make_app):
    with TestClient(make_app(token="k")) as c:
        assert c.get("/metrics").status_code == 401
        assert c.get("/metrics", headers={"Authorization": "Bearer k"}).status_code == 200


def test_json_logs_carry_the_request_id_and_stage_timings(client, caplog):
    caplog.set_level(logging.INFO, logger="ragfunnel")
    r = client.post("/search", json={"question": QUESTION, "k": 2}, headers={"X-Request-ID": "req-42"})
    assert r.status_code == 200
    lines = [json.loads(JsonFormatter().format(rec)) for rec in caplog.records]
    search = next(x for x in lines if x["message"] == "search")
    assert search["request_id"] == "req-42" and search["mode"] == "hybrid" and search["results"] == 2
    assert "fuse" in search["stages"] and all(isinstance(v, float) for v in search["stages"].values())
    access = next(x for x in lines if x["logger"] == "ragfunnel.access")
    assert (access["request_id"], access["route"], access["status"], access["method"]) == ("req-42", "/search", 200, "POST")
    assert access["ms"] > 0 and access["level"] == "info" and access["ts"].endswith("Z")


def test_log_config_json_routes_uvicorn_and_ragfunnel_through_the_json_formatter():
    config = log_config("json", "info")
    assert config["formatters"]["main"]["()"].endswith("JsonFormatter")
    assert config["loggers"]["ragfunnel"]["handlers"] == ["main"] and config["loggers"]["uvicorn.access"]["handlers"] == []
    logging.config.dictConfig(config)  # valid for logging
    logging.config.dictConfig({"version": 1, "disable_existing_loggers": False})


import logging.config  # noqa: E402
