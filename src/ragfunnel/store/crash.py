"""Test-only crash points: `RAGFUNNEL_CRASH_AT=<name>` makes the process kill itself with SIGKILL when it reaches
the point of that name, so an integration test can stop a real `ragfunnel index` at an exact step of a write and
check what the next open and the next run make of it (tests/integration/test_sync_kill.py).

Never set in normal use; unset, a crash point costs one environment lookup. The points, in the order a folder sync
reaches them:

  store:before-commit   the documents are chunked and embedded, nothing of the index changed yet
  store:after-commit    SQLite (documents, chunks) holds the new state; BM25 and vectors still the old one
  store:after-sparse    BM25 written too; the vectors still the old ones
  sync:before-sources   the index holds the new state; sources.json (what the next sync compares with) the old one
"""

from __future__ import annotations

import os
import signal

CRASH_ENV = "RAGFUNNEL_CRASH_AT"


def crash_point(name: str) -> None:
    """Die here, as `kill -9` would, when the environment names this point."""
    if os.environ.get(CRASH_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)
