"""OpenAI-compatible chat completions: POST {base_url}/v1/chat/completions (OpenAI, vLLM, llama.cpp server,
Ollama, ...). `base_url` may end in `/v1` or not. The key (argument or `OPENAI_API_KEY`) is optional: local servers
need none, and then no Authorization header is sent. `stream` reads `data:` events until `data: [DONE]`.
"""

from __future__ import annotations

from typing import Any

from ragfunnel.clients.chat import ChatClient, error_kind
from ragfunnel.clients.http import DONE, HTTPFailure, event_json

__all__ = ["OpenAICompatibleClient", "OPENAI_URL"]

OPENAI_URL = "https://api.openai.com"


class OpenAICompatibleClient(ChatClient):
    what = "chat completion"
    provider = "openai"
    key_env = "OPENAI_API_KEY"

    def __init__(self, base_url: str, model: str, api_key: str | None = None, timeout: float = 60.0, **settings: Any):
        super().__init__(model, base_url, api_key, timeout, **settings)

    @property
    def url(self) -> str:
        root = self.base_url if self.base_url.endswith("/v1") else f"{self.base_url}/v1"
        return f"{root}/chat/completions"

    def headers(self, key: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"} if key else {}

    def payload(self, system: str, user: str, max_tokens: int, stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model, "temperature": self.temperature, "max_tokens": max_tokens,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        }
        if stream:
            body["stream"] = True
        return body

    def reply_text(self, reply: Any) -> str:
        if isinstance(reply, dict) and reply.get("error"):
            raise ValueError(f"error reply {error_kind(reply['error'])}")
        try:
            content = reply["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise ValueError("unexpected reply shape") from None
        if not isinstance(content, str):
            raise ValueError("the reply has no text")
        return content

    @staticmethod
    def parse_event(event: str, data: str) -> Any:
        if data.strip() == "[DONE]":
            return DONE
        obj = event_json(data)
        if not isinstance(obj, dict):
            raise HTTPFailure("malformed event")
        if obj.get("error"):
            raise HTTPFailure(f"error event {error_kind(obj['error'])}")
        choices = obj.get("choices") or [{}]
        delta = choices[0].get("delta") if isinstance(choices[0], dict) else None
        text = delta.get("content") if isinstance(delta, dict) else None
        return text if isinstance(text, str) else None
