"""A real `kill -9` in the middle of `ragfunnel index`: the embeddings committed before the kill are kept, a first
build leaves an index that serves BM25 (its vectors listed as pending, never a half-written vector index), and the
rerun finishes the vectors from where they stopped."""

from __future__ import annotations

import gzip
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ragfunnel.embedding import EmbeddingCache
from ragfunnel.store import open_store

pytestmark = pytest.mark.integration


def cached_rows(cache_file: Path) -> int:
    if not cache_file.exists():
        return 0
    try:
        with sqlite3.connect(cache_file, timeout=1) as db:
            return db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
    except sqlite3.Error:
        return 0


def test_kill_during_indexing_then_rerun_resumes(friends_dir: Path, tmp_path: Path):
    corpus = tmp_path / "friends_corpus.jsonl"
    with gzip.open(friends_dir / "friends_corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
        corpus.write_text("".join(line for _, line in zip(range(30), fh)))
    home, index = tmp_path / "home", tmp_path / "home" / "index"
    env = {**os.environ, "RAGFUNNEL_HOME": str(home)}
    script = Path(sys.executable).with_name("ragfunnel")
    cmd = [str(script) if script.is_file() else sys.executable, *([] if script.is_file() else ["-m", "ragfunnel.cli"]),
           "index", "--corpus", str(corpus), "--quiet"]
    cache_file = home / "cache" / "embeddings.sqlite"

    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while cached_rows(cache_file) < 64 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert proc.poll() is None, "the build finished before it could be killed; use a larger corpus"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)

    kept = cached_rows(cache_file)
    assert kept >= 64  # committed batches survive the kill
    # the first build had swapped in its documents and BM25 before embedding: that index serves, its vectors pending
    store = open_store(index, EmbeddingCache(cache_file))
    try:
        pending = store.pending_vectors()
        assert pending is not None and not pending.running and pending.views == store.settings.dense_views
        assert 0 <= pending.done < pending.total
        assert len(store.doc_ids()) == 30
        assert store.search_sparse("scene", "Rachel", 3)
    finally:
        store.close()

    rerun = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    assert "embedding the rest" in rerun.stderr
    assert not index.with_name("index.partial").exists()
    total = cached_rows(cache_file)
    assert total > kept
    store = open_store(index, EmbeddingCache(cache_file))
    try:
        assert store.pending_vectors() is None
        assert len(store.doc_ids()) == 30
        for view in store.settings.dense_views:
            assert store.count_dense(view) == store.count_chunks(view) > 0
        for view in store.settings.sparse_views:
            assert store.count_sparse(view) == store.count_chunks(view)
    finally:
        store.close()
