"""Streaming POST for the API-backed LLMs: Server-Sent Events over `rerank.http`'s opener and failures.

`stream_text` opens one JSON POST, reads the reply as SSE events and yields the text deltas that a backend's
`parse` function finds in them. Failures are `HTTPFailure`s (safe messages: a status or a kind, never headers or
the reply body, so never a key), raised as `LLMError`. A retryable failure (timeout, connection error, 429, 5xx,
or a retryable error event) is retried with backoff only while no text has been yielded: once the first token is
out, a retry would repeat it.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ragfunnel.rerank.http import _OPENER, HTTPFailure, parse_retry_after

MAX_STREAM_BYTES = 8 * 1024 * 1024
MAX_LINE_BYTES = 1024 * 1024
DONE = object()  # returned by a parse function at the end of the stream


class LLMError(RuntimeError):
    """The LLM gave no (complete) answer. The message names the backend and the failure, never a key."""


def _timeout(exc: BaseException | None) -> bool:
    return isinstance(exc, (TimeoutError, socket.timeout))


def open_stream(url: str, payload: Any, headers: Mapping[str, str], timeout: float) -> http.client.HTTPResponse:
    body = json.dumps(payload).encode("utf-8")
    all_headers = {"Content-Type": "application/json", "Accept": "text/event-stream", **headers}
    request = urllib.request.Request(url, data=body, headers=all_headers, method="POST")
    try:
        return _OPENER.open(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        retry_after = parse_retry_after(exc.headers.get("Retry-After") if exc.headers else None)
        exc.close()
        raise HTTPFailure(f"HTTP {exc.code}", status=exc.code, retry_after=retry_after) from None
    except urllib.error.URLError as exc:
        raise HTTPFailure("timed out" if _timeout(exc.reason) else "unreachable") from None
    except (TimeoutError, socket.timeout):
        raise HTTPFailure("timed out") from None
    except (ConnectionError, http.client.HTTPException, OSError):
        raise HTTPFailure("connection error") from None


def iter_events(reply: Any) -> Iterator[tuple[str, str]]:
    """(event name, data) for each SSE event; comments and ids are skipped, multi-line data is joined by \\n."""
    event, data, total = "", [], 0
    while True:
        try:
            raw = reply.readline(MAX_LINE_BYTES)
        except (TimeoutError, socket.timeout):
            raise HTTPFailure("timed out") from None
        except (ConnectionError, http.client.HTTPException, OSError):
            raise HTTPFailure("connection error") from None
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


def stream_text(
    url: str,
    payload: Any,
    headers: Mapping[str, str],
    parse: Callable[[str, str], Any],
    *,
    what: str,
    timeout: float,
    retries: int = 1,
    backoff: float = 0.5,
    max_retry_after: float = 2.0,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[str]:
    """Yield text deltas. `parse(event, data)` returns text, None (nothing to yield), `DONE` (the end marker), or
    raises `HTTPFailure` (an error event). A stream that ends without its end marker is a failure: the answer may be
    cut."""
    for attempt in range(retries + 1):
        started = False
        try:
            with open_stream(url, payload, headers, timeout) as reply:
                for event, data in iter_events(reply):
                    text = parse(event, data)
                    if text is DONE:
                        return
                    if text:
                        started = True
                        yield text
            raise HTTPFailure("stream ended before its end marker")
        except HTTPFailure as failure:
            if started or attempt >= retries or not failure.retryable:
                raise LLMError(f"{what} failed ({failure})") from None
            wait = failure.retry_after if failure.retry_after is not None else backoff * (2**attempt)
            sleep(min(wait, max_retry_after))
