"""The Anthropic Messages client against the loopback server: `complete` (JSON) and `stream` (SSE) build the same
request and map failures the same way; keys never leak."""

from __future__ import annotations

import time

import pytest

from ragfunnel.clients.anthropic import AnthropicClient
from ragfunnel.clients.chat import LLMError
from ragfunnel.errors import ConfigError
from tests.clients.conftest import Sleeps
from tests.loopback import JSONReply, SSEReply, sse

SECRET = "sk-SECRET-123"

STREAM = [
    sse("message_start", {"type": "message_start", "message": {"id": "m1"}}),
    sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    sse("ping", {"type": "ping"}),
    sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Rachel"}}),
    sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": " [1]"}}),
    sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
    sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
    sse("message_stop", {"type": "message_stop"}),
]
OVERLOADED = sse("error", {"type": "error", "error": {"type": "overloaded_error", "message": f"echo {SECRET}"}})


def client(server, **kw) -> AnthropicClient:
    return AnthropicClient(**{"api_key": SECRET, "base_url": server.url, "timeout": 2, "backoff": 0.01, **kw})


# ---- complete ----------------------------------------------------------------------------------------------------


def test_complete_joins_the_text_blocks(server):
    server.reply(
        JSONReply(body={"content": [{"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "3 > 1"}, {"type": "text", "text": " > 2"}]})
    )
    chat = client(server)
    assert chat("sys text", "user text") == "3 > 1 > 2"  # calling the client is `complete`
    (req,) = server.requests
    assert req.path == "/v1/messages"
    assert req.headers["x-api-key"] == SECRET and req.headers["anthropic-version"] == "2023-06-01"
    assert req.body == {"model": "claude-haiku-4-5", "max_tokens": 512, "temperature": 0.0, "system": "sys text",
                        "messages": [{"role": "user", "content": "user text"}]}
    assert SECRET not in repr(chat)


def test_complete_and_stream_send_the_same_request_but_for_streaming(server):
    server.reply(JSONReply(body={"content": [{"type": "text", "text": "x"}]}))
    client(server).complete("s", "u", max_tokens=77)
    (json_request,) = server.requests
    server.reset().reply(SSEReply(chunks=STREAM))
    list(client(server).stream("s", "u", 77))
    (stream_request,) = server.requests
    assert stream_request.body == {**json_request.body, "stream": True}
    assert stream_request.body == {"model": "claude-haiku-4-5", "max_tokens": 77, "temperature": 0.0, "system": "s",
                                   "messages": [{"role": "user", "content": "u"}], "stream": True}
    assert json_request.headers["accept"] == "application/json" and stream_request.headers["accept"] == "text/event-stream"


def test_a_missing_key_is_a_config_error_before_any_request(server):
    with pytest.raises(ConfigError, match="no ANTHROPIC_API_KEY set"):
        AnthropicClient(base_url=server.url, timeout=2)("s", "u")
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        list(AnthropicClient(base_url=server.url, timeout=2).stream("s", "u", 5))
    assert server.requests == []


def test_complete_failures(server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    chat = AnthropicClient(base_url=server.url, timeout=2, backoff=0.01)
    server.reply(JSONReply(401, {"type": "error"}))
    with pytest.raises(LLMError, match=r"^anthropic messages failed \(HTTP 401\)$") as info:
        chat("s", "u")
    assert len(server.requests) == 1 and server.requests[0].headers["x-api-key"] == SECRET  # a 401 is not retried
    assert SECRET not in str(info.value)
    server.reset().reply(JSONReply(body={"content": []}))
    with pytest.raises(LLMError, match=r"\(the reply has no text\)$"):
        chat("s", "u")
    server.reset().reply(JSONReply(body={"type": "error", "error": {"type": "invalid_request_error", "message": SECRET}}))
    with pytest.raises(LLMError, match=r"\(error reply invalid_request_error\)$") as info:
        chat("s", "u")
    assert SECRET not in str(info.value)


def test_complete_retries_a_529_then_succeeds(server):
    server.reply(JSONReply(529, {"type": "error"}), JSONReply(body={"content": [{"type": "text", "text": "ok"}]}))
    sleeps = Sleeps()
    assert client(server, sleep=sleeps).complete("s", "u") == "ok"
    assert len(server.requests) == 2 and sleeps == [0.01]


# ---- stream ------------------------------------------------------------------------------------------------------


def test_streams_text_deltas(server):
    server.reply(SSEReply(chunks=STREAM))
    llm = AnthropicClient(api_key=SECRET, base_url=server.url, timeout=2)
    assert list(llm.stream("sys", "usr", 99)) == ["Rachel", " [1]"]
    (req,) = server.requests
    assert req.path == "/v1/messages" and req.headers["x-api-key"] == SECRET
    assert req.headers["anthropic-version"] == "2023-06-01" and req.headers["accept"] == "text/event-stream"
    assert req.body == {"model": "claude-haiku-4-5", "max_tokens": 99, "temperature": 0.0, "system": "sys",
                        "messages": [{"role": "user", "content": "usr"}], "stream": True}
    assert llm.name == "anthropic:claude-haiku-4-5" and SECRET not in repr(llm)


def test_stream_retries_a_500_before_the_first_token(server):
    server.reply(SSEReply(500), SSEReply(chunks=STREAM))
    assert "".join(client(server).stream("s", "u", 10)) == "Rachel [1]"
    assert len(server.requests) == 2


def test_a_stream_timeout_is_an_llm_error_without_the_key(server):
    server.reply(SSEReply(delay=1.0, chunks=STREAM))
    t0 = time.perf_counter()
    with pytest.raises(LLMError, match=r"^anthropic messages failed \(timed out\)$") as info:
        list(client(server, timeout=0.2, retries=1).stream("s", "u", 10))
    assert len(server.requests) == 2 and time.perf_counter() - t0 < 1.5
    assert SECRET not in str(info.value)


def test_error_events(server):
    server.reply(SSEReply(chunks=[OVERLOADED]), SSEReply(chunks=STREAM))
    llm = client(server)
    assert "".join(llm.stream("s", "u", 10)) == "Rachel [1]"  # overloaded before any text: retried
    server.reset().reply(SSEReply(chunks=STREAM[:4] + [OVERLOADED]))
    with pytest.raises(LLMError, match=r"^anthropic messages failed \(error event overloaded_error\)$") as info:
        list(llm.stream("s", "u", 10))  # after the first token: no retry
    assert SECRET not in str(info.value) and len(server.requests) == 1
    server.reset().reply(SSEReply(chunks=[sse("error", {"type": "error", "error": {"type": "invalid_request_error"}})]))
    with pytest.raises(LLMError, match=r"\(error event invalid_request_error\)$"):
        list(llm.stream("s", "u", 10))
    assert len(server.requests) == 1  # not retryable


def test_a_malformed_event_fails_the_stream(server):
    server.reply(SSEReply(chunks=["event: content_block_delta\ndata: {not json\n\n"]))
    with pytest.raises(LLMError, match=r"^anthropic messages failed \(malformed event\)$"):
        list(client(server).stream("s", "u", 10))
