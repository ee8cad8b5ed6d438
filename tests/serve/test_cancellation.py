"""A client that goes away stops its answer (issue 21.7): the generation stops within a token, the LLM's lock (one
generation at a time, as the local LLM has) is released and the answer slot is free for the next user."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from ragfunnel.generate.llm import FakeLLM

pytestmark = pytest.mark.integration

QUESTION = "Who did Rachel dump at the altar?"


class LockedSlowLLM(FakeLLM):
    """Like the local LLM: one generation at a time (a lock held while it streams); one word every `delay` s, a
    long reply (the fake one, then many more words)."""

    name = "locked-slow"

    def __init__(self, delay: float = 0.05, extra_words: int = 400):
        self.delay, self.extra = delay, extra_words
        self.lock = threading.Lock()
        self.produced = 0
        self.finished = threading.Event()

    def stream(self, system: str, user: str, max_tokens: int) -> Iterator[str]:
        with self.lock:
            try:
                for word in [*(" word" for _ in range(self.extra)), *super().stream(system, user, max_tokens)]:
                    time.sleep(self.delay)
                    self.produced += 1
                    yield word
            finally:
                self.finished.set()


@pytest.mark.parametrize("route", ["/ask", "/v1/chat/completions"])
def test_a_closed_connection_stops_the_generation_and_frees_the_lock(route, make_app):
    from ragfunnel.serve.background import serve_in_thread

    llm = LockedSlowLLM()
    app = make_app(llm=llm)
    body = ({"question": QUESTION} if route == "/ask" else
            {"model": "ragfunnel-fast", "stream": True, "messages": [{"role": "user", "content": QUESTION}]})
    with serve_in_thread(app) as url:
        with httpx.Client(base_url=url, timeout=30) as http, http.stream("POST", route, json=body) as r:
            assert r.status_code == 200
            lines = r.iter_lines()
            for _ in range(3):
                next(lines)
        # the connection is closed: the stream must stop within a token or so
        closed_at, produced_at_close = time.monotonic(), llm.produced
        assert llm.finished.wait(5), "the generation went on after the client left"
        assert time.monotonic() - closed_at < 2
        assert llm.produced - produced_at_close <= 3, (produced_at_close, llm.produced)
        assert llm.lock.acquire(timeout=2), "the LLM lock is still held"
        llm.lock.release()
        deadline = time.monotonic() + 5
        while app.state.rf.answer_slots.used and time.monotonic() < deadline:
            time.sleep(0.02)
        assert app.state.rf.answer_slots.used == 0
        assert llm.produced < llm.extra
