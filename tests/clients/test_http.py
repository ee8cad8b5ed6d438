"""JSON POSTs and SSE streams against the loopback server: retries, Retry-After, timeouts, no redirects, failures
that are safe to show; the SSE reader."""

from __future__ import annotations

import io
import time

import pytest

from ragfunnel.clients.http import DONE, HTTPFailure, api_key, iter_events, parse_retry_after, post_json, stream_sse
from tests.clients.conftest import Sleeps
from tests.loopback import JSONReply as Reply
from tests.loopback import SSEReply

# ---- post_json ---------------------------------------------------------------------------------------------------


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
    monkeypatch.setenv("SOME_API_KEY", "  from-env  ")
    assert api_key(None, "SOME_API_KEY") == "from-env"
    assert api_key(" given ", "SOME_API_KEY") == "given"
    assert api_key("", "SOME_API_KEY") is None  # an explicit blank key is no key, not a fall-back to the env
    monkeypatch.setenv("SOME_API_KEY", "   ")
    assert api_key(None, "SOME_API_KEY") is None
    monkeypatch.delenv("SOME_API_KEY")
    assert api_key(None, "SOME_API_KEY") is None


# ---- SSE ---------------------------------------------------------------------------------------------------------


def test_iter_events_parses_fields_comments_and_multiline_data():
    raw = (
        b": a comment\r\n"
        b"event: first\r\ndata: {\"a\": 1}\r\n\r\n"
        b"data: line one\ndata:line two\nid: 7\n\n"
        b"\n\n"
        b"event: last\ndata: tail"  # no blank line at the end
    )
    assert list(iter_events(io.BytesIO(raw))) == [("first", '{"a": 1}'), ("message", "line one\nline two"), ("last", "tail")]


def parse_plain(event: str, data: str):
    return DONE if data == "[DONE]" else data


def test_stream_sends_json_and_asks_for_an_event_stream(server):
    server.reply(SSEReply(chunks=["data: a\n\n", "data: [DONE]\n\n"]))
    assert list(stream_sse(server.url + "/s", {"q": "é"}, {"Authorization": "Bearer k"}, parse_plain, timeout=2)) == ["a"]
    (req,) = server.requests
    assert req.path == "/s" and req.body == {"q": "é"} and req.headers["accept"] == "text/event-stream"
    assert req.headers["authorization"] == "Bearer k" and req.headers["content-type"] == "application/json"


def test_stream_retries_a_500_before_the_first_item(server):
    server.reply(SSEReply(500), SSEReply(chunks=["data: Hel\n\n", "data: lo\n\n", "data: [DONE]\n\n"]))
    waits = Sleeps()
    out = list(stream_sse(server.url + "/x", {"q": 1}, {}, parse_plain, timeout=2, sleep=waits))
    assert out == ["Hel", "lo"] and len(server.requests) == 2 and waits == [0.5]


def test_stream_honours_retry_after(server):
    server.reply(SSEReply(503, headers={"Retry-After": "1"}), SSEReply(chunks=["data: ok\n\n", "data: [DONE]\n\n"]))
    waits = Sleeps()
    assert list(stream_sse(server.url, {}, {}, parse_plain, timeout=2, max_retry_after=0.7, sleep=waits)) == ["ok"]
    assert waits == [0.7]


def test_stream_does_not_retry_after_the_first_item(server):
    server.reply(SSEReply(chunks=["data: partial\n\n"]))  # the connection closes without [DONE]
    got = []
    with pytest.raises(HTTPFailure, match=r"^stream ended before its end marker$"):
        for text in stream_sse(server.url, {}, {}, parse_plain, timeout=2, sleep=Sleeps()):
            got.append(text)
    assert got == ["partial"] and len(server.requests) == 1


def test_stream_times_out_and_gives_up(server):
    server.reply(SSEReply(delay=1.0, chunks=["data: late\n\n", "data: [DONE]\n\n"]))
    t0 = time.perf_counter()
    with pytest.raises(HTTPFailure, match=r"^timed out$"):
        list(stream_sse(server.url, {}, {}, parse_plain, timeout=0.2, retries=1, sleep=Sleeps()))
    assert len(server.requests) == 2 and time.perf_counter() - t0 < 1.5


def test_stream_times_out_between_events(server):
    server.reply(SSEReply(chunks=["data: one\n\n", "data: two\n\n"], gap=1.0))
    got = []
    with pytest.raises(HTTPFailure, match="timed out"):
        for text in stream_sse(server.url, {}, {}, parse_plain, timeout=0.2, sleep=Sleeps()):
            got.append(text)
    assert got == ["one"]


def test_error_events_fail_without_retry_unless_retryable(server):
    def parse_error(event, data):
        if data == "overloaded":
            raise HTTPFailure("error event overloaded_error", status=529)
        if data == "bad":
            raise HTTPFailure("error event invalid_request_error")
        return DONE if data == "[DONE]" else data

    server.reply(SSEReply(chunks=["data: bad\n\n"]))
    with pytest.raises(HTTPFailure, match=r"^error event invalid_request_error$"):
        list(stream_sse(server.url, {}, {}, parse_error, timeout=2, sleep=Sleeps()))
    assert len(server.requests) == 1
    server.reset().reply(SSEReply(chunks=["data: overloaded\n\n"]), SSEReply(chunks=["data: ok\n\n", "data: [DONE]\n\n"]))
    assert list(stream_sse(server.url, {}, {}, parse_error, timeout=2, sleep=Sleeps())) == ["ok"]
    assert len(server.requests) == 2


def test_stream_from_an_unreachable_server_fails_cleanly(closed_url):
    with pytest.raises(HTTPFailure, match=r"^unreachable$"):
        list(stream_sse(closed_url, {}, {}, parse_plain, timeout=1, retries=0))


def test_stream_redirects_are_not_followed(server):
    server.reply(SSEReply(302, headers={"Location": "http://127.0.0.1:9/elsewhere"}))
    with pytest.raises(HTTPFailure, match=r"^HTTP 302$"):
        list(stream_sse(server.url, {}, {"Authorization": "Bearer secret"}, parse_plain, timeout=2, sleep=Sleeps()))
    assert len(server.requests) == 1
