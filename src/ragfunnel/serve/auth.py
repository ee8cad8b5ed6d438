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
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")

bearer = HTTPBearer(auto_error=False, description=f"set when the server has {TOKEN_ENV}")


def token_from_env() -> str | None:
    return os.environ.get(TOKEN_ENV, "").strip() or None


def refusal(expected: str | None, given: str) -> str | None:
    """Why a request with bearer token `given` is refused (None: let it through)."""
    if expected is None or secrets.compare_digest(given.encode(), expected.encode()):
        return None
    what = "a wrong token" if given else "no token"
    return f"this server needs an API token: send Authorization: Bearer <token> (got {what})"


def check(request: Request, credentials: HTTPAuthorizationCredentials | None) -> None:
    given = credentials.credentials if credentials is not None else ""
    why = refusal(request.app.state.rf.token, given)
    if why is not None:
        raise HTTPException(401, why, headers={"WWW-Authenticate": "Bearer"})


class TokenGuard:
    """An ASGI app that passes a request on to `inner` only with the server's token (`token_of()`, None: no
    token needed): the token check of the API routes, for a mounted app that FastAPI's dependencies do not reach."""

    def __init__(self, inner: Callable[..., Awaitable[None]], token_of: Callable[[], str | None]):
        self.inner = inner
        self.token_of = token_of

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] == "http":
            header = dict(scope.get("headers") or ()).get(b"authorization", b"").decode("latin-1")
            scheme, _, given = header.partition(" ")
            why = refusal(self.token_of(), given.strip() if scheme.lower() == "bearer" else "")
            if why is not None:
                reply = JSONResponse({"error": why}, status_code=401, headers={"WWW-Authenticate": "Bearer"})
                await reply(scope, receive, send)
                return
        await self.inner(scope, receive, send)


def binding_warning(host: str, token: str | None) -> str | None:
    """A warning when the server listens beyond this machine with no token."""
    if host in LOOPBACK_HOSTS or token:
        return None
    return (
        f"warning: listening on {host} without an API token: anyone who can reach this port can query the index. "
        f"Set {TOKEN_ENV} to require a bearer token, or bind to 127.0.0.1."
    )
