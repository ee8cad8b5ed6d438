"""A scriptable loopback HTTP server (127.0.0.1, random port) for the tests of every API client.

A test queues replies with `server.reply(...)`; each POST takes the next one (the last one repeats when the
queue runs dry), is recorded with its path, headers (names in lower case) and body (JSON-decoded when it is
JSON), waits the reply's `delay`, then lets the reply write itself (`reply.write(handler)`): the rerank tests
answer JSON, the LLM tests stream Server-Sent Events. A client that gives up mid-reply (timeout tests) is fine.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol


class ScriptedReply(Protocol):
    delay: float

    def write(self, handler: BaseHTTPRequestHandler) -> None: ...


@dataclass
class Request:
    path: str
    headers: dict[str, str]  # names in lower case
    body: Any


class LoopbackServer:
    def __init__(self) -> None:
        self.replies: list[ScriptedReply] = []
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
                try:
                    reply.write(self)
                except OSError:  # the client gave up (timeout tests)
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)

    def reply(self, *replies: ScriptedReply) -> LoopbackServer:
        self.replies.extend(replies)
        return self

    def keys_seen(self) -> list[str]:
        return [r.headers.get("authorization", "") for r in self.requests]

    def reset(self) -> LoopbackServer:
        with self.lock:
            self.replies.clear()
            self.requests.clear()
        return self


def running_server() -> Iterator[LoopbackServer]:
    """For a session-scoped fixture: a started server, shut down afterwards."""
    srv = LoopbackServer()
    srv.thread.start()
    yield srv
    srv.httpd.shutdown()
    srv.httpd.server_close()


def closed_loopback_url() -> str:
    """A loopback URL where nothing listens (connections are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"
