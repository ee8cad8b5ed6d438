"""`ragfunnel serve`'s MCP endpoint: the tools of `ragfunnel mcp` (serve/mcp.py) at POST /mcp over streamable
HTTP, answered from the server's own index and LLM, behind the server's token. Mounted only when the `mcp` extra is
installed (`mcp_available()`); the SDK is imported when it is mounted."""

from __future__ import annotations

import importlib.util
from typing import Any, Protocol

from starlette.routing import Route

from ragfunnel.api import Client
from ragfunnel.errors import RagfunnelError
from ragfunnel.serve import auth

PATH = "/mcp"


class ServedState(Protocol):
    """What the MCP tools need of the server (serve.app.ServerState)."""

    settings: Any
    pipeline: Any
    token: str | None

    def answerer(self, reader: str | None = None) -> Any: ...


class Unavailable(RagfunnelError):
    """The server lacks what the tool needs (no LLM, no index): the agent gets the server's message."""


class ServedClient(Client):
    """A `Client` over the running server's state: its pipeline (whatever index generation it holds now) and its
    answerers (one LLM for the web page, the HTTP API and the MCP tools)."""

    def __init__(self, state: ServedState, unavailable: tuple[type[Exception], ...] = ()):
        super().__init__(state.settings, pipeline=state.pipeline)
        self._state = state
        self._unavailable = unavailable

    @property
    def pipeline(self) -> Any:
        return self._state.pipeline

    def answerer(self, reader: str | None = None) -> Any:
        try:
            return self._state.answerer(reader)
        except self._unavailable as exc:
            raise Unavailable(str(exc)) from None

    def close(self) -> None:  # the server owns the pipeline
        pass


def mcp_available() -> bool:
    return importlib.util.find_spec("mcp") is not None


def mount(app: Any, state: ServedState, unavailable: tuple[type[Exception], ...] = ()) -> Any:
    """Add POST /mcp to `app`; returns the session manager, whose `run()` the app's lifespan must enter."""
    from ragfunnel.serve.mcp import build_server, http_endpoint, http_transport

    server = build_server(ServedClient(state, unavailable))
    manager = http_transport(server, allowed_hosts=None)  # Host checks are the app's, for every route alike
    app.router.routes.append(Route(PATH, endpoint=auth.TokenGuard(http_endpoint(manager), lambda: state.token)))
    return manager
