"""The PostgreSQL store passes the Store conformance suite on a real server (the session's `pg_dsn`): each store
in a schema of its own, named after its temporary directory."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from ragfunnel.store import build_index, open_store
from tests.store.contract import ContractBackend, StoreContract


def pg_location(dsn: str, location: Path) -> str:
    return f"{dsn}#t_{hashlib.sha1(str(location).encode()).hexdigest()[:16]}"


def kill_while_writing_statistics(store, monkeypatch: pytest.MonkeyPatch) -> None:
    def killed(*args, **kwargs):
        raise KeyboardInterrupt("killed while writing BM25 statistics")

    monkeypatch.setattr(store, "_add_stats", killed)


class TestPostgresStoreContract(StoreContract):
    @pytest.fixture(scope="class")
    @classmethod
    def backend(cls, pg_dsn) -> ContractBackend:
        return ContractBackend(
            "postgres",
            lambda docs, location, settings, cache: build_index(docs, pg_location(pg_dsn, location), settings, cache,
                                                                backend_name="postgres"),
            lambda location, cache: open_store(pg_location(pg_dsn, location), cache, backend_name="postgres"),
            kill_next_write=kill_while_writing_statistics,
        )
