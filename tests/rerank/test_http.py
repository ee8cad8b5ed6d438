"""The JSON POST helper against a loopback server: retries, Retry-After, timeouts, failures that are safe to show."""

from __future__ import annotations

import time

import pytest

from ragfunnel.rerank.http import HTTPFailure, parse_retry_after, post_json
from tests.rerank.conftest import Reply


class Sleeps(list):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def test_posts_json_and_returns_the_reply(server):
    server.reply(Reply(body={"ok": [1, 2]}))
    assert post_json(server.url + "/v2/x", {"q": "é"}, {"Authorization": "Bearer k1"}, timeout=2) == {"ok": [1, 2]}
    (req,) = server.requests
    assert req.path == "/v2/x" and req.body == {"q": "é"}
    assert req.headers["authorization"] == "Bearer k1" and req.headers["content-type"] == "application/json"


def test_retries_once_on_5xx_then_gives_up(server):
    server.reply(Reply(500, {"message": "boom"}))
    sleeps = Sleeps()
    with pytest.raises(HTTPFailure) as info:
        post_json(server.url, {}, timeout=2, backoff=0.03, sleep=sleeps)
    assert str(info.value) == "HTTP 500" and info.value.status == 500
    assert len(server.requests) == 2 and sleeps == [0.03]


def test_retry_after_is_honoured_and_capped(server):
    server.reply(Reply(429, {}, {"Retry-After": "30"}), Reply(body={"ok": True}))
    sleeps = Sleeps()
    assert post_json(server.url, {}, timeout=2, max_retry_after=1.5, sleep=sleeps) == {"ok": True}
    assert sleeps == [1.5] and len(server.requests) == 2


def test_no_retry_on_other_4xx(server):
    server.reply(Reply(400, {"message": "bad"}))
    with pytest.raises(HTTPFailure, match="HTTP 400"):
        post_json(server.url, {}, timeout=2, sleep=Sleeps())
    assert len(server.requests) == 1


def test_timeout_is_retried_and_reported(server):
    server.reply(Reply(body={"late": True}, delay=0.3))
    t0 = time.perf_counter()
    with pytest.raises(HTTPFailure, match="^timed out$") as info:
        post_json(server.url, {}, timeout=0.1, sleep=Sleeps())
    assert info.value.retryable and info.value.status is None
    assert len(server.requests) == 2 and time.perf_counter() - t0 < 0.29 * 2


def test_malformed_json_is_not_retried(server):
    server.reply(Reply(body=b"<html>oops"))
    with pytest.raises(HTTPFailure, match="malformed JSON"):
        post_json(server.url, {}, timeout=2, sleep=Sleeps())
    assert len(server.requests) == 1


def test_refused_connection(closed_url):
    sleeps = Sleeps()
    with pytest.raises(HTTPFailure, match="^unreachable$"):
        post_json(closed_url, {}, timeout=1, backoff=0.01, sleep=sleeps)
    assert sleeps == [0.01]  # retried once


def test_redirects_are_not_followed(server):
    server.reply(Reply(307, {}, {"Location": "http://127.0.0.1:9/elsewhere"}))
    with pytest.raises(HTTPFailure, match="HTTP 307"):
        post_json(server.url, {}, {"Authorization": "Bearer secret"}, timeout=2, sleep=Sleeps())
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "header, seconds",
    [(None, None), ("", None), ("3", 3.0), ("0.5", 0.5), ("-4", 0.0), ("soon", None), ("nan", None),
     ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0)],
)
def test_parse_retry_after(header, seconds):
    assert parse_retry_after(header) == seconds


def test_api_key_explicit_then_env_and_blank_is_none(monkeypatch):
    from ragfunnel.rerank.http import api_key

    monkeypatch.setenv("SOME_API_KEY", "  from-env  ")
    assert api_key(None, "SOME_API_KEY") == "from-env"
    assert api_key(" given ", "SOME_API_KEY") == "given"
    assert api_key("", "SOME_API_KEY") is None  # an explicit blank key is no key, not a fall-back to the env
    monkeypatch.setenv("SOME_API_KEY", "   ")
    assert api_key(None, "SOME_API_KEY") is None
    monkeypatch.delenv("SOME_API_KEY")
    assert api_key(None, "SOME_API_KEY") is None
