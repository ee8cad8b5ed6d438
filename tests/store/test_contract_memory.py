"""The in-memory store (numpy BM25, exact vectors, one file) passes the Store conformance suite."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ragfunnel.errors import IndexUnusableError
from ragfunnel.store import build_index, open_store, peek_index
from ragfunnel.store.memory import STATE_FILE
from tests.store.contract import SETTINGS, ContractBackend, StoreContract, contract_docs


def leave_a_torn_temporary_file(path: Path) -> None:
    """What a kill midway through a save leaves: half a temporary file beside the last complete state."""
    (path / ("tmp-" + STATE_FILE)).write_bytes(b"PK\x03\x04 half a zip")


def kill_while_saving(store, monkeypatch: pytest.MonkeyPatch) -> None:
    def killed(*args, **kwargs):
        leave_a_torn_temporary_file(store.path)
        raise KeyboardInterrupt("killed while saving")

    monkeypatch.setattr(store, "_save", killed)


class TestMemoryStoreContract(StoreContract):
    @pytest.fixture(scope="class")
    @classmethod
    def backend(cls) -> ContractBackend:
        return ContractBackend.from_registry("memory", damage=leave_a_torn_temporary_file,
                                             kill_next_write=kill_while_saving)


# ---- memory-specific: its one file ------------------------------------------------------------------------------


@pytest.fixture
def saved(tmp_path, session_cache) -> Path:
    build_index(contract_docs(), tmp_path / "index", SETTINGS, session_cache, backend_name="memory").close()
    return tmp_path / "index"


def test_peek_reads_what_open_would(saved, session_cache):
    info = peek_index(saved, backend_name="memory")
    store = open_store(saved, session_cache, backend_name="memory")
    assert info == store.info() and info.backend == "memory"
    assert peek_index(saved.parent / "nothing", backend_name="memory") is None


def test_other_encoder_or_corrupt_file_needs_a_rebuild(saved, session_cache):
    with np.load(saved / STATE_FILE) as npz:
        arrays = {k: npz[k] for k in npz.files}
    state = json.loads(str(arrays["state"]))
    state["encoder_model_id"] = "other-encoder-384"
    arrays["state"] = np.array(json.dumps(state))
    with (saved / STATE_FILE).open("wb") as fh:
        np.savez(fh, **arrays)
    with pytest.raises(IndexUnusableError, match="rebuild"):
        open_store(saved, session_cache, backend_name="memory")
    assert open_store(saved, session_cache, check_encoder=False, backend_name="memory").doc_ids()  # text readers
    (saved / STATE_FILE).write_bytes(b"not a zip")
    with pytest.raises(IndexUnusableError, match="rebuild"):
        open_store(saved, session_cache, backend_name="memory")


def test_missing_index_is_an_index_error(tmp_path, session_cache):
    with pytest.raises(IndexUnusableError, match="no index"):
        open_store(tmp_path / "does-not-exist", session_cache, backend_name="memory")
