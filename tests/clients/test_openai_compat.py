"""The OpenAI-compatible chat-completions client against the loopback server: `complete` (JSON) and `stream`
(SSE), the URL with or without /v1, the optional key, failures."""

from __future__ import annotations

import time

import pytest

from ragfunnel.clients.chat import LLMError
from ragfunnel.clients.openai_compat import OpenAICompatibleClient
from tests.loopback import JSONReply, SSEReply, sse

SECRET = "sk-SECRET-123"


def completion(text):
    return {"id": "c1", "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}


def chunk(text):
    return sse(None, {"id": "c", "choices": [{"index": 0, "delta": {"content": text}}]})


STREAM = [sse(None, {"choices": [{"delta": {"role": "assistant"}}]}), chunk("Rachel"), chunk(" [1]"), "data: [DONE]\n\n"]


# ---- complete ----------------------------------------------------------------------------------------------------


def test_complete(server):
    server.reply(JSONReply(body=completion("2 > 1")))
    chat = OpenAICompatibleClient(server.url, "qwen2.5-7b", api_key=SECRET, timeout=2)
    assert chat("sys text", "user text") == "2 > 1"  # calling the client is `complete`
    (req,) = server.requests
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == f"Bearer {SECRET}"
    assert req.body["model"] == "qwen2.5-7b" and req.body["temperature"] == 0.0 and "stream" not in req.body
    assert req.body["messages"] == [{"role": "system", "content": "sys text"}, {"role": "user", "content": "user text"}]
    assert SECRET not in repr(chat) and chat.name == "openai:qwen2.5-7b"


def test_base_url_with_v1_and_env_key(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    server.reply(JSONReply(body=completion("ok")))
    assert OpenAICompatibleClient(server.url + "/v1/", "m", timeout=2)("s", "u") == "ok"
    assert server.requests[0].path == "/v1/chat/completions"
    assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"


def test_without_a_key_no_header_is_sent(server):
    server.reply(JSONReply(body=completion("ok")))
    OpenAICompatibleClient(server.url, "m", timeout=2)("s", "u")
    assert "authorization" not in server.requests[0].headers
    server.reset().reply(SSEReply(chunks=STREAM))
    list(OpenAICompatibleClient(server.url, "m", timeout=2).stream("s", "u", 5))
    assert "authorization" not in server.requests[0].headers


def test_complete_retries_then_raises(server):
    server.reply(JSONReply(503, {"error": "loading"}))
    chat = OpenAICompatibleClient(server.url, "m", api_key=SECRET, timeout=2, retries=1, backoff=0.01)
    with pytest.raises(LLMError, match=r"^chat completion failed \(HTTP 503\)$") as info:
        chat("s", "u")
    assert len(server.requests) == 2 and SECRET not in str(info.value)


@pytest.mark.parametrize("body", [{"choices": []}, {"error": "x"}, completion(None), [1]])
def test_complete_wrong_shape(server, body):
    server.reply(JSONReply(body=body))
    with pytest.raises(LLMError, match="chat completion failed"):
        OpenAICompatibleClient(server.url, "m", timeout=2)("s", "u")


def test_complete_and_stream_send_the_same_request_but_for_streaming(server):
    server.reply(JSONReply(body=completion("x")))
    OpenAICompatibleClient(server.url, "m", timeout=2, temperature=0.3).complete("s", "u", max_tokens=40)
    (json_request,) = server.requests
    server.reset().reply(SSEReply(chunks=STREAM))
    list(OpenAICompatibleClient(server.url, "m", timeout=2, temperature=0.3).stream("s", "u", 40))
    (stream_request,) = server.requests
    assert stream_request.body == {**json_request.body, "stream": True}
    assert json_request.body["max_tokens"] == 40 and json_request.body["temperature"] == 0.3


# ---- stream ------------------------------------------------------------------------------------------------------


def test_streams_data_lines_until_done(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    server.reply(SSEReply(chunks=STREAM + [chunk("after done is ignored")]))
    llm = OpenAICompatibleClient(server.url + "/v1", "qwen", timeout=2)
    assert "".join(llm.stream("sys", "usr", 50)) == "Rachel [1]"
    (req,) = server.requests
    assert req.path == "/v1/chat/completions" and req.headers["authorization"] == f"Bearer {SECRET}"
    assert req.body["stream"] is True and req.body["max_tokens"] == 50 and req.body["model"] == "qwen"
    assert req.body["messages"] == [{"role": "system", "content": "sys"}, {"role": "user", "content": "usr"}]


def test_stream_retries_a_500_before_the_first_token(server):
    server.reply(SSEReply(500), SSEReply(chunks=STREAM))
    llm = OpenAICompatibleClient(server.url, "m", api_key=SECRET, timeout=2, backoff=0.01)
    assert "".join(llm.stream("s", "u", 10)) == "Rachel [1]"
    assert len(server.requests) == 2


def test_a_stream_timeout_is_an_llm_error_without_the_key(server):
    server.reply(SSEReply(delay=1.0, chunks=STREAM))
    llm = OpenAICompatibleClient(server.url, "m", api_key=SECRET, timeout=0.2, retries=1, backoff=0.01)
    t0 = time.perf_counter()
    with pytest.raises(LLMError, match=r"^chat completion failed \(timed out\)$") as info:
        list(llm.stream("s", "u", 10))
    assert len(server.requests) == 2 and time.perf_counter() - t0 < 1.5
    assert SECRET not in str(info.value)


def test_an_error_event_fails_without_retry(server):
    server.reply(SSEReply(chunks=[sse(None, {"error": {"type": "invalid_request_error", "message": SECRET}})]))
    with pytest.raises(LLMError, match=r"^chat completion failed \(error event invalid_request_error\)$") as info:
        list(OpenAICompatibleClient(server.url, "m", api_key=SECRET, timeout=2, backoff=0.01).stream("s", "u", 10))
    assert len(server.requests) == 1 and SECRET not in str(info.value)


def test_a_cut_stream_is_a_failure_after_its_text(server):
    server.reply(SSEReply(chunks=STREAM[:2]))  # closes without [DONE]
    got = []
    with pytest.raises(LLMError, match=r"^chat completion failed \(stream ended before its end marker\)$"):
        for text in OpenAICompatibleClient(server.url, "m", timeout=2, backoff=0.01).stream("s", "u", 10):
            got.append(text)
    assert got == ["Rachel"] and len(server.requests) == 1
