"""The embedded store (SQLite + tantivy + usearch) passes the Store conformance suite, built as Friends is and built
for syncing (BM25 in buckets)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ragfunnel.store.embedded import MANIFEST
from tests.store.contract import ContractBackend, StoreContract


def mark_dirty_and_drop_derived(path: Path) -> None:
    """What a kill midway through a write leaves: the manifest still dirty, BM25 and HNSW files stale or gone."""
    manifest = json.loads((path / MANIFEST).read_text())
    manifest["dirty"] = True
    (path / MANIFEST).write_text(json.dumps(manifest))
    shutil.rmtree(path / "bm25")
    for file in (path / "vectors").glob("*.usearch"):
        file.unlink()


def kill_while_writing_vectors(store, monkeypatch: pytest.MonkeyPatch) -> None:
    def killed(*args, **kwargs):
        raise KeyboardInterrupt("killed while writing vectors")

    monkeypatch.setattr(store, "_write_dense", killed)


class TestEmbeddedStoreContract(StoreContract):
    @pytest.fixture(scope="class")
    @classmethod
    def backend(cls) -> ContractBackend:
        return ContractBackend.from_registry(
            "embedded", damage=mark_dirty_and_drop_derived, kill_next_write=kill_while_writing_vectors
        )


class TestEmbeddedSyncStoreContract(StoreContract):
    """The same store built for syncing (`for_sync`: BM25 in buckets from the first build), as folder collections
    are; stores of the class above go to buckets at their first replace or delete."""

    @pytest.fixture(scope="class")
    @classmethod
    def backend(cls) -> ContractBackend:
        return ContractBackend.from_registry(
            "embedded", for_sync=True, damage=mark_dirty_and_drop_derived, kill_next_write=kill_while_writing_vectors
        )
