"""The session's loopback server (tests/loopback.py) answering scripted JSON, for the API-backed rerankers and
LLM clients; the `server` fixture hands it to each test with an empty script and log."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from ragfunnel.rerank.base import Passage
from tests.helpers import cands
from tests.loopback import LoopbackServer, running_server


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # JSON-encoded unless bytes
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    only_for_key: str | None = None  # when set and the request's key differs, answer 401 instead

    def write(self, handler: BaseHTTPRequestHandler) -> None:
        status, payload = self.status, self.body
        key = handler.headers.get("Authorization", "").removeprefix("Bearer ") or handler.headers.get("x-api-key")
        if self.only_for_key is not None and key != self.only_for_key:
            status, payload = 401, {"message": "invalid api token"}
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        handler.send_response(status)
        for name, value in self.headers.items():
            handler.send_header(name, value)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)


@pytest.fixture(scope="session")
def _loopback() -> Iterator[LoopbackServer]:
    yield from running_server()


@pytest.fixture
def server(_loopback: LoopbackServer) -> LoopbackServer:
    """The session's loopback server with an empty script and request log."""
    return _loopback.reset()


@pytest.fixture
def passages() -> list[Passage]:
    """Four fused candidates a, b, c, d (ranks 1..4, scores 4..1) with texts "text a"..."text d"."""
    return [Passage(c, f"text {c.doc_id}") for c in cands(["a", "b", "c", "d"], name="bm25")]
