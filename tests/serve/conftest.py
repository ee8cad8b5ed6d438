"""Fixtures for the web app and HTTP API, on the session's small real index (tests/conftest.py) and the fake LLM.

* `serve_pipeline`: one Pipeline over the small index, shared by every app here (as the server shares one).
* `make_app(**kw)`: `create_app` with that pipeline, the fake LLM, no rate limit, and auth off unless `token=` is
  given.
* `client`: a TestClient (lifespan run) on the default app, for the whole module.
* `live_url`: the app served by uvicorn on a free loopback port in a background thread (concurrency and browser
  tests); its LLM is the fake one, slowed to one word per 25 ms so the page can be seen streaming.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402

from ragfunnel.generate.llm import FakeLLM  # noqa: E402

RESULTS = REPO / "docs" / "results" / "first_stage"


class SlowFakeLLM(FakeLLM):
    """FakeLLM's reply, one word every `delay` seconds."""

    def __init__(self, delay: float = 0.025):
        self.delay = delay

    def stream(self, system: str, user: str, max_tokens: int) -> Iterator[str]:
        for word in super().stream(system, user, max_tokens):
            time.sleep(self.delay)
            yield word


@pytest.fixture(scope="session")
def serve_pipeline(small_index):
    from ragfunnel.pipeline import Pipeline

    return Pipeline(small_index.settings, store=small_index.store)  # the store is closed by its own fixture


@pytest.fixture(scope="session")
def make_app(small_index, serve_pipeline):
    from ragfunnel.serve.app import create_app

    # no per-client rate limit here: a module's tests share one TestClient address (test_limits.py tests the limit)
    settings = small_index.settings.model_copy(
        update={"limits": small_index.settings.limits.model_copy(update={"rate_per_minute": 0})})

    def make(**kw):
        kw.setdefault("pipeline", serve_pipeline)
        kw.setdefault("llm", FakeLLM())
        kw.setdefault("token", "")
        kw.setdefault("results_dir", RESULTS)
        kw.setdefault("llm_input", "scenes")  # the LLM over the scenes; test_reader_api.py tests the phrasing default
        return create_app(settings, **kw)

    return make


@pytest.fixture(scope="module")
def client(make_app) -> Iterator[TestClient]:
    with TestClient(make_app()) as c:
        yield c


@pytest.fixture(scope="session")
def live_url(make_app) -> Iterator[str]:
    from ragfunnel.serve.background import serve_in_thread

    with serve_in_thread(make_app(llm=SlowFakeLLM())) as url:
        yield url


def parse_sse(text: str) -> list[tuple[str, str]]:
    """(event, data) pairs of a Server-Sent Events body."""
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        if not block.strip():
            continue
        name, data = "message", []
        for line in block.split("\n"):
            key, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if key == "event":
                name = value
            elif key == "data":
                data.append(value)
        events.append((name, "\n".join(data)))
    return events


def static_files() -> list[Path]:
    from ragfunnel.serve.app import STATIC_DIR

    return sorted(p for p in STATIC_DIR.iterdir() if p.is_file())
