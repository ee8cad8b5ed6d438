"""`ragfunnel serve`'s MCP endpoint: the tools of `ragfunnel mcp` (serve/mcp.py) at POST /mcp over streamable
HTTP, answered from the server's own index generation and LLM, behind the server's own checks (token, rate limit,
index generations: `guard`; hosts and body size: the app's middleware; answer slots: `ServedClient.ask`). Mounted
only when the `mcp` extra is installed (`mcp_available()`); the SDK is imported when it is mounted."""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ragfunnel.api import Client
from ragfunnel.errors import RagfunnelError

PATH = "/mcp"
Guard = Callable[[Request], Awaitable[Response | None]]


class ServedState(Protocol):
    """What the MCP tools need of the server (serve.app.ServerState)."""

    settings: Any
    pipeline: Any

    def answerer(self, reader: str | None = None, gen: Any = None) -> Any: ...

    def lease(self, needs_llm: bool) -> tuple[Any, Callable[[], None]]: ...


class Unavailable(RagfunnelError):
    """The server cannot do what the tool asks now (no LLM, no index, every answer slot taken): the agent gets the
    server's message."""


class ServedClient(Client):
    """A `Client` over the running server's state: its current index generation and its answerers (one LLM for
    the web page, the HTTP API and the MCP tools); an answer holds a generation lease and, for the LLM, one of the
    server's answer slots, as POST /ask does."""

    def __init__(self, state: ServedState, unavailable: tuple[type[Exception], ...] = ()):
        super().__init__(state.settings, pipeline=state.pipeline)
        self._pipeline = None  # `pipeline` reads the state's: a generation kept here would never be let go
        self._state = state
        self._unavailable = unavailable
        self._leased = threading.local()

    @property
    def pipeline(self) -> Any:
        gen = getattr(self._leased, "gen", None)
        return gen.pipeline if gen is not None else self._state.pipeline

    def answerer(self, reader: str | None = None) -> Any:
        try:
            return self._state.answerer(reader, getattr(self._leased, "gen", None))
        except self._unavailable as exc:
            raise Unavailable(_message(exc)) from None

    def ask(self, question: str, **kw: Any) -> Any:
        try:
            gen, release = self._state.lease(needs_llm=kw.get("reader") != "evidence")
        except self._unavailable as exc:
            raise Unavailable(_message(exc)) from None
        self._leased.gen = gen
        try:
            return super().ask(question, **kw)
        finally:
            self._leased.gen = None
            release()

    def close(self) -> None:  # the server owns the pipeline
        pass


def _message(exc: Exception) -> str:
    return str(getattr(exc, "detail", None) or exc)


class Guarded:
    """An ASGI app that lets a request through to `inner` only when `guard` has no response of its own for it."""

    def __init__(self, inner: Callable[..., Awaitable[None]], guard: Guard):
        self.inner, self.guard = inner, guard

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] == "http":
            refusal = await self.guard(Request(scope, receive))
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.inner(scope, receive, send)


def mcp_available() -> bool:
    return importlib.util.find_spec("mcp") is not None


def mount(app: Any, state: ServedState, guard: Guard, unavailable: tuple[type[Exception], ...] = ()) -> Any:
    """Add POST /mcp to `app`; returns the session manager, whose `run()` the app's lifespan must enter.
    `unavailable`: the server's exceptions for "cannot now" (an MCP tool error with their message)."""
    from ragfunnel.serve.mcp import build_server, http_endpoint, http_transport

    server = build_server(ServedClient(state, unavailable))
    manager = http_transport(server, allowed_hosts=None)  # Host checks are the app's, for every route alike
    app.router.routes.append(Route(PATH, endpoint=Guarded(http_endpoint(manager), guard)))
    return manager
