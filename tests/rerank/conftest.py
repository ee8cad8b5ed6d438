"""A scriptable loopback HTTP server (127.0.0.1, random port) for the API-backed rerankers and LLM clients.

One server runs for the session; the `server` fixture hands it to each test with an empty script and log.
A test queues replies with `server.reply(...)`; each request takes the next one (the last one repeats when the
queue runs dry) and is recorded with its path, headers and JSON body.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from ragfunnel.rerank.base import Passage
from tests.helpers import cands


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # JSON-encoded unless bytes
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    only_for_key: str | None = None  # when set and the request's key differs, answer 401 instead


@dataclass
class Request:
    path: str
    headers: dict[str, str]  # names in lower case
    body: Any


class LoopbackServer:
    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[Request] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw
                with server.lock:
                    server.requests.append(Request(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                    reply = server.replies.pop(0) if len(server.replies) > 1 else server.replies[0]
                time.sleep(reply.delay)
                status, payload = reply.status, reply.body
                key = self.headers.get("Authorization", "").removeprefix("Bearer ") or self.headers.get("x-api-key")
                if reply.only_for_key is not None and key != reply.only_for_key:
                    status, payload = 401, {"message": "invalid api token"}
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up (timeout tests)
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)

    def reply(self, *replies: Reply) -> LoopbackServer:
        self.replies.extend(replies)
        return self

    def keys_seen(self) -> list[str]:
        return [r.headers.get("authorization", "") for r in self.requests]


@pytest.fixture(scope="session")
def _loopback():
    srv = LoopbackServer()
    srv.thread.start()
    yield srv
    srv.httpd.shutdown()
    srv.httpd.server_close()


@pytest.fixture
def server(_loopback: LoopbackServer) -> LoopbackServer:
    """The session's loopback server with an empty script and request log."""
    with _loopback.lock:
        _loopback.replies.clear()
        _loopback.requests.clear()
    return _loopback


@pytest.fixture
def passages() -> list[Passage]:
    """Four fused candidates a, b, c, d (ranks 1..4, scores 4..1) with texts "text a"..."text d"."""
    return [Passage(c, f"text {c.doc_id}") for c in cands(["a", "b", "c", "d"], name="bm25")]


@pytest.fixture
def closed_url() -> str:
    """A loopback URL where nothing listens (connections are refused)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"
