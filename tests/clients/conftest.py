"""The session's one loopback server (tests/loopback.py), handed to each client test with an empty script and log;
tests queue `JSONReply`s (JSON POSTs, `complete`) or `SSEReply`s (streams)."""

from __future__ import annotations

import pytest

from tests.loopback import LoopbackServer, shared_server


@pytest.fixture
def server() -> LoopbackServer:
    return shared_server().reset()


@pytest.fixture(autouse=True)
def no_env_keys(monkeypatch):
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "COHERE_API_KEY", "COHERE_API_KEY_FALLBACK"):
        monkeypatch.delenv(name, raising=False)


class Sleeps(list):
    """A `sleep` stand-in that records the waits instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)
