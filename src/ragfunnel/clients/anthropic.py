"""The Anthropic Messages API: POST {base_url}/v1/messages, `x-api-key` + `anthropic-version` headers; a key
(argument or `ANTHROPIC_API_KEY`) is required. `complete` joins the reply's text blocks; `stream` yields the
`text_delta`s of a streamed reply until `message_stop`. An `error` event is a failure, retried (before the first
token) when its type says the service is overloaded, rate-limited or failing.
"""

from __future__ import annotations

from typing import Any

from ragfunnel.clients.chat import ChatClient, error_kind
from ragfunnel.clients.http import DONE, HTTPFailure, event_json

__all__ = ["AnthropicClient", "DEFAULT_MODEL"]

DEFAULT_MODEL = "claude-haiku-4-5"
# error-event types with the HTTP status they stand for (so that `HTTPFailure.retryable` decides as for a status)
ERROR_STATUS = {"overloaded_error": 529, "api_error": 500, "rate_limit_error": 429, "timeout_error": 504}


class AnthropicClient(ChatClient):
    what = "anthropic messages"
    provider = "anthropic"
    key_env = "ANTHROPIC_API_KEY"
    key_required = True
    VERSION = "2023-06-01"

    def __init__(self, model: str = DEFAULT_MODEL, api_key: str | None = None, timeout: float = 60.0, *,
                 base_url: str = "https://api.anthropic.com", **settings: Any):
        super().__init__(model, base_url, api_key, timeout, **settings)

    @property
    def url(self) -> str:
        return f"{self.base_url}/v1/messages"

    def headers(self, key: str | None) -> dict[str, str]:
        return {"x-api-key": key or "", "anthropic-version": self.VERSION}

    def payload(self, system: str, user: str, max_tokens: int, stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model, "max_tokens": max_tokens, "temperature": self.temperature, "system": system,
            "messages": [{"role": "user", "content": user}],
        }
        if stream:
            body["stream"] = True
        return body

    def reply_text(self, reply: Any) -> str:
        blocks = reply.get("content") if isinstance(reply, dict) else None
        if not isinstance(blocks, list):
            raise ValueError(f"error reply {error_kind(reply['error'])}" if isinstance(reply, dict) and reply.get("error")
                             else "unexpected reply shape")
        texts = [b["text"] for b in blocks if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)]
        if not texts:
            raise ValueError("the reply has no text")
        return "".join(texts)

    @staticmethod
    def parse_event(event: str, data: str) -> Any:
        obj = event_json(data)
        kind = obj.get("type", event) if isinstance(obj, dict) else event
        if kind == "content_block_delta":
            delta = obj.get("delta") or {}
            return delta.get("text") if delta.get("type") == "text_delta" else None
        if kind == "message_stop":
            return DONE
        if kind == "error":
            kind_of_error = error_kind(obj.get("error"))
            raise HTTPFailure(f"error event {kind_of_error}", status=ERROR_STATUS.get(kind_of_error))
        return None  # message_start, content_block_start/stop, message_delta, ping
