"""The one scriptable loopback HTTP server (127.0.0.1, random port) for the tests of every API client.

A test queues replies with `server.reply(...)`; each POST takes the next one (the last one repeats when the
queue runs dry), is recorded with its path, headers (names in lower case) and body (JSON-decoded when it is
JSON), waits the reply's `delay`, then lets the reply write itself (`reply.write(handler)`, the decoded body in
`handler.request_body`): a `JSONReply` answers JSON (the rerankers, `complete`), an `SSEReply` streams Server-Sent
Events (`stream`), a `MiniLMEmbeddings` answers an OpenAI `/v1/embeddings` request with the bundled MiniLM's vectors
(the API encoder). A client that gives up mid-reply (timeout tests) is fine.

`shared_server()` is the one server of the test session (started on first use, stopped at exit); each test
directory's fixture hands it out after `reset()`.
"""

from __future__ import annotations

import atexit
import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
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
                self.request_body = body
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


    def start(self) -> LoopbackServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


_shared: list[LoopbackServer] = []
_shared_lock = threading.Lock()


def shared_server() -> LoopbackServer:
    """The session's one server: started on first use, stopped when the process exits."""
    with _shared_lock:
        if not _shared:
            _shared.append(LoopbackServer().start())
            atexit.register(_shared[0].stop)
        return _shared[0]


def running_server() -> Iterator[LoopbackServer]:
    """For a session-scoped fixture: the session's one server (`shared_server`)."""
    yield shared_server()


# ---- scripted replies ----------------------------------------------------------------------------------------------


@dataclass
class JSONReply:
    """A JSON reply (the body is JSON-encoded unless it is bytes)."""

    status: int = 200
    body: Any = None
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


@dataclass
class SSEReply:
    """A Server-Sent Events stream, or (status other than 200) a JSON error reply."""

    status: int = 200
    chunks: list[str] = field(default_factory=list)  # written (and flushed) one by one
    delay: float = 0.0  # before the status line
    gap: float = 0.0  # between chunks
    headers: dict[str, str] = field(default_factory=dict)

    def write(self, handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(self.status)
        for name, value in self.headers.items():
            handler.send_header(name, value)
        if self.status != 200:
            body = b'{"error": {"type": "server_error"}}'
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
            return
        handler.send_header("Content-Type", "text/event-stream")
        handler.end_headers()
        for chunk in self.chunks:
            handler.wfile.write(chunk.encode())
            handler.wfile.flush()
            time.sleep(self.gap)


@dataclass
class MiniLMEmbeddings:
    """An OpenAI-compatible embeddings server (`POST /v1/embeddings`, {"model", "input"}) that embeds with the bundled
    MiniLM: what Ollama or TEI would answer, for the `openai:<url>|<model>` encoder. `reverse` lists the items last
    index first (a client must sort by index); `scale` multiplies the vectors (a client must normalise)."""

    delay: float = 0.0
    reverse: bool = False
    scale: float = 1.0

    def write(self, handler: BaseHTTPRequestHandler) -> None:
        from ragfunnel.embedding import shared_encoder

        body = getattr(handler, "request_body", None)
        texts = body.get("input") if isinstance(body, dict) else None
        texts = [texts] if isinstance(texts, str) else texts
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts) or handler.path != "/v1/embeddings":
            JSONReply(400, {"error": {"type": "invalid_request_error"}}).write(handler)
            return
        vectors = shared_encoder().encode(texts) * self.scale if texts else []
        data = [{"object": "embedding", "index": i, "embedding": [float(x) for x in v]} for i, v in enumerate(vectors)]
        JSONReply(body={"object": "list", "model": body.get("model"), "data": data[::-1] if self.reverse else data,
                        "usage": {"prompt_tokens": 0, "total_tokens": 0}}).write(handler)


def sse(event: str | None, data: Any) -> str:
    """One SSE event: an optional `event:` line and a `data:` line (JSON-encoded unless a string)."""
    payload = data if isinstance(data, str) else json.dumps(data)
    return (f"event: {event}\n" if event else "") + f"data: {payload}\n\n"


def closed_loopback_url() -> str:
    """A loopback URL where nothing listens (connections are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"
