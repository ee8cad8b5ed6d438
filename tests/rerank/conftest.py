"""The session's loopback server (tests/loopback.py) answering scripted JSON (`JSONReply`), for the API-backed
rerankers; the `server` fixture hands it to each test with an empty script and log."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ragfunnel.rerank.base import Passage
from tests.helpers import cands
from tests.loopback import LoopbackServer, running_server


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
