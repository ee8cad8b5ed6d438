"""The server's limits (`[limits]` of the settings, `ragfunnel serve` flags): request body size (413, counted while
the body is read, so a huge body is never held), per-client request rate (429 + Retry-After), LLM answers at once
(503 + Retry-After instead of an unbounded queue), the size of a filter."""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from fastapi import HTTPException


class TooLarge(HTTPException):
    def __init__(self, limit: int, size: int | None = None):
        said = f"{size:,} bytes" if size is not None else f"more than {limit:,} bytes"
        super().__init__(413, f"the request body is {said}; the limit is {limit:,} bytes")


class BodyLimit:
    """ASGI middleware: a request whose Content-Length is over `limit` gets 413 before its body is read; a body
    without one (chunked) is counted as it arrives and cut off with 413 the moment it passes `limit`."""

    def __init__(self, app: Any, limit: Callable[[], int]):
        self.app, self.limit = app, limit

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit()
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                size = -1
            if size > limit:
                await _send_error(send, 413, "too_large", str(TooLarge(limit, size).detail))
                return
        seen = 0

        async def counted() -> dict:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise TooLarge(limit)
            return message

        await self.app(scope, counted, send)


async def _send_error(send: Callable, status: int, code: str, message: str) -> None:
    import json

    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


class RateLimiter:
    """A token bucket per client address: `burst` requests at once, refilled at `per_minute` a minute. Only the
    most recent `max_clients` addresses are remembered (the others start with a full bucket)."""

    def __init__(self, per_minute: float, burst: int, clock: Callable[[], float] = time.monotonic,
                 max_clients: int = 10_000):
        self.rate, self.burst, self.clock, self.max_clients = per_minute / 60.0, burst, clock, max_clients
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        self._lock = threading.Lock()

    def retry_after(self, client: str) -> float:
        """0 when `client` may make a request now (it is counted), else the seconds until it may."""
        if self.rate <= 0:
            return 0.0
        now = self.clock()
        with self._lock:
            tokens, at = self._buckets.pop(client, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - at) * self.rate)
            wait = 0.0
            if tokens >= 1.0:
                tokens -= 1.0
            else:
                wait = (1.0 - tokens) / self.rate
            self._buckets[client] = (tokens, now)
            while len(self._buckets) > self.max_clients:
                self._buckets.popitem(last=False)
        return wait

    def check_request(self, request: Any, limit_loopback: bool) -> None:
        """429 + Retry-After when the request's client address is over its rate (loopback clients only when
        `limit_loopback`)."""
        host = request.client.host if request.client else "unknown"
        if not limit_loopback and host in ("127.0.0.1", "::1", "localhost"):
            return
        self.check(host)

    def check(self, client: str) -> None:
        wait = self.retry_after(client)
        if wait > 0:
            seconds = max(1, math.ceil(wait))
            raise HTTPException(429, f"too many requests from this address: try again in {seconds} s",
                                headers={"Retry-After": str(seconds)})


class Slots:
    """At most `size` holders at once; no queue: `acquire` says no at once when all are taken."""

    def __init__(self, size: int):
        self.size, self.used = size, 0
        self._lock = threading.Lock()

    def acquire(self) -> bool:
        with self._lock:
            if self.used >= self.size:
                return False
            self.used += 1
            return True

    def release(self) -> None:
        with self._lock:
            self.used = max(0, self.used - 1)


BUSY_RETRY_S = 5


def busy(size: int) -> HTTPException:
    return HTTPException(503, f"the server is generating {size} answer(s) already, its limit: try again in a few "
                              "seconds (search is not limited this way)", headers={"Retry-After": str(BUSY_RETRY_S)})


def filter_terms(data: Any) -> int:
    """Fields, operators and values in a filter's JSON (what `max_filter_terms` limits)."""
    if isinstance(data, dict):
        return sum(1 + filter_terms(v) for v in data.values())
    if isinstance(data, (list, tuple)):
        return sum(filter_terms(v) for v in data) or 1
    return 1
