"""A small JSON-over-HTTP client for the API-backed rerankers and LLM clients (standard library only).

`post_json` sends one JSON POST with a per-request timeout and a bounded retry: it retries on a timeout, a
connection error, 429 and 5xx (short backoff; a `Retry-After` header is honoured up to a cap), never on other
4xx. Every failure is an `HTTPFailure` whose message is short and safe to show: it names the status or the kind
of failure, never the headers (so never an API key) and never the reply body.

Redirects are not followed: a redirect would carry the Authorization header to wherever it points.
The timeout is urllib's socket timeout: it bounds every connect and read, not the whole exchange.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import os
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

MAX_REPLY_BYTES = 8 * 1024 * 1024
RETRY_STATUSES = frozenset({408, 429}) | frozenset(range(500, 600))


class HTTPFailure(Exception):
    """A request that did not produce a usable JSON reply. `str()` is safe to put in a note."""

    def __init__(self, reason: str, status: int | None = None, retry_after: float | None = None):
        super().__init__(reason)
        self.reason, self.status, self.retry_after = reason, status, retry_after

    @property
    def retryable(self) -> bool:
        if self.status is not None:
            return self.status in RETRY_STATUSES
        return self.reason in ("timed out", "unreachable", "connection error")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # urllib then raises HTTPError with the 3xx status


_OPENER = urllib.request.build_opener(_NoRedirect())


def api_key(explicit: str | None, env: str) -> str | None:
    """The explicit key, else the environment variable `env`; blank counts as none. Never logged."""
    key = explicit if explicit is not None else os.environ.get(env)
    return key.strip() if key and key.strip() else None


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date); None when absent or invalid."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when is None or when.tzinfo is None:
            return None
        seconds = when.timestamp() - time.time()
    if seconds != seconds:  # NaN
        return None
    return max(0.0, seconds)


def _is_timeout(exc: BaseException | None) -> bool:
    return isinstance(exc, (TimeoutError, socket.timeout))


def _post_once(url: str, body: bytes, headers: Mapping[str, str], timeout: float) -> Any:
    request = urllib.request.Request(url, data=body, headers=dict(headers), method="POST")
    try:
        with _OPENER.open(request, timeout=timeout) as reply:
            raw = reply.read(MAX_REPLY_BYTES + 1)
    except urllib.error.HTTPError as exc:
        retry_after = parse_retry_after(exc.headers.get("Retry-After") if exc.headers else None)
        exc.close()
        raise HTTPFailure(f"HTTP {exc.code}", status=exc.code, retry_after=retry_after) from None
    except urllib.error.URLError as exc:
        if _is_timeout(exc.reason):
            raise HTTPFailure("timed out") from None
        raise HTTPFailure("unreachable") from None
    except (TimeoutError, socket.timeout):
        raise HTTPFailure("timed out") from None
    except (ConnectionError, http.client.HTTPException, OSError):
        raise HTTPFailure("connection error") from None
    if len(raw) > MAX_REPLY_BYTES:
        raise HTTPFailure("reply too large")
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, ValueError):
        raise HTTPFailure("malformed JSON") from None


def post_json(
    url: str,
    payload: Any,
    headers: Mapping[str, str] | None = None,
    *,
    timeout: float,
    retries: int = 1,
    backoff: float = 0.25,
    max_retry_after: float = 2.0,
    sleep: Callable[[float], None] = time.sleep,
) -> Any:
    """POST `payload` as JSON and return the decoded JSON reply; raise `HTTPFailure` when none comes back.

    A retryable failure is tried again up to `retries` times, after `backoff * 2**attempt` seconds, or after the
    server's Retry-After when it gives one (capped at `max_retry_after`).
    """
    body = json.dumps(payload).encode("utf-8")
    all_headers = {"Content-Type": "application/json", "Accept": "application/json", **(headers or {})}
    for attempt in range(retries + 1):
        try:
            return _post_once(url, body, all_headers, timeout)
        except HTTPFailure as failure:
            if attempt >= retries or not failure.retryable:
                raise
            wait = failure.retry_after if failure.retry_after is not None else backoff * (2**attempt)
            sleep(min(wait, max_retry_after))
    raise AssertionError("unreachable")  # pragma: no cover
