"""A real `kill -9` in the middle of a folder sync (`ragfunnel index PATH --collection NAME` run again after a file
was added, one changed and one deleted), at each step of the write: the index opened afterwards serves the old
state or the new one, never some of each, in SQLite, BM25 and vectors alike; the next run completes the sync.

The kill points are the test-only crash points of ragfunnel/store/crash.py (`RAGFUNNEL_CRASH_AT`): the process
sends itself SIGKILL there, so each run stops at the same step every time."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ragfunnel.embedding import EmbeddingCache
from ragfunnel.store import open_store
from ragfunnel.store.crash import CRASH_ENV

pytestmark = pytest.mark.integration

COLLECTION = "notes"
# point -> which state a store opened after the kill must serve
POINTS = {
    "store:before-commit": "old",
    "store:after-commit": "new",
    "store:after-sparse": "new",
    "sync:before-sources": "new",
}


def note(title: str, *paragraphs: str) -> str:
    return "\n\n".join([f"# {title}", *paragraphs]) + "\n"


def write_folder(root: Path) -> None:
    (root / "kitchen").mkdir(parents=True)
    (root / "kitchen" / "espresso.md").write_text(note("Espresso", "Descale the espresso machine every month.",
                                                       "Use filtered water for a cleaner taste."))
    (root / "kitchen" / "bread.md").write_text(note("Bread", "Knead the dough for ten minutes.",
                                                    "Let it proof overnight in the fridge."))
    (root / "garden.md").write_text(note("Garden", "Water the tomatoes every morning.", "Prune the roses in March."))
    (root / "bikes.md").write_text(note("Bikes", "Oil the chain after a rainy ride.", "Check the tyre pressure weekly."))


def run_index(folder: Path, home: Path, crash_at: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "RAGFUNNEL_HOME": str(home)}
    env.pop(CRASH_ENV, None)
    if crash_at:
        env[CRASH_ENV] = crash_at
    script = Path(sys.executable).with_name("ragfunnel")
    cmd = [str(script) if script.is_file() else sys.executable, *([] if script.is_file() else ["-m", "ragfunnel.cli"]),
           "index", str(folder), "--collection", COLLECTION, "--json", "--quiet"]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)


def served(home: Path) -> dict[str, str]:
    """What the index serves, document id -> text, after checking that SQLite, BM25 and vectors hold the same
    chunks and that every document's own words find it in BM25 (so no engine serves another state)."""
    index = home / "collections" / COLLECTION / "index"
    store = open_store(index, EmbeddingCache(home / "cache" / "embeddings.sqlite"))
    try:
        texts = {doc_id: store.document(doc_id).render() for doc_id in store.doc_ids()}
        for view in store.settings.sparse_views:
            assert store.count_sparse(view) == store.count_chunks(view), view
        for view in store.settings.dense_views:
            assert store.count_dense(view) == store.count_chunks(view), view
        for doc_id in texts:
            words = " ".join(c.text for c in store.doc_chunks("scene", doc_id))
            hits = {store.chunks([cid])[0].doc_id for cid, _ in store.search_sparse("scene", words, 20)}
            assert doc_id in hits, doc_id
        assert not index.with_name("index.partial").exists()
        return texts
    finally:
        store.close()


def test_kill_during_a_sync_serves_old_or_new_and_the_next_run_completes_it(tmp_path: Path):
    folder, home = tmp_path / "notes", tmp_path / "home"
    write_folder(folder)
    first = run_index(folder, home)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["action"] == "built"

    for n, (point, expected) in enumerate(POINTS.items()):
        old = served(home)
        (folder / "kitchen" / "bread.md").write_text(note("Bread", f"Knead the dough with zebra{n} flour.",
                                                          "Let it proof overnight in the fridge."))
        (folder / f"new{n}.md").write_text(note(f"New {n}", f"Quokka{n} notes about the kettle."))
        gone = folder / ("kitchen/espresso.md" if n == 0 else f"new{n - 1}.md")
        gone.unlink()

        killed = run_index(folder, home, crash_at=point)
        assert killed.returncode == -signal.SIGKILL, (point, killed.returncode, killed.stderr)
        after_kill = served(home)
        if expected == "old":
            assert after_kill == old, point
        else:
            assert f"zebra{n}" in after_kill["kitchen/bread.md"] and f"new{n}.md" in after_kill, point
            assert gone.relative_to(folder).as_posix() not in after_kill, point

        rerun = run_index(folder, home)
        assert rerun.returncode == 0, (point, rerun.stderr)
        report = json.loads(rerun.stdout)
        # sources.json was not written before the kill: the rerun sees the same changes and writes them (again)
        assert report["action"] == "synced", point
        assert report["added"] == [f"new{n}.md"] and report["updated"] == ["kitchen/bread.md"], point
        assert report["deleted"] == [gone.relative_to(folder).as_posix()], point
        now = served(home)
        assert f"zebra{n}" in now["kitchen/bread.md"] and f"new{n}.md" in now, point
        assert sorted(now) == sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.md")), point
        if expected == "new":
            assert now == after_kill, point
        assert json.loads(run_index(folder, home).stdout)["action"] == "none", point
