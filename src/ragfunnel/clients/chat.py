"""The shared shape of the chat-model API clients (`AnthropicClient`, `OpenAICompatibleClient`).

A client holds plain settings (model, base URL, timeout, retries, temperature, a default `max_tokens`) and answers
one system + user message in two ways that build the same request and map failures the same way:

- `complete(system, user, max_tokens=None) -> str`: one JSON reply (also `client(system, user)`, so a client is the
  `(system, user) -> text` callable the listwise reranker takes);
- `stream(system, user, max_tokens=None)`: the reply's text deltas, in order (the `generate.llm.LLM` protocol).

Failures are `LLMError`s named after the API ("chat completion failed (HTTP 503)"); a missing required key is a
`ConfigError` raised before any request. Keys are read when a request is made (argument, else the environment
variable) and never appear in an error, a note or a `repr`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

from ragfunnel.clients.http import HTTPFailure, api_key, post_json, stream_sse
from ragfunnel.errors import ConfigError

__all__ = ["ChatClient", "LLMError", "error_kind"]


class LLMError(RuntimeError):
    """The LLM gave no (complete) answer. The message names the API and the failure, never a key."""


def error_kind(obj: Any) -> str:
    """The `type` of an API error object, reduced to a short safe word ("unknown" when there is none)."""
    kind = obj.get("type") if isinstance(obj, dict) else None
    if not isinstance(kind, str):
        return "unknown"
    return re.sub(r"[^A-Za-z0-9_]", "", kind)[:40] or "unknown"


class ChatClient:
    """Base class: subclasses say where and how (`url`, `headers`, `payload`) and how to read a reply
    (`reply_text`, `parse_event`); this class sends, retries and maps failures."""

    what: ClassVar[str]  # names the API in errors: "<what> failed (<why>)"
    provider: ClassVar[str]  # the name prefix: "<provider>:<model>"
    key_env: ClassVar[str]
    key_required: ClassVar[bool] = False

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key: str | None = None,
        timeout: float = 60.0,
        *,
        temperature: float = 0.0,
        max_tokens: int = 512,
        retries: int = 2,
        backoff: float = 0.5,
        max_retry_after: float = 2.0,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.model, self.base_url, self._api_key, self.timeout = model, base_url.rstrip("/"), api_key, timeout
        self.temperature, self.max_tokens, self.retries, self.backoff = temperature, max_tokens, retries, backoff
        self.max_retry_after, self._sleep = max_retry_after, sleep
        self.name = f"{self.provider}:{model}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r}, timeout={self.timeout})"

    # ---- what a subclass provides ----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        raise NotImplementedError

    def headers(self, key: str | None) -> dict[str, str]:
        raise NotImplementedError

    def payload(self, system: str, user: str, max_tokens: int, stream: bool) -> dict[str, Any]:
        raise NotImplementedError

    def reply_text(self, reply: Any) -> str:
        """The text of a complete JSON reply; raise `ValueError(why)` when it has none."""
        raise NotImplementedError

    @staticmethod
    def parse_event(event: str, data: str) -> Any:
        """A text delta, None, `DONE`, or an `HTTPFailure` raised for an error event (see `http.stream_sse`)."""
        raise NotImplementedError

    # ---- shared ------------------------------------------------------------------------------------------------

    def _key(self) -> str | None:
        key = api_key(self._api_key, self.key_env)
        if key is None and self.key_required:
            raise ConfigError(f"no {self.key_env} set: the {self.provider} client needs an API key")
        return key

    def complete(self, system: str, user: str, max_tokens: int | None = None) -> str:
        request = self.payload(system, user, max_tokens or self.max_tokens, stream=False)
        headers = self.headers(self._key())
        try:
            reply = post_json(
                self.url, request, headers, timeout=self.timeout, retries=self.retries, backoff=self.backoff,
                max_retry_after=self.max_retry_after, sleep=self._sleep,
            )
        except HTTPFailure as failure:
            raise LLMError(f"{self.what} failed ({failure})") from None
        try:
            return self.reply_text(reply)
        except ValueError as exc:
            raise LLMError(f"{self.what} failed ({exc})") from None

    def __call__(self, system: str, user: str) -> str:
        return self.complete(system, user)

    def stream(self, system: str, user: str, max_tokens: int | None = None) -> Iterator[str]:
        request = self.payload(system, user, max_tokens or self.max_tokens, stream=True)
        headers = self.headers(self._key())
        try:
            yield from stream_sse(
                self.url, request, headers, self.parse_event, timeout=self.timeout, retries=self.retries,
                backoff=self.backoff, max_retry_after=self.max_retry_after, sleep=self._sleep,
            )
        except HTTPFailure as failure:
            raise LLMError(f"{self.what} failed ({failure})") from None
