"""Two small chat clients, each a callable `(system, user) -> reply text`, for the LLM rerankers.

- `OpenAICompatibleChat`: POST {base_url}/v1/chat/completions (OpenAI, vLLM, llama.cpp server, Ollama, ...).
  `base_url` may end in `/v1` or not. The key (argument or `OPENAI_API_KEY`) is optional: local servers need none.
- `AnthropicChat`: POST {base_url}/v1/messages (the Anthropic Messages API); needs a key (argument or
  `ANTHROPIC_API_KEY`).

Both: a per-request timeout, one retry on a timeout, a connection error, 429 or 5xx (see `rerank.http`), and a
`ChatError` with a short message on any failure; keys never appear in errors or `repr`.
"""

from __future__ import annotations

from typing import Any

from ragfunnel.rerank.http import HTTPFailure, api_key, post_json


class ChatError(RuntimeError):
    """The LLM gave no usable reply. The message names the client and the failure, never a key."""


class OpenAICompatibleChat:
    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 30.0,
        *,
        temperature: float = 0.0,
        max_tokens: int = 512,
        backoff: float = 0.5,
    ):
        self.base_url, self.model, self._api_key, self.timeout = base_url.rstrip("/"), model, api_key, timeout
        self.temperature, self.max_tokens, self.backoff = temperature, max_tokens, backoff

    def __repr__(self) -> str:
        return f"OpenAICompatibleChat(base_url={self.base_url!r}, model={self.model!r}, timeout={self.timeout})"

    @property
    def url(self) -> str:
        root = self.base_url if self.base_url.endswith("/v1") else f"{self.base_url}/v1"
        return f"{root}/chat/completions"

    def __call__(self, system: str, user: str) -> str:
        key = api_key(self._api_key, "OPENAI_API_KEY")
        payload = {
            "model": self.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        try:
            reply = post_json(
                self.url,
                payload,
                {"Authorization": f"Bearer {key}"} if key else {},
                timeout=self.timeout,
                backoff=self.backoff,
            )
        except HTTPFailure as failure:
            raise ChatError(f"chat completion failed ({failure})") from None
        try:
            content = reply["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise ChatError("chat completion failed (unexpected reply shape)") from None
        if not isinstance(content, str):
            raise ChatError("chat completion failed (the reply has no text)")
        return content


class AnthropicChat:
    VERSION = "2023-06-01"

    def __init__(
        self,
        model: str = "claude-haiku-4-5",
        api_key: str | None = None,
        timeout: float = 30.0,
        *,
        base_url: str = "https://api.anthropic.com",
        temperature: float = 0.0,
        max_tokens: int = 512,
        backoff: float = 0.5,
    ):
        self.model, self._api_key, self.timeout, self.base_url = model, api_key, timeout, base_url.rstrip("/")
        self.temperature, self.max_tokens, self.backoff = temperature, max_tokens, backoff

    def __repr__(self) -> str:
        return f"AnthropicChat(model={self.model!r}, base_url={self.base_url!r}, timeout={self.timeout})"

    def __call__(self, system: str, user: str) -> str:
        key = api_key(self._api_key, "ANTHROPIC_API_KEY")
        if key is None:
            raise ChatError("no ANTHROPIC_API_KEY set")
        payload: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "system": system,
            "messages": [{"role": "user", "content": user}],
        }
        headers = {"x-api-key": key, "anthropic-version": self.VERSION}
        try:
            reply = post_json(f"{self.base_url}/v1/messages", payload, headers, timeout=self.timeout, backoff=self.backoff)
        except HTTPFailure as failure:
            raise ChatError(f"anthropic messages failed ({failure})") from None
        blocks = reply.get("content") if isinstance(reply, dict) else None
        if not isinstance(blocks, list):
            raise ChatError("anthropic messages failed (unexpected reply shape)")
        texts = [b["text"] for b in blocks if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)]
        if not texts:
            raise ChatError("anthropic messages failed (the reply has no text)")
        return "".join(texts)
