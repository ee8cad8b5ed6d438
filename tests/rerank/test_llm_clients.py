"""The OpenAI-compatible and Anthropic chat clients against the loopback server."""

from __future__ import annotations

import pytest

from ragfunnel.rerank.llm_clients import AnthropicChat, ChatError, OpenAICompatibleChat
from tests.rerank.conftest import Reply

SECRET = "sk-SECRET-123"


@pytest.fixture(autouse=True)
def no_env_keys(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)


def completion(text):
    return {"id": "c1", "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}


def test_openai_compatible_chat(server):
    server.reply(Reply(body=completion("2 > 1")))
    chat = OpenAICompatibleChat(server.url, "qwen2.5-7b", api_key=SECRET, timeout=2)
    assert chat("sys text", "user text") == "2 > 1"
    (req,) = server.requests
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == f"Bearer {SECRET}"
    assert req.body["model"] == "qwen2.5-7b" and req.body["temperature"] == 0.0
    assert req.body["messages"] == [{"role": "system", "content": "sys text"}, {"role": "user", "content": "user text"}]
    assert SECRET not in repr(chat)


def test_openai_compatible_base_url_with_v1_and_env_key(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    server.reply(Reply(body=completion("ok")))
    assert OpenAICompatibleChat(server.url + "/v1/", "m", timeout=2)("s", "u") == "ok"
    assert server.requests[0].path == "/v1/chat/completions"
    assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"


def test_openai_compatible_without_a_key_sends_no_header(server):
    server.reply(Reply(body=completion("ok")))
    OpenAICompatibleChat(server.url, "m", timeout=2)("s", "u")
    assert "authorization" not in server.requests[0].headers


def test_openai_compatible_retries_once_then_raises(server):
    server.reply(Reply(503, {"error": "loading"}))
    chat = OpenAICompatibleChat(server.url, "m", api_key=SECRET, timeout=2, backoff=0.01)
    with pytest.raises(ChatError, match=r"^chat completion failed \(HTTP 503\)$") as info:
        chat("s", "u")
    assert len(server.requests) == 2 and SECRET not in str(info.value)


@pytest.mark.parametrize("body", [{"choices": []}, {"error": "x"}, completion(None), [1]])
def test_openai_compatible_wrong_shape(server, body):
    server.reply(Reply(body=body))
    with pytest.raises(ChatError, match="chat completion failed"):
        OpenAICompatibleChat(server.url, "m", timeout=2)("s", "u")


def test_anthropic_chat(server):
    server.reply(
        Reply(body={"content": [{"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "3 > 1"}, {"type": "text", "text": " > 2"}]})
    )
    chat = AnthropicChat(api_key=SECRET, base_url=server.url, timeout=2)
    assert chat("sys text", "user text") == "3 > 1 > 2"
    (req,) = server.requests
    assert req.path == "/v1/messages"
    assert req.headers["x-api-key"] == SECRET and req.headers["anthropic-version"] == "2023-06-01"
    assert req.body["model"] == "claude-haiku-4-5" and req.body["system"] == "sys text"
    assert req.body["messages"] == [{"role": "user", "content": "user text"}] and req.body["max_tokens"] > 0
    assert SECRET not in repr(chat)


def test_anthropic_needs_a_key(server):
    with pytest.raises(ChatError, match="no ANTHROPIC_API_KEY set"):
        AnthropicChat(base_url=server.url, timeout=2)("s", "u")
    assert server.requests == []


def test_anthropic_failures(server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    chat = AnthropicChat(base_url=server.url, timeout=2, backoff=0.01)
    server.reply(Reply(401, {"type": "error"}))
    with pytest.raises(ChatError, match=r"\(HTTP 401\)"):
        chat("s", "u")
    assert len(server.requests) == 1 and server.requests[0].headers["x-api-key"] == SECRET
    server.replies[:] = [Reply(body={"content": []})]
    with pytest.raises(ChatError, match="no text"):
        chat("s", "u")
