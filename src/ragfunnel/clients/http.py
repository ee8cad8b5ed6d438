"""JSON over HTTP for every external service (standard library only): one POST, a reply as JSON or as a stream of
Server-Sent Events, with the same timeout, retry and error mapping.

- `post_json` sends one JSON POST and returns the decoded JSON reply.
- `stream_sse` sends one JSON POST and yields what a `parse(event, data)` function finds in the SSE reply, until
  `parse` returns `DONE`; a stream that ends without it is a failure (the reply may be cut).

Both retry a timeout, a connection error, 408, 429 and 5xx, never another 4xx, at most `retries` times, after
`backoff * 2**attempt` seconds or the server's Retry-After (capped at `max_retry_after`). A stream is retried only
before its first item: once something was yielded, a retry would repeat it.

Every failure is an `HTTPFailure` whose message is short and safe to show: it names the status or the kind of
failure, never the headers (so never an API key) and never the reply body. Redirects are not followed: a redirect
would carry the Authorization header to wherever it points. The timeout is urllib's socket timeout: it bounds every
connect and read, not the whole exchange.
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
from collections.abc import Callable, Iterator, Mapping
from typing import Any

__all__ = [
    "DONE", "HTTPFailure", "MAX_REPLY_BYTES", "ReplyShapeError", "MAX_STREAM_BYTES", "RETRY_STATUSES", "api_key", "event_json", "iter_events",
    "open_post", "parse_retry_after", "post_json", "stream_sse",
]

MAX_REPLY_BYTES = 8 * 1024 * 1024
MAX_STREAM_BYTES = 8 * 1024 * 1024
MAX_LINE_BYTES = 1024 * 1024
RETRY_STATUSES = frozenset({408, 429}) | frozenset(range(500, 600))
DONE = object()  # returned by a `stream_sse` parse function at the end of the stream


class ReplyShapeError(ValueError):
    """The reply is JSON, but not the shape the API documents (its message names what is wrong)."""


class HTTPFailure(Exception):
    """A request that did not produce a usable reply. `str()` is safe to put in a note."""

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


def open_post(url: str, payload: Any, headers: Mapping[str, str], timeout: float, *, accept: str) -> http.client.HTTPResponse:
    """The open reply to one JSON POST with a 2xx status; any other outcome is an `HTTPFailure`."""
    body = json.dumps(payload).encode("utf-8")
    all_headers = {"Content-Type": "application/json", "Accept": accept, **headers}
    request = urllib.request.Request(url, data=body, headers=all_headers, method="POST")
    try:
        return _OPENER.open(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        retry_after = parse_retry_after(exc.headers.get("Retry-After") if exc.headers else None)
        exc.close()
        raise HTTPFailure(f"HTTP {exc.code}", status=exc.code, retry_after=retry_after) from None
    except urllib.error.URLError as exc:
        raise HTTPFailure("timed out" if _is_timeout(exc.reason) else "unreachable") from None
    except (TimeoutError, socket.timeout):
        raise HTTPFailure("timed out") from None
    except (ConnectionError, http.client.HTTPException, OSError):
        raise HTTPFailure("connection error") from None


def _read(reply: Any, size: int, line: bool = False) -> bytes:
    try:
        return reply.readline(size) if line else reply.read(size)
    except (TimeoutError, socket.timeout):
        raise HTTPFailure("timed out") from None
    except (ConnectionError, http.client.HTTPException, OSError):
        raise HTTPFailure("connection error") from None


def _wait(failure: HTTPFailure, attempt: int, backoff: float, max_retry_after: float) -> float:
    wait = failure.retry_after if failure.retry_after is not None else backoff * (2**attempt)
    return min(wait, max_retry_after)


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
    A garbled reply ("malformed JSON", "reply too large") is not retried."""
    for attempt in range(retries + 1):
        try:
            with open_post(url, payload, headers or {}, timeout, accept="application/json") as reply:
                raw = _read(reply, MAX_REPLY_BYTES + 1)
            if len(raw) > MAX_REPLY_BYTES:
                raise HTTPFailure("reply too large")
            try:
                return json.loads(raw)
            except (UnicodeDecodeError, ValueError):
                raise HTTPFailure("malformed JSON") from None
        except HTTPFailure as failure:
            if attempt >= retries or not failure.retryable:
                raise
            sleep(_wait(failure, attempt, backoff, max_retry_after))
    raise AssertionError("unreachable")  # pragma: no cover


def event_json(data: str) -> Any:
    """The JSON of an event's data; an `HTTPFailure("malformed event")` when it is not JSON."""
    try:
        return json.loads(data)
    except ValueError:
        raise HTTPFailure("malformed event") from None


def iter_events(reply: Any) -> Iterator[tuple[str, str]]:
    """(event name, data) for each SSE event of a readable reply; comments and ids are skipped, multi-line data is
    joined by \\n, an event without a name is "message". Read failures are `HTTPFailure`s."""
    event, data, total = "", [], 0
    while True:
        raw = _read(reply, MAX_LINE_BYTES, line=True)
        if not raw:
            break
        total += len(raw)
        if total > MAX_STREAM_BYTES:
            raise HTTPFailure("reply too large")
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if not line:
            if data:
                yield event or "message", "\n".join(data)
            event, data = "", []
        elif not line.startswith(":"):
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "event":
                event = value
            elif name == "data":
                data.append(value)
    if data:
        yield event or "message", "\n".join(data)


def stream_sse(
    url: str,
    payload: Any,
    headers: Mapping[str, str],
    parse: Callable[[str, str], Any],
    *,
    timeout: float,
    retries: int = 1,
    backoff: float = 0.5,
    max_retry_after: float = 2.0,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[Any]:
    """Yield what `parse(event, data)` returns for each event: None or "" is skipped, `DONE` ends the stream, and
    an `HTTPFailure` it raises (an error event; retryable when its status is) fails it like a failed request."""
    for attempt in range(retries + 1):
        started = False
        try:
            with open_post(url, payload, headers, timeout, accept="text/event-stream") as reply:
                for event, data in iter_events(reply):
                    item = parse(event, data)
                    if item is DONE:
                        return
                    if item is not None and item != "":
                        started = True
                        yield item
            raise HTTPFailure("stream ended before its end marker")
        except HTTPFailure as failure:
            if started or attempt >= retries or not failure.retryable:
                raise
            sleep(_wait(failure, attempt, backoff, max_retry_after))
