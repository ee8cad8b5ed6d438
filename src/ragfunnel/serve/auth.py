"""Optional bearer-token auth: when a token is configured (env `RAGFUNNEL_API_TOKEN`), every API route needs
`Authorization: Bearer <token>`; the web page, its static files, /health and the docs stay open."""

from __future__ import annotations

import os
import secrets

from fastapi import HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

TOKEN_ENV = "RAGFUNNEL_API_TOKEN"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")

bearer = HTTPBearer(auto_error=False, description=f"set when the server has {TOKEN_ENV}")


def token_from_env() -> str | None:
    return os.environ.get(TOKEN_ENV, "").strip() or None


def check(request: Request, credentials: HTTPAuthorizationCredentials | None) -> None:
    expected: str | None = request.app.state.rf.token
    if expected is None:
        return
    given = credentials.credentials if credentials is not None else ""
    if not secrets.compare_digest(given.encode(), expected.encode()):
        what = "a wrong token" if given else "no token"
        raise HTTPException(
            401, f"this server needs an API token: send Authorization: Bearer <token> (got {what})",
            headers={"WWW-Authenticate": "Bearer"},
        )


def binding_warning(host: str, token: str | None) -> str | None:
    """A warning when the server listens beyond this machine with no token."""
    if host in LOOPBACK_HOSTS or token:
        return None
    return (
        f"warning: listening on {host} without an API token: anyone who can reach this port can query the index. "
        f"Set {TOKEN_ENV} to require a bearer token, or bind to 127.0.0.1."
    )
