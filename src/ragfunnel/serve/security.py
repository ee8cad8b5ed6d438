"""Trusted hosts and security headers, as one ASGI middleware.

* Host: only the names this server is meant to be reached by (default: localhost, 127.0.0.1, ::1; more with
  `ragfunnel serve --allow-host NAME` or env RAGFUNNEL_ALLOW_HOSTS, comma-separated; `*` allows any). A page on
  another site that rebinds its own name to 127.0.0.1 sends its own name as Host and is refused (400), so it cannot
  read this server's answers (DNS rebinding).
* Headers on every response: a Content-Security-Policy without inline script (the page loads its scripts and
  styles from /static; the OpenAPI pages /docs and /redoc, whose HTML FastAPI writes with an inline script, are the
  one exception), `frame-ancestors 'none'` (no framing), nosniff, a Referrer-Policy that sends no address.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from typing import Any

ALLOW_HOSTS_ENV = "RAGFUNNEL_ALLOW_HOSTS"
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
DOCS_CSP = ("default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
            "img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
DOCS_PATHS = ("/docs", "/redoc")
HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
]


def hosts_from_env() -> list[str]:
    return [h.strip() for h in os.environ.get(ALLOW_HOSTS_ENV, "").split(",") if h.strip()]


def allowed_hosts(extra: Iterable[str] = ()) -> frozenset[str]:
    """The Host names a request may carry: the local ones, `extra`, and RAGFUNNEL_ALLOW_HOSTS."""
    return frozenset(h.lower().strip("[]") for h in (*LOCAL_HOSTS, *extra, *hosts_from_env()))


def host_name(header: str) -> str:
    """`example.org:8000` -> `example.org`, `[::1]:8000` -> `::1`."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].split("]", 1)[0]
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class SecurityMiddleware:
    def __init__(self, app: Any, hosts: Callable[[], frozenset[str]]):
        self.app, self.hosts = app, hosts

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        hosts = self.hosts()
        header = dict(scope.get("headers") or ()).get(b"host", b"").decode("latin-1")
        if "*" not in hosts and host_name(header) not in hosts:
            body = json.dumps({"error": {"code": "bad_host", "message": (
                f"this server does not answer to the host name {host_name(header)[:100]!r}: reach it by one of "
                f"{', '.join(sorted(hosts))}, or start it with --allow-host NAME")}}).encode()
            await send({"type": "http.response.start", "status": 400, "headers": [
                (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *HEADERS,
                (b"content-security-policy", CSP.encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        docs = scope.get("path", "").startswith(DOCS_PATHS)

        async def with_headers(message: dict) -> None:
            if message["type"] == "http.response.start":
                present = {k.lower() for k, _ in message.get("headers", [])}
                extra = [(k, v) for k, v in HEADERS if k not in present]
                extra.append((b"content-security-policy", (DOCS_CSP if docs else CSP).encode()))
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, with_headers)
