"""The SSE reader and the retrying text stream (the backends' tests are in test_llm.py)."""

from __future__ import annotations

import io
import time

import pytest

from ragfunnel.generate.sse import DONE, LLMError, iter_events, stream_text
from ragfunnel.rerank.http import HTTPFailure
from tests.generate.conftest import SSEReply


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


def test_stream_text_retries_a_500_before_the_first_token(sse_server):
    sse_server.reply(SSEReply(500), SSEReply(chunks=["data: Hel\n\n", "data: lo\n\n", "data: [DONE]\n\n"]))
    waits = []
    out = list(stream_text(sse_server.url + "/x", {"q": 1}, {}, parse_plain, what="test", timeout=2, sleep=waits.append))
    assert out == ["Hel", "lo"] and len(sse_server.requests) == 2 and waits == [0.5]


def test_stream_text_does_not_retry_after_the_first_token(sse_server):
    sse_server.reply(SSEReply(chunks=["data: partial\n\n"]))  # the connection closes without [DONE]
    got = []
    with pytest.raises(LLMError, match=r"^test failed \(stream ended before its end marker\)$"):
        for text in stream_text(sse_server.url, {}, {}, parse_plain, what="test", timeout=2, sleep=lambda s: None):
            got.append(text)
    assert got == ["partial"] and len(sse_server.requests) == 1


def test_stream_text_times_out_and_gives_up(sse_server):
    sse_server.reply(SSEReply(delay=1.0, chunks=["data: late\n\n", "data: [DONE]\n\n"]))
    t0 = time.perf_counter()
    with pytest.raises(LLMError, match=r"^test failed \(timed out\)$"):
        list(stream_text(sse_server.url, {}, {}, parse_plain, what="test", timeout=0.2, retries=1, sleep=lambda s: None))
    assert len(sse_server.requests) == 2 and time.perf_counter() - t0 < 1.5


def test_stream_text_times_out_between_events(sse_server):
    sse_server.reply(SSEReply(chunks=["data: one\n\n", "data: two\n\n"], gap=1.0))
    got = []
    with pytest.raises(LLMError, match="timed out"):
        for text in stream_text(sse_server.url, {}, {}, parse_plain, what="test", timeout=0.2, sleep=lambda s: None):
            got.append(text)
    assert got == ["one"]


def test_error_events_raise_without_retry_unless_retryable(sse_server):
    def parse_error(event, data):
        if data == "overloaded":
            raise HTTPFailure("error event overloaded_error", status=529)
        if data == "bad":
            raise HTTPFailure("error event invalid_request_error")
        return DONE if data == "[DONE]" else data

    sse_server.reply(SSEReply(chunks=["data: bad\n\n"]))
    with pytest.raises(LLMError, match=r"^x failed \(error event invalid_request_error\)$"):
        list(stream_text(sse_server.url, {}, {}, parse_error, what="x", timeout=2, sleep=lambda s: None))
    assert len(sse_server.requests) == 1
    sse_server.requests.clear()
    sse_server.replies.clear()
    sse_server.reply(SSEReply(chunks=["data: overloaded\n\n"]), SSEReply(chunks=["data: ok\n\n", "data: [DONE]\n\n"]))
    assert list(stream_text(sse_server.url, {}, {}, parse_error, what="x", timeout=2, sleep=lambda s: None)) == ["ok"]
    assert len(sse_server.requests) == 2


def test_unreachable_server_fails_cleanly(closed_url):
    with pytest.raises(LLMError, match=r"^x failed \(unreachable\)$"):
        list(stream_text(closed_url, {}, {}, parse_plain, what="x", timeout=1, retries=0))
