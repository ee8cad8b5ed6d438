"""The server's limits (issue 21.2): body size (413, also for a chunked body, cut off while it is read), question
length, k and filter size (422), per-client rate (429 + Retry-After), LLM answers at once (503 + Retry-After, no
queue), response size; and the unit / document limits at indexing."""

from __future__ import annotations

import json
import time

import httpx
import pytest
from fastapi.testclient import TestClient

from ragfunnel.config import Limits
from ragfunnel.serve.limits import RateLimiter
from tests.serve.conftest import SlowFakeLLM

pytestmark = pytest.mark.integration

QUESTION = "Who did Rachel dump at the altar?"


def limited_app(serve_pipeline, small_index, llm=None, **limits):
    """The app over the small index with these `[limits]`."""
    from ragfunnel.generate.llm import FakeLLM
    from ragfunnel.serve.app import create_app

    settings = small_index.settings.model_copy(update={"limits": Limits(**limits)})
    return create_app(settings, serve_pipeline, llm or FakeLLM(), token="")


def error_of(r, status: int, code: str) -> str:
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert error["code"] == code, error
    return error["message"]


def test_a_body_over_the_limit_is_413_before_it_is_read(serve_pipeline, small_index):
    with TestClient(limited_app(serve_pipeline, small_index, max_body_bytes=4096)) as c:
        big = json.dumps({"question": "x" * 10_000})
        assert "limit is 4,096 bytes" in error_of(c.post("/search", content=big, headers={"Content-Type": "application/json"}), 413, "too_large")
        assert c.post("/search", json={"question": QUESTION, "k": 1}).status_code == 200


def test_a_chunked_body_is_cut_off_once_it_passes_the_limit(serve_pipeline, small_index):
    sent = []

    def chunks():
        for _ in range(1000):  # 1 MB in all, never declared
            sent.append(1)
            yield b" " * 1024

    with TestClient(limited_app(serve_pipeline, small_index, max_body_bytes=4096)) as c:
        r = c.post("/search", content=chunks(), headers={"Content-Type": "application/json"})
        error_of(r, 413, "too_large")


def test_question_k_and_filter_beyond_the_configured_limits_are_422(serve_pipeline, small_index):
    with TestClient(limited_app(serve_pipeline, small_index, max_question_chars=20, max_k=5, max_filter_terms=3)) as c:
        assert "the limit is 20" in error_of(c.post("/search", json={"question": "Rachel " * 10}), 422, "invalid_request")
        assert "at most 5" in error_of(c.post("/search", json={"question": QUESTION, "k": 6}), 422, "invalid_request")
        many = {"season": [1, 2, 3, 4], "episode": 1}
        assert "filter" in error_of(c.post("/ask", json={"question": QUESTION, "filter": many}), 422, "invalid_request")
        assert c.post("/search", json={"question": "Rachel altar", "k": 5, "filter": {"season": 1}}).status_code == 200


def test_a_client_over_its_rate_gets_429_with_retry_after(serve_pipeline, small_index):
    with TestClient(limited_app(serve_pipeline, small_index, rate_per_minute=6, rate_burst=2)) as c:
        ok = [c.post("/search", json={"question": QUESTION, "k": 1}).status_code for _ in range(2)]
        r = c.post("/search", json={"question": QUESTION, "k": 1})
        assert ok == [200, 200]
        assert "too many requests" in error_of(r, 429, "rate_limited")
        assert 1 <= int(r.headers["Retry-After"]) <= 10
        assert c.get("/health").status_code == 200  # not limited


def test_rate_limiter_refills_with_time():
    now = [0.0]
    limiter = RateLimiter(per_minute=60, burst=1, clock=lambda: now[0])
    assert limiter.retry_after("a") == 0 and limiter.retry_after("a") == pytest.approx(1.0)
    assert limiter.retry_after("b") == 0  # per client
    now[0] = 1.0
    assert limiter.retry_after("a") == 0


def test_answers_beyond_the_concurrent_limit_get_503_retry_after_not_a_queue(serve_pipeline, small_index):
    from ragfunnel.serve.background import serve_in_thread

    app = limited_app(serve_pipeline, small_index, llm=SlowFakeLLM(delay=0.05), max_concurrent_answers=1)
    with serve_in_thread(app) as url, httpx.Client(base_url=url, timeout=60) as http:
        with http.stream("POST", "/ask", json={"question": QUESTION}) as first:
            assert first.status_code == 200
            lines = first.iter_lines()
            next(lines)  # the first answer is being generated
            second = http.post("/ask", json={"question": QUESTION})
            assert "limit" in error_of(second, 503, "busy") and second.headers["Retry-After"]
            evidence = http.post("/ask", json={"question": QUESTION, "reader": "evidence"})
            assert evidence.status_code == 200  # no LLM, no slot
            assert http.post("/search", json={"question": QUESTION}).status_code == 200
            assert any(line == "event: done" for line in lines)
        deadline = time.monotonic() + 10
        while app.state.rf.answer_slots.used and time.monotonic() < deadline:
            time.sleep(0.05)
        assert http.post("/ask", json={"question": QUESTION}).status_code == 200


def test_a_response_over_the_limit_asks_for_a_smaller_k(serve_pipeline, small_index):
    app = limited_app(serve_pipeline, small_index)
    with TestClient(app) as c:
        app.state.rf.settings.limits.max_response_bytes = 2000
        message = error_of(c.post("/search", json={"question": QUESTION, "k": 10}), 422, "response_too_large")
        assert "smaller k" in message


def test_limits_come_from_the_config_file(tmp_path):
    from ragfunnel.config import load_settings

    config = tmp_path / "config.toml"
    config.write_text("[limits]\nmax_body_bytes = 2048\nrate_per_minute = 0\nmax_concurrent_answers = 3\n")
    limits = load_settings(config).limits
    assert (limits.max_body_bytes, limits.rate_per_minute, limits.max_concurrent_answers) == (2048, 0, 3)
    assert limits.max_k == 50



def test_loopback_clients_are_not_rate_limited_unless_asked(serve_pipeline, small_index):
    from ragfunnel.serve.background import serve_in_thread

    for limit_loopback, expected in ((False, {200}), (True, {200, 429})):
        app = limited_app(serve_pipeline, small_index, rate_per_minute=6, rate_burst=1, rate_limit_loopback=limit_loopback)
        with serve_in_thread(app) as url, httpx.Client(base_url=url, timeout=30) as http:
            codes = {http.post("/search", json={"question": QUESTION, "k": 1}).status_code for _ in range(3)}
        assert codes == expected
