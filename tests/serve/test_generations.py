"""Index generations (issue 21.1): a running server notices a rebuilt index between requests, switches to it without
failing a request (one in flight, an answer streaming, keeps its generation), lets the old one go, and /health says
which generation it serves."""

from __future__ import annotations

import gc
import threading
import time
import weakref

import httpx
import pytest

from tests.helpers import TOPICS, make_doc
from tests.serve.conftest import SlowFakeLLM

pytestmark = pytest.mark.integration


def docs(ids):
    return [make_doc(i, TOPICS[i], title=f"Title {i}", season=9) for i in ids]


def test_a_rebuilt_index_is_served_without_a_failed_request(tmp_path, session_cache, monkeypatch):
    from ragfunnel.config import load_settings
    from ragfunnel.serve import app as app_module
    from ragfunnel.serve.app import create_app
    from ragfunnel.serve.background import serve_in_thread
    from ragfunnel.store import StoreSettings, build_index

    monkeypatch.setattr(app_module, "RETIRED_GRACE_S", 0.0)
    ids = sorted(TOPICS)
    first, second = ids[:4], ids[4:]
    path = tmp_path / "index"
    build_index(docs(first), path, StoreSettings(), session_cache).close()
    app = create_app(load_settings(index=path), llm=SlowFakeLLM(delay=0.02), token="")
    state = app.state.rf
    statuses: list[int] = []
    stop = threading.Event()

    with serve_in_thread(app) as url, httpx.Client(base_url=url, timeout=60) as http:
        before = http.get("/health").json()
        assert before["documents"] == 4 and before["generation"] and before["built_at"] and before["reloads"] == 0

        def hammer() -> None:
            with httpx.Client(base_url=url, timeout=60) as c:
                while not stop.is_set():
                    statuses.append(c.post("/search", json={"question": "pizza pepperoni", "k": 3}).status_code)

        worker = threading.Thread(target=hammer)
        worker.start()
        old = state.generation
        with http.stream("POST", "/ask", json={"question": "Who ordered a pizza?"}) as answer:
            lines = answer.iter_lines()
            next(lines)  # an answer streams from the first generation while the index is rebuilt
            build_index(docs(second), path, StoreSettings(), session_cache).close()
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                hits = http.post("/search", json={"question": "velociraptor skeleton museum", "k": 1}).json()["results"]
                if hits and hits[0]["id"] in second:
                    break
                time.sleep(0.2)
            else:
                pytest.fail("the server never served the rebuilt index")
            assert any(line == "event: done" for line in lines)  # the answer in flight finished
        stop.set()
        worker.join()
        after = http.get("/health").json()
        deadline = time.monotonic() + 10
        while not old.closed and time.monotonic() < deadline:
            http.get("/health")
            time.sleep(0.1)

    assert statuses and set(statuses) == {200}, statuses
    assert after["documents"] == 4 and after["reloads"] == 1 and after["generation"] != before["generation"]
    assert old.closed, "the replaced generation was not let go"
    assert state.generation.pipeline is not old.pipeline
    replaced = weakref.ref(old.pipeline)
    del old
    gc.collect()
    assert replaced() is None, "something still holds the replaced generation's pipeline (its memory stays)"


def test_an_incomplete_index_is_not_switched_to(tmp_path, session_cache, monkeypatch):
    import json

    from fastapi.testclient import TestClient

    from ragfunnel.config import load_settings
    from ragfunnel.generate.llm import FakeLLM
    from ragfunnel.serve import app as app_module
    from ragfunnel.serve.app import create_app
    from ragfunnel.store import StoreSettings, build_index

    monkeypatch.setattr(app_module, "CHECK_GENERATION_EVERY_S", 0.0)
    path = tmp_path / "index"
    build_index(docs(sorted(TOPICS)[:2]), path, StoreSettings(), session_cache).close()
    with TestClient(create_app(load_settings(index=path), llm=FakeLLM(), token="")) as c:
        manifest = json.loads((path / "manifest.json").read_text())
        (path / "manifest.json").write_text(json.dumps({**manifest, "dirty": True}))  # a sync under way
        assert c.post("/search", json={"question": "pizza"}).status_code == 200
        assert c.get("/health").json()["reloads"] == 0
