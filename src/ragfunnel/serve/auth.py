"""Optional bearer-token auth: when a token is configured (env `RAGFUNNEL_API_TOKEN`), every API route needs
`Authorization: Bearer <token>`; the web page, its static files, /health and the docs stay open."""

from __future__ import annotations

import os
import secrets
from collections.abc import Awaitable, Callable

from fastapi import HTTPException, Request
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

TOKEN_ENV = "RAGFUNNEL_API_TOKEN"
KEY_ENV = "RAGFUNNEL_API_KEY"  # the same, by the name `--api-key` suggests
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")

bearer = HTTPBearer(auto_error=False, description=f"set when the server has {TOKEN_ENV}")


def token_from_env() -> str | None:
    return os.environ.get(TOKEN_ENV, "").strip() or os.environ.get(KEY_ENV, "").strip() or None


def refusal(expected: str | None, given: str) -> str | None:
    """Why a request with bearer token `given` is refused (None: let it through)."""
    if expected is None or secrets.compare_digest(given.encode(), expected.encode()):
        return None
    what = "a wrong token" if given else "no token"
    return f"this server needs an API token: send Authorization: Bearer <token> (got {what})"


def check(request: Request, credentials: HTTPAuthorizationCredentials | None) -> None:
    given = credentials.credentials if credentials is not None else request.headers.get("x-api-key", "")
    why = refusal(request.app.state.rf.token, given)
    if why is not None:
        raise HTTPException(401, why, headers={"WWW-Authenticate": "Bearer"})


def is_loopback(host: str) -> bool:
    import ipaddress

    if host.strip("[]") in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def binding_problem(host: str, token: str | None, insecure: bool) -> tuple[str, bool] | None:
    """(message, fatal) when the server would listen beyond this machine with no API key: an error unless
    `insecure`, then a warning."""
    if is_loopback(host) or token:
        return None
    if insecure:
        return (f"warning: listening on {host} without an API key (--insecure): anyone who can reach this port can "
                "query the index", False)
    return (f"listening on {host} (beyond this machine) needs an API key: --api-key KEY or env {TOKEN_ENV} "
            "(clients send Authorization: Bearer KEY), or --insecure to serve without one", True)
