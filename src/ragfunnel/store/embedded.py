"""The default store: one directory holding SQLite (documents, chunks), tantivy (BM25, one index per sparse
view so each view has its own statistics) and usearch (HNSW, one index per dense view), all keyed by the same
integer chunk key.

Crash safety: SQLite is the source of truth; tantivy and usearch are derived from it (vectors from the embedding
cache). A write (`apply`: upserts and deletes together) marks the manifest dirty first, changes SQLite in one
transaction, then the derived indexes, and marks the manifest clean last; an open that finds it dirty rebuilds the
derived indexes from SQLite, so a write killed anywhere gives all of it or none of it. Writers hold an exclusive
lock on `write.lock` for the whole write and openers a shared one while they open, so an index is never opened (or
repaired) halfway through another process's write. A full build is written to `<dir>.partial` and swapped in by
rename only when complete.

BM25 statistics: tantivy counts deleted documents in document frequencies and average lengths until their segment
is merged away, and tantivy-py cannot ask for a merge. A store that takes replaces and deletes (a synced folder
collection; built with `for_sync`, or moved over at its first replace) keeps each sparse view in 7 buckets of
documents, each bucket in segments of its own: a write rewrites the buckets it touches (deleting a bucket whole
drops its old segment, statistics and all), about 1/7 of the view instead of all of it. A store built once and
never changed (Friends) keeps one segment as before.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sqlite3
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence, Sized
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragfunnel import __version__
from ragfunnel.chunking import chunk_documents
from ragfunnel.embedding import EmbeddingCache, shared_encoder
from ragfunnel.errors import CorpusError, IndexUnusableError
from ragfunnel.analysis import build_analyzer
from ragfunnel.store.admitted import Admitted, FilterResolver
from ragfunnel.store.files import read_file_artifact, write_file_artifact, write_text_atomic
from ragfunnel.store.base import EXACT_SCAN_BELOW, IndexInfo, PendingVectors, Progress, StoreSettings, WritesThroughApply, chunk_context
from ragfunnel.store.crash import crash_point
from ragfunnel.store.filters import Filter
from ragfunnel.store.locks import LockHeld, file_lock
from ragfunnel.store.vectors import chunk_vectors, embed_missing, unit_texts
from ragfunnel.types import Chunk, Document, Unit

FORMAT_VERSION = 1
DEFAULT_EF = 64  # usearch's own default search depth
# The HNSW graph of a view searched by exact scan (at most EXACT_SCAN_BELOW vectors) is walked only by a retriever
# configured with `exact = false`, so it is built at this expansion, not the settings' hnsw_expansion_add: 2.4 times
# cheaper (61k windows: 9.0 s instead of 21.6 s on 2 cores; a warm Friends rebuild took 25 s instead of 51 s), and a graph
# search at ef 600 still finds 0.978 of the exact top 50 against 0.994 (docs/results/first_stage/scan_graph.md);
# a view that grows past the line is rebuilt at the settings' expansion
SCANNED_VIEW_EXPANSION_ADD = 48
# A filtered vector search scans the admitted vectors unless that costs more than searching the whole index for
# the neighbours that would hold `limit` admitted ones (limit / the admitted share * `OVERSAMPLE` + limit); costs in
# units of one neighbour returned by a search: a vector of the held copy (`_held_vectors`) costs a fifth of that,
# one fetched from usearch about as much. Measured on Friends: docs/results/serving/filter_latency.md.
OVERSAMPLE = 1.5
SCAN_HELD_COST = 0.2
SCAN_FETCH_COST = 1.0
HOLD_VECTORS_BELOW = 250_000  # 2 bytes x 384 dims a vector: up to ~190 MB held per view
# An exact search with a `pool` of a half-precision view of at least `SCAN_HELD_FROM` vectors scans the held copy's
# projection on the view's first `PROJECTED_DIMS` principal axes with numkong's f16 dot product and rescores the best
# max(pool, 4 x limit) in full. The scans are memory-bound (usearch's full scan and numkong's alike: ~8-9 ms for
# Friends' 61k windows when a query scans two views in turn); the projection is a third of the bytes: ~2 ms, and at a
# pool of 2,000 it returns 0.995-0.999 of the exact top 300 (docs/results/serving/dense_scan.md). Below
# `SCAN_HELD_FROM`, usearch's scan is quick and nothing is held.
SCAN_HELD_FROM = 20_000
PROJECTED_DIMS = 128
MANIFEST = "manifest.json"
LOCK_FILE = "write.lock"
# A first build serves BM25 and the documents before its vectors are in: its manifest lists the dense views still
# `pending`; the process embedding them holds `VECTORS_LOCK` and writes its progress to `VECTORS_PROGRESS` (a search
# reads both for its one status line).
VECTORS_LOCK = "vectors.lock"
VECTORS_PROGRESS = "vectors_progress.json"
PROGRESS_EVERY_S = 2.0
# BM25 of a store that syncs is kept in buckets of documents, one tantivy segment each, so that a write rewrites
# only the buckets it touches (tantivy counts deleted documents in its statistics until their segment goes; a
# bucket rewritten whole drops its old segment at once). tantivy's default merge policy merges a level once it
# holds 8 segments: 7 buckets are never merged into each other.
BM25_BUCKETS = 7
# A full build reads its documents this many at a time: each batch is chunked, embedded and written before the next
# is read, so the build's memory is one batch's chunks beside the indexes (a million one-chunk documents written at
# once held ~1 GB of chunks and keys: docs/results/serving/scale_1m_embedded.md). BM25 gets one tantivy segment a
# batch, which its merge policy merges in the background.
BUILD_BATCH = 20_000


def _index_lock(path: Path, exclusive: bool):
    """Exclusive for a write, shared for an open: an index is never opened (or repaired) during another's write."""
    return file_lock(path / LOCK_FILE, exclusive)


def _write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    write_text_atomic(path, json.dumps(data, indent=2))


class EmbeddedStore(WritesThroughApply):
    def __init__(self, path: Path, settings: StoreSettings, cache: EmbeddingCache, manifest: dict[str, Any]):
        self.path = Path(path)
        self.settings = settings
        self.cache = cache
        self.manifest = manifest
        self._lock = threading.RLock()
        # read-only until the first write: a search never writes (a read-only copy or mount of an index works)
        self._db = _connect(self.path / "store.sqlite", writable=False)
        self._db.create_function("rf_bucket", 1, lambda doc_id: self._bucket(doc_id), deterministic=True)
        # an index built before chunks had locations has no such columns: read as 0, 0, (); added on a write
        try:
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(chunks)")}
            self._db.execute("SELECT COUNT(*) FROM documents").fetchone()
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise _corrupt(self.path / "store.sqlite", exc) from None
        self._has_location = "section" in columns
        self._analyzer = build_analyzer(settings.analyzer)
        self._sparse: dict[str, Any] = {}
        self._vectors: dict[str, Any] = {}
        self._key_to_chunk: dict[int, str] = {}
        self._filters = FilterResolver(self._db, self._lock)
        self._held: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # view -> (sorted keys, vectors): scans
        self._held_scans: dict[str, _HeldScan] = {}  # view -> norms and projection of its held vectors
        with _index_lock(self.path, exclusive=False):  # not while another process writes
            self.manifest = _read_manifest(self.path)
            if not self.manifest.get("dirty"):
                self._open_engines()
                return
        with _index_lock(self.path, exclusive=True):  # dirty: a write is under way (wait for it) or was killed
            self.manifest = _read_manifest(self.path)
            self._open_engines(repairing=bool(self.manifest.get("dirty")))
            if self.manifest.get("dirty"):
                self.repair()

    # ---- life cycle -------------------------------------------------------------------------------------------

    def _writable(self) -> None:
        """Reopen SQLite for writing (the first write of this store: create, apply, repair)."""
        with self._lock:
            if getattr(self, "_db_writable", False):
                return
            self._db.close()
            self._db = _connect(self.path / "store.sqlite", writable=True)
            self._db.create_function("rf_bucket", 1, lambda doc_id: self._bucket(doc_id), deterministic=True)
            self._db.executescript(SCHEMA)
            self._filters = FilterResolver(self._db, self._lock)
            self._db_writable = True

    @classmethod
    def create(cls, path: Path, settings: StoreSettings, cache: EmbeddingCache,
               bm25_buckets: int = 0, pending: Sequence[str] = ()) -> EmbeddedStore:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=False)
        encoder = shared_encoder(settings.encoder, settings.max_length)
        manifest = {
            "format_version": FORMAT_VERSION,
            "ragfunnel_version": __version__,
            "settings": settings.model_dump(),
            "encoder_model_id": encoder.model_id,
            # the vectors' width: an API encoder learns it from its server's first reply; reading it here spares
            # every later open a request (indexes made before it was kept use the encoder's, 384 for MiniLM)
            "dim": (encoder.dim or 384) if settings.dense_views else 384,
            "complete": False,
            "dirty": False,
            "bm25_buckets": bm25_buckets,
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
        }
        if pending:
            manifest["pending_dense"] = list(pending)
        _write_json_atomic(path / MANIFEST, manifest)
        db = _connect(path / "store.sqlite", writable=True)
        db.executescript(SCHEMA)
        db.close()
        for view in settings.sparse_views:
            (path / "bm25" / view).mkdir(parents=True, exist_ok=True)
        store = cls(path, settings, cache, manifest)
        store._writable()
        return store

    def _open_engines(self, repairing: bool = False) -> None:
        self._open_sparse(missing_ok=repairing)
        self._open_dense()
        self._key_to_chunk = dict(self._db.execute("SELECT key, chunk_id FROM chunks"))

    def _open_dense(self) -> None:
        Index = _usearch_index_class()
        if not self.settings.dense_views:
            self._vectors = {}
            return
        self._vectors = {}
        for view in self.settings.dense_views:
            if view in self._pending:  # not embedded yet: searched when its build has written it
                continue
            file = self.path / "vectors" / f"{view}.usearch"
            index = self._new_vector_index(Index)
            if file.exists():
                try:
                    index.load(str(file))
                except (RuntimeError, ValueError, OSError) as exc:
                    raise _corrupt(file, exc) from None
            self._vectors[view] = self._graph_for(index, 0)

    def _new_vector_index(self, Index: Any = None) -> Any:
        Index = Index or _usearch_index_class()
        dim = self.manifest.get("dim") or shared_encoder(self.settings.encoder, self.settings.max_length).dim or 384
        return Index(ndim=dim, metric="cos", dtype=self.settings.vector_dtype,
                     connectivity=self.settings.hnsw_connectivity, expansion_add=self.settings.hnsw_expansion_add)

    @property
    def _pending(self) -> list[str]:
        """Dense views whose vectors are not written yet (a first build that serves BM25 first)."""
        return [v for v in self.manifest.get("pending_dense") or () if v in self.settings.dense_views]

    def pending_vectors(self) -> PendingVectors | None:
        views = self._pending
        if not views:
            return None
        try:
            with file_lock(self.path / VECTORS_LOCK, exclusive=False, wait=False):
                running = False
        except LockHeld:
            running = True
        try:
            state = json.loads((self.path / VECTORS_PROGRESS).read_text())
            done, total = int(state.get("done", 0)), int(state.get("total", 0))
        except (OSError, ValueError, TypeError, AttributeError):
            done = total = 0
        return PendingVectors(views=views, done=done, total=total, running=running)

    def finish_vectors(self, progress: Progress | None = None) -> None:
        """Embed the pending dense views of this index and make them searchable: their texts go to the embedding
        cache (only what it lacks; a kill loses at most a batch, the next run goes on from there), then each view's
        HNSW index is written and the manifest says it is in. Searches meanwhile use BM25 (`pending_vectors` says how
        far this is). Raises IndexUnusableError when another process is at it."""
        views = self._pending
        if not views:
            return
        try:
            with file_lock(self.path / VECTORS_LOCK, exclusive=True, wait=False):
                self._finish_vectors(views, progress)
        except LockHeld:
            pending = self.pending_vectors()
            raise IndexUnusableError(f"another `ragfunnel index` is embedding the vectors of the index at {self.path} "
                              f"({pending.percent if pending else 0}% done); wait for it") from None

    def _finish_vectors(self, views: list[str], progress: Progress | None) -> None:
        from ragfunnel.store.vectors import encoder_work

        sources = {self.settings.derived_views[v] for v in views if v in self.settings.derived_views}
        wanted = sorted(set(views) | sources)
        with self._lock:
            rows = self._db.execute(
                f"SELECT chunk_id, doc_id, view, start, end, text, {self._location} FROM chunks WHERE view IN "
                f"({','.join('?' * len(wanted))}) ORDER BY key", wanted).fetchall()
            keys = dict(self._db.execute(
                f"SELECT chunk_id, key FROM chunks WHERE view IN ({','.join('?' * len(views))})", views).fetchall())
        chunks = [_chunk(*row) for row in rows]
        todo = [c for c in chunks if c.view in views]
        distinct = encoder_work(self.settings, todo)
        last = [0.0]

        def report(task: str, done: int, total: int) -> None:
            if progress:
                progress(task, done, total)
            now = time.monotonic()
            if task == "embedding" and (now - last[0] >= PROGRESS_EVERY_S or done == total):
                last[0] = now  # the cached texts count as embedded: `total` is what this run has left
                write_text_atomic(self.path / VECTORS_PROGRESS, json.dumps(
                    {"views": views, "done": distinct - total + done, "total": distinct, "pid": os.getpid(),
                     "updated": time.time()}))

        self._embed(todo, report, views=views)
        dtype = np.float16 if self.settings.vector_dtype == "f16" else np.float32
        units = unit_texts(self.settings, chunks)
        made = {}
        for view in views:
            part_of = [c for c in todo if c.view == view]
            index = self._graph_for(self._new_vector_index(), len(part_of))
            for i in range(0, len(part_of), 4096):
                part = part_of[i : i + 4096]
                index.add(np.array([keys[c.chunk_id] for c in part], dtype=np.uint64),
                          chunk_vectors(self.settings, self.cache, part, units, dtype))
                if progress:
                    progress(f"HNSW {view}", min(i + 4096, len(part_of)), len(part_of))
            made[view] = index
        with self._lock, _index_lock(self.path, exclusive=True):  # readers open the manifest and the files together
            for view, index in made.items():
                self._vectors[view] = index
            self._save_dense(list(made))
            rest = [v for v in self.manifest.get("pending_dense") or () if v not in made]
            self._set_manifest(pending_dense=rest, vectors_at=time.strftime("%Y-%m-%dT%H:%M:%S"),
                               generation=time.time_ns())
        (self.path / VECTORS_PROGRESS).unlink(missing_ok=True)

    def _open_sparse(self, missing_ok: bool = False) -> None:
        """Open the BM25 index of every sparse view; a missing one is an error (a damaged index), except while the
        index is repaired (`missing_ok`), which rebuilds it."""
        import tantivy

        self._sparse = {}
        for view in self.settings.sparse_views:
            directory = self.path / "bm25" / view
            if missing_ok:
                directory.mkdir(parents=True, exist_ok=True)
            if not directory.is_dir():
                raise IndexUnusableError(f"the index at {self.path} has no BM25 index for view {view!r} (bm25/{view} is "
                                  "missing): the index is damaged; rebuild it with `ragfunnel index --rebuild`")
            builder = tantivy.SchemaBuilder()
            builder.add_unsigned_field("key", stored=True, indexed=True, fast=True)
            builder.add_text_field("doc_id", stored=False, tokenizer_name="raw")
            if self._buckets:
                builder.add_text_field("bucket", stored=False, tokenizer_name="raw")
            builder.add_text_field("text", stored=False, tokenizer_name=self.settings.analyzer.name)
            try:
                index = tantivy.Index(builder.build(), path=str(directory))
            except ValueError as exc:
                raise _corrupt(directory, exc) from None
            index.register_tokenizer(self.settings.analyzer.name, self._analyzer)
            self._sparse[view] = index
        self._searchers = {view: index.searcher() for view, index in self._sparse.items()}

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def snapshot(self) -> threading.RLock:
        return self._lock  # the writes of this process hold it

    def read_artifact(self, name: str) -> str | None:
        return read_file_artifact(self.path, name)

    def write_artifact(self, name: str, text: str) -> str:
        return write_file_artifact(self.path, name, text)

    def info(self) -> IndexInfo:
        info = _info(self.manifest)
        return info if info.documents else info.model_copy(update={"documents": len(self.doc_ids())})

    def _set_manifest(self, **changes: Any) -> None:
        self._filters.clear()  # every write goes through here: what a filter admitted may have changed
        self._held, self._held_scans = {}, {}
        self.manifest.update(changes)
        _write_json_atomic(self.path / MANIFEST, self.manifest)

    # ---- writes -----------------------------------------------------------------------------------------------

    @property
    def _location(self) -> str:
        """The SELECT columns of a chunk's location (constants for an index that has none stored)."""
        return "char_start, char_end, section" if self._has_location else "0, 0, NULL"

    def apply(self, upserts: Sequence[Document] = (), deletes: Sequence[str] = (),
              progress: Progress | None = None) -> int:
        """Upsert `upserts` and delete `deletes` in one write (an id in both is upserted); returns how many of
        `deletes` existed. SQLite changes in one transaction; a kill anywhere is repaired on the next open to all
        of the write (SQLite committed) or none of it."""
        return self._apply(upserts, deletes, progress, build_batch=False)

    def _apply(self, upserts: Sequence[Document], deletes: Sequence[str], progress: Progress | None,
               build_batch: bool) -> int:
        """`apply`; a `build_batch` (a batch of a build into its `.partial` directory) leaves the HNSW files and the
        manifest's counts to the build's end: saving them after every batch would rewrite the whole HNSW index
        and read every document id each time."""
        docs = list({d.doc_id: d for d in upserts}.values())
        _check_text(docs)
        ids = [d.doc_id for d in docs]
        gone = [d for d in dict.fromkeys(deletes) if d not in set(ids)]
        chunks = chunk_documents(docs, self.settings.views, chunk_context(self.settings, self.cache))
        self._embed(chunks, progress)  # before any index changes: a kill here loses nothing
        self._writable()
        with self._lock, _index_lock(self.path, exclusive=True):
            existing = self._existing(gone)
            if not docs and not existing:
                return 0
            self._set_manifest(dirty=True)
            if not self._has_location:
                with self._db:
                    for column in ("char_start INTEGER", "char_end INTEGER", "section TEXT"):
                        self._db.execute(f"ALTER TABLE chunks ADD COLUMN {column}")
                self._has_location = True
            crash_point("store:before-commit")
            with self._db:  # one transaction: the old rows go and the new come together
                old_keys = self._delete_rows([*ids, *existing])
                # rows made one at a time (generators, not lists of every row's JSON; measured: 537 -> 534 MB peak
                # RSS at 100k chunks, the peak is elsewhere)
                self._db.executemany(
                    "INSERT INTO documents VALUES (?, ?, ?, ?)",
                    ((d.doc_id, d.title, json.dumps(d.metadata), _units_json(d.units)) for d in docs),
                )
                self._db.executemany(
                    "INSERT INTO chunks (chunk_id, doc_id, view, start, end, text, char_start, char_end, section) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    ((c.chunk_id, c.doc_id, c.view, c.start, c.end, c.text, c.char_start, c.char_end,
                      json.dumps(c.section) if c.section else None) for c in chunks),
                )
            crash_point("store:after-commit")
            keys = self._keys_for(ids)
            lost_chunks = any(k for v, k in old_keys.items() if v in self._sparse)
            if self._buckets:
                self._write_sparse_buckets([*ids, *existing], progress)
            elif lost_chunks:  # a store that replaces and deletes: rewritten once, from now on in buckets
                self._set_manifest(bm25_buckets=BM25_BUCKETS)
                self._reset_sparse()
                self._write_sparse_buckets([], progress, full=True)
            else:
                self._write_sparse(ids, chunks, keys, progress)
            crash_point("store:after-sparse")
            self._write_dense(old_keys, chunks, keys, progress)
            if not build_batch:
                self._save_dense()
            self._key_to_chunk.update({k: cid for cid, k in keys.items()})
            if not build_batch:
                self._set_manifest(dirty=False, **self._counts())
            return len(existing)

    def _existing(self, doc_ids: Sequence[str]) -> list[str]:
        """Those of `doc_ids` the index holds, in the order given."""
        found: set[str] = set()
        for i in range(0, len(doc_ids), 500):
            part = list(doc_ids[i : i + 500])
            marks = ",".join("?" * len(part))
            found.update(r[0] for r in self._db.execute(f"SELECT doc_id FROM documents WHERE doc_id IN ({marks})", part))
        return [d for d in doc_ids if d in found]

    def _counts(self) -> dict[str, Any]:
        """What the manifest (and so `info()` and the fingerprint) says the index holds, after a write."""
        return {"documents": len(self.doc_ids()), "chunks": {v: self.count_chunks(v) for v in self.settings.views}}

    def _delete_rows(self, doc_ids: list[str]) -> dict[str, list[int]]:
        """Delete documents and chunks from SQLite, inside the caller's transaction; returns the removed chunk keys
        per view."""
        removed: dict[str, list[int]] = {}
        for i in range(0, len(doc_ids), 500):
            part = doc_ids[i : i + 500]
            marks = ",".join("?" * len(part))
            for key, view in self._db.execute(f"SELECT key, view FROM chunks WHERE doc_id IN ({marks})", part):
                removed.setdefault(view, []).append(key)
                self._key_to_chunk.pop(key, None)
            self._db.execute(f"DELETE FROM chunks WHERE doc_id IN ({marks})", part)
            self._db.execute(f"DELETE FROM documents WHERE doc_id IN ({marks})", part)
        return removed

    def _keys_for(self, doc_ids: list[str]) -> dict[str, int]:
        keys: dict[str, int] = {}
        for i in range(0, len(doc_ids), 500):
            part = doc_ids[i : i + 500]
            marks = ",".join("?" * len(part))
            keys.update(self._db.execute(f"SELECT chunk_id, key FROM chunks WHERE doc_id IN ({marks})", part))
        return keys

    def _embed(self, chunks: list[Chunk], progress: Progress | None, views: Sequence[str] | None = None) -> None:
        """Put every encoded dense chunk's vector in the cache (a derived view's are made from them); `_write_dense`
        reads them back a slice at a time, so a build never holds all of them beside the HNSW index's own copy
        (768 MB at a million f16 chunks)."""
        pending = set(self._pending) if views is None else set(self.settings.dense_views) - set(views)
        embed_missing(self.settings, self.cache, [c for c in chunks if c.view not in pending] if pending else chunks,
                      progress)

    @property
    def _buckets(self) -> int:
        return int(self.manifest.get("bm25_buckets") or 0)

    def _bucket(self, doc_id: str) -> str:
        return f"b{zlib.crc32(doc_id.encode('utf-8')) % self._buckets}"

    def _write_sparse(self, doc_ids: list[str], chunks: list[Chunk], keys: dict[str, int], progress) -> None:
        """Add `chunks` to the BM25 views of a store without buckets (replacing those of `doc_ids` there: tantivy
        then counts the deleted ones in its statistics, so `apply` converts such a store to buckets first)."""
        import tantivy

        for view, index in self._sparse.items():
            writer = index.writer(heap_size=128_000_000, num_threads=1)
            for doc_id in doc_ids:
                writer.delete_documents_by_term("doc_id", doc_id)
            todo = [c for c in chunks if c.view == view]
            for n, chunk in enumerate(todo, 1):
                doc = tantivy.Document(doc_id=chunk.doc_id, text=chunk.text)
                doc.add_unsigned("key", keys[chunk.chunk_id])
                writer.add_document(doc)
                if progress and (n % 5000 == 0 or n == len(todo)):
                    progress(f"BM25 {view}", n, len(todo))
            writer.commit()
            writer.wait_merging_threads()
            index.reload()
            self._searchers[view] = index.searcher()

    def _write_sparse_buckets(self, doc_ids: list[str], progress, full: bool = False) -> None:
        """Rewrite, in every BM25 view, the buckets that hold `doc_ids` from SQLite, each in a commit (so a segment)
        of its own: the bucket's old segment, all of it deleted, goes with its statistics. Every bucket when `full`,
        or when a view's statistics count documents it no longer holds (its segments were merged across buckets)."""
        import tantivy

        every = [f"b{n}" for n in range(self._buckets)]
        touched = sorted({self._bucket(d) for d in doc_ids})
        for view, index in self._sparse.items():
            searcher = index.searcher()
            exact = sum(searcher.doc_freq("bucket", b) for b in every) == searcher.num_docs
            buckets = every if full or not exact else touched
            if not buckets:
                continue
            writer = index.writer(heap_size=128_000_000, num_threads=1)
            if buckets is every and searcher.num_docs:
                writer.delete_all_documents()
            done, total = 0, self.count_chunks(view) if progress else 0
            for bucket in buckets:
                writer.delete_documents_by_term("bucket", bucket)
                rows = self._db.execute(
                    "SELECT key, doc_id, text FROM chunks WHERE view = ? AND rf_bucket(doc_id) = ? ORDER BY key",
                    (view, bucket),
                )
                for key, doc_id, text in rows:
                    doc = tantivy.Document(doc_id=doc_id, bucket=bucket, text=text)
                    doc.add_unsigned("key", key)
                    writer.add_document(doc)
                    done += 1
                writer.commit()
                if progress:
                    progress(f"BM25 {view}", min(done, total), total)
            writer.wait_merging_threads()
            index.reload()
            self._searchers[view] = index.searcher()

    def _reset_sparse(self) -> None:
        """Empty BM25 indexes (in the schema the manifest says) in place of the old ones."""
        views, self._sparse, self._searchers = list(self.settings.sparse_views), {}, {}  # let go of the old engines
        for view in views:
            (self.path / "bm25").mkdir(exist_ok=True)
            # moved aside, then deleted: tantivy threads of an engine opened on it may still touch files there, and
            # an rmtree in place then fails with "Directory not empty" (seen in CI)
            target = self.path / "bm25" / view
            if target.exists():
                trash = target.with_name(f".{view}.deleted-{os.getpid()}-{time.time_ns()}")
                os.replace(target, trash)
                shutil.rmtree(trash, ignore_errors=True)
        for leftover in (self.path / "bm25").glob(".*.deleted-*"):
            shutil.rmtree(leftover, ignore_errors=True)
        self._open_sparse(missing_ok=True)

    def _write_dense(self, old_keys, chunks, keys, progress) -> None:
        dtype = np.float16 if self.settings.vector_dtype == "f16" else np.float32  # what the HNSW index stores
        units = unit_texts(self.settings, chunks)
        for view, index in list(self._vectors.items()):
            stale = [k for k in old_keys.get(view, []) if k in index]
            if stale:
                index.remove(np.array(stale, dtype=np.uint64))
            todo = [c for c in chunks if c.view == view]
            index = self._vectors[view] = self._graph_for(index, len(todo))
            for i in range(0, len(todo), 4096):
                part = todo[i : i + 4096]
                index.add(
                    np.array([keys[c.chunk_id] for c in part], dtype=np.uint64),
                    chunk_vectors(self.settings, self.cache, part, units, dtype),
                )
                if progress:
                    progress(f"HNSW {view}", min(i + 4096, len(todo)), len(todo))

    def _graph_for(self, index: Any, adding: int) -> Any:
        """The view's vector index, ready to take `adding` more vectors: one that stays searched by exact scan
        builds its graph cheaply (SCANNED_VIEW_EXPANSION_ADD); one that grows past EXACT_SCAN_BELOW gets the settings'
        expansion, and a cheaply built graph is rebuilt from its vectors when the view crosses the line."""
        before = len(index)
        if before + adding <= EXACT_SCAN_BELOW:
            index.expansion_add = min(SCANNED_VIEW_EXPANSION_ADD, self.settings.hnsw_expansion_add)
            return index
        index.expansion_add = self.settings.hnsw_expansion_add
        if not 0 < before <= EXACT_SCAN_BELOW:
            return index
        rebuilt = self._new_vector_index()
        keys = np.asarray(index.keys[:], dtype=np.uint64)
        for i in range(0, len(keys), 4096):
            rebuilt.add(keys[i : i + 4096], np.vstack(index.get(keys[i : i + 4096])))
        return rebuilt

    def _save_dense(self, views: Sequence[str] | None = None) -> None:
        for view, index in self._vectors.items():
            if views is not None and view not in views:
                continue
            file = self.path / "vectors" / f"{view}.usearch"
            file.parent.mkdir(parents=True, exist_ok=True)
            tmp = file.with_suffix(".tmp")
            index.save(str(tmp))
            os.replace(tmp, file)

    def repair(self, progress: Progress | None = None) -> None:
        """Rebuild the derived indexes (BM25, HNSW) from SQLite after an interrupted write."""
        self._writable()
        with self._lock:
            rows = self._db.execute(f"SELECT key, chunk_id, doc_id, view, start, end, text, {self._location} FROM chunks").fetchall()
            chunks = [_chunk(*row[1:]) for row in rows]
            keys = {cid: key for key, cid, *_ in rows}
            self._reset_sparse()
            for view in self.settings.dense_views:
                (self.path / "vectors" / f"{view}.usearch").unlink(missing_ok=True)
            self._open_dense()
            self._embed(chunks, progress)
            if self._buckets:
                self._write_sparse_buckets([], progress, full=True)
            else:
                self._write_sparse([], chunks, keys, progress)
            self._write_dense({}, chunks, keys, progress)
            self._save_dense()
            self._set_manifest(dirty=False, **self._counts())

    # ---- reads ------------------------------------------------------------------------------------------------

    def document(self, doc_id: str) -> Document | None:
        with self._lock:
            row = self._db.execute(
                "SELECT doc_id, title, metadata, units FROM documents WHERE doc_id = ?", (doc_id,)
            ).fetchone()
        if row is None:
            return None
        units = tuple(Unit.from_row(u) for u in json.loads(row[3]))
        return Document(row[0], row[1], units, json.loads(row[2]))

    def doc_metadata(self, doc_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The metadata of these documents (one query per 500 ids; unknown ids are left out)."""
        out: dict[str, dict[str, Any]] = {}
        ids = list(doc_ids)
        for i in range(0, len(ids), 500):
            part = ids[i : i + 500]
            with self._lock:
                rows = self._db.execute(
                    f"SELECT doc_id, metadata FROM documents WHERE doc_id IN ({','.join('?' * len(part))})", part
                ).fetchall()
            out.update((doc_id, json.loads(meta)) for doc_id, meta in rows)
        return out

    def doc_ids(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self._db.execute("SELECT doc_id FROM documents ORDER BY doc_id")]

    def count_matching(self, where: Filter) -> int:
        return self._filters.count(where)

    def chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        found: dict[str, Chunk] = {}
        with self._lock:
            for i in range(0, len(chunk_ids), 500):
                part = list(chunk_ids[i : i + 500])
                marks = ",".join("?" * len(part))
                for row in self._db.execute(
                    f"SELECT chunk_id, doc_id, view, start, end, text, {self._location} FROM chunks "
                    f"WHERE chunk_id IN ({marks})", part
                ):
                    found[row[0]] = _chunk(*row)
        return [found[c] for c in chunk_ids if c in found]

    def count_chunks(self, view: str | None = None) -> int:
        with self._lock:
            if view is None:
                return self._db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
            return self._db.execute("SELECT COUNT(*) FROM chunks WHERE view = ?", (view,)).fetchone()[0]

    def view_chunks(self, view: str) -> list[Chunk]:
        """Every chunk of `view`, in a stable order (by key)."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT chunk_id, doc_id, view, start, end, text, {self._location} FROM chunks WHERE view = ? "
                "ORDER BY key", (view,)
            ).fetchall()
        return [_chunk(*row) for row in rows]

    def doc_chunks(self, view: str, doc_id: str) -> list[Chunk]:
        """Every chunk of `doc_id` in `view`, in the row order of `doc_vectors`."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT chunk_id, doc_id, view, start, end, text, {self._location} FROM chunks "
                "WHERE doc_id = ? AND view = ? ORDER BY key", (doc_id, view)
            ).fetchall()
        return [_chunk(*row) for row in rows]

    def doc_vectors(self, view: str, doc_id: str) -> np.ndarray:
        """The stored vectors of every chunk of `doc_id` in the dense view (rows in chunk order); none yet (0 rows)
        while the view's vectors are still being embedded, so readers of them go on without."""
        if view in self._pending and view not in self._vectors:
            return np.zeros((0, self.manifest.get("dim") or 384), dtype=np.float32)
        index = self._require(self._vectors, view, "vector")
        with self._lock:
            keys = [k for (k,) in self._db.execute(
                "SELECT key FROM chunks WHERE doc_id = ? AND view = ? ORDER BY key", (doc_id, view))]
        if not keys:
            return np.zeros((0, index.ndim), dtype=np.float32)
        return np.asarray(index.get(np.array(keys, dtype=np.uint64)), dtype=np.float32).reshape(len(keys), -1)

    def count_sparse(self, view: str) -> int:
        self._require(self._sparse, view, "BM25")
        return self._searchers[view].num_docs

    def count_dense(self, view: str) -> int:
        return len(self._require(self._vectors, view, "vector"))

    def _require(self, engines: dict[str, Any], view: str, kind: str) -> Any:
        if view not in engines:
            if kind == "vector" and view in self._pending:
                pending = self.pending_vectors()
                raise IndexUnusableError(f"the vectors of view {view!r} are still being embedded "
                                  f"({pending.percent if pending else 0}%): search in bm25 mode until then")
            if kind == "vector":
                views = ",".join(sorted({*self.settings.dense_views, view}))
                raise IndexUnusableError(f"this index has no vectors of view {view!r} (it has vectors of "
                                  f"{', '.join(sorted(self.settings.dense_views)) or 'no view'}): add them with "
                                  f"`ragfunnel index --vectors {views}`")
            raise IndexUnusableError(
                f"this index has no {kind} index for view {view!r} (it has {sorted(engines) or 'none'}); "
                "rebuild with the view enabled: ragfunnel index --rebuild"
            )
        return engines[view]

    def analyze(self, text: str) -> list[str]:
        return self._analyzer.analyze(text)

    def search_sparse(self, view: str, query: str, limit: int, where: Filter | None = None) -> list[tuple[str, float]]:
        import tantivy

        self._require(self._sparse, view, "BM25")
        terms = self.analyze(query)
        if not terms:
            return []
        admitted = self._filters.admitted(view, where) if where is not None else None
        if admitted is not None and admitted.size == 0:
            return []
        schema = self._sparse[view].schema
        q = tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, tantivy.Query.term_query(schema, "text", t)) for t in terms]
        )
        if admitted is not None and not admitted.everything:
            # the filter as a second clause that adds no score: a MUST of what it admits, or a MUST_NOT of what it
            # leaves out when that is the shorter term set (documents, or chunk keys for unit conditions)
            if admitted.doc_ids is not None:
                field, inside, outside = "doc_id", admitted.doc_ids, admitted.excluded_doc_ids
            else:
                field, inside, outside = "key", admitted.keys, admitted.excluded_keys
            if len(outside) < len(inside):
                restriction = (tantivy.Occur.MustNot, tantivy.Query.term_set_query(schema, field, list(outside)))
            else:
                restriction = (tantivy.Occur.Must, tantivy.Query.const_score_query(
                    tantivy.Query.term_set_query(schema, field, list(inside)), 0.0))
            q = tantivy.Query.boolean_query([(tantivy.Occur.Must, q), restriction])
        searcher = self._searchers[view]
        result = searcher.search(q, limit)
        out = []
        for score, address in result.hits:
            key = searcher.doc(address)["key"][0]
            chunk_id = self._key_to_chunk.get(key)
            if chunk_id is not None:
                out.append((chunk_id, float(score)))
        return out

    def match_sparse(self, view: str, query: str, where: Filter | None = None) -> list[str]:
        import tantivy

        self._require(self._sparse, view, "BM25")
        terms = list(dict.fromkeys(self.analyze(query)))
        if not terms:
            return []
        schema = self._sparse[view].schema
        clauses = [(tantivy.Occur.Must, tantivy.Query.term_query(schema, "text", t)) for t in terms]
        if where is not None:
            admitted = self._filters.admitted(view, where)
            if admitted.size == 0:
                return []
            if not admitted.everything:
                if admitted.doc_ids is not None:
                    clauses.append((tantivy.Occur.Must, tantivy.Query.term_set_query(schema, "doc_id", list(admitted.doc_ids))))
                else:
                    clauses.append((tantivy.Occur.Must, tantivy.Query.term_set_query(schema, "key", list(admitted.keys))))
        searcher = self._searchers[view]
        found = searcher.search(tantivy.Query.boolean_query(clauses), max(searcher.num_docs, 1))
        keys = (searcher.doc(address)["key"][0] for _, address in found.hits)
        return sorted(c for c in (self._key_to_chunk.get(k) for k in keys) if c is not None)

    def term_idfs(self, view: str, query: str) -> dict[str, float | None]:
        """BM25 IDF of each distinct analysed query term (None for a term no chunk of `view` contains)."""
        self._require(self._sparse, view, "BM25")
        searcher = self._searchers[view]
        n = max(searcher.num_docs, 1)
        out: dict[str, float | None] = {}
        for term in dict.fromkeys(self.analyze(query)):
            df = searcher.doc_freq("text", term)
            out[term] = math.log(1 + (n - df + 0.5) / (df + 0.5)) if df else None
        return out

    def search_dense(
        self, view: str, vector: np.ndarray, limit: int, ef: int | None = None, exact: bool = False,
        where: Filter | None = None, pool: int | None = None,
    ) -> list[tuple[str, float]]:
        index = self._require(self._vectors, view, "vector")
        if len(index) == 0:
            return []
        if where is not None:
            admitted = self._filters.admitted(view, where)
            if admitted.size == 0:
                return []
            if not admitted.everything:
                return self._search_admitted(view, index, admitted, vector, limit, ef, exact)
        if exact and pool and len(index) >= SCAN_HELD_FROM and self.settings.vector_dtype == "f16":
            held = self._held_vectors(view, index)
            if held is not None:
                return self._scan_held(view, held, vector, limit, pool)
        with self._lock:  # ef is a property of the shared index: set it on every search
            index.expansion_search = max(ef or DEFAULT_EF, limit)
            matches = index.search(np.asarray(vector, dtype=np.float32), limit, exact=exact, threads=1)
        return [
            (self._key_to_chunk[int(k)], 1.0 - float(d))
            for k, d in zip(matches.keys, matches.distances)
            if int(k) in self._key_to_chunk
        ]

    def _search_admitted(
        self, view: str, index: Any, admitted: Admitted, vector: np.ndarray, limit: int, ef: int | None, exact: bool
    ) -> list[tuple[str, float]]:
        """The best `limit` of the admitted vectors: a scan of them, or, when a filter admits so much of the view
        that a scan costs more, a search of the whole index for enough neighbours that `limit` admitted ones are
        expected among them (and the scan when that found too few)."""
        count = min(len(index), math.ceil(limit * len(index) / admitted.size * OVERSAMPLE) + limit)
        held = self._held_vectors(view, index)
        if admitted.size * (SCAN_HELD_COST if held is not None else SCAN_FETCH_COST) > count:
            with self._lock:
                index.expansion_search = max(ef or DEFAULT_EF, count)
                matches = index.search(np.asarray(vector, dtype=np.float32), count, exact=exact, threads=1)
            keys = np.asarray(matches.keys, dtype=np.uint64)
            kept = np.isin(keys, admitted.keys, assume_unique=True)
            hits = [
                (self._key_to_chunk[int(k)], 1.0 - float(d))
                for k, d in zip(keys[kept], np.asarray(matches.distances)[kept])
                if int(k) in self._key_to_chunk
            ][:limit]
            if len(hits) >= min(limit, admitted.size):
                return hits
        if held is not None:
            held_keys, held_matrix = held
            at = np.minimum(np.searchsorted(held_keys, admitted.keys), len(held_keys) - 1)
            at = at[held_keys[at] == admitted.keys]
            keys, matrix = held_keys[at], held_matrix[at]
        else:
            with self._lock:
                rows = index.get(admitted.keys)  # in the stored precision, scored by usearch as the index scores
            present = [(k, row) for k, row in zip(admitted.keys, rows) if row is not None]
            keys = np.array([k for k, _ in present], dtype=np.uint64)
            matrix = np.stack([row for _, row in present]) if present else None
        if matrix is None or not len(keys):
            return []
        from usearch.index import MetricKind
        from usearch.index import search as exact_search

        # usearch's exact kernel, not `matrix @ vector`: numpy's BLAS spreads a product over threads, and on a
        # busy 2-core machine that took 6-25 ms for 1,500 vectors where this takes 0.2 ms
        matches = exact_search(matrix, np.asarray(vector, dtype=matrix.dtype), min(len(keys), limit + 16),
                               MetricKind.Cos, exact=True, threads=1)
        hits = [(self._key_to_chunk.get(int(keys[int(i)])), 1.0 - float(d)) for i, d in zip(matches.keys, matches.distances)]
        return [(cid, score) for cid, score in hits if cid is not None][:limit]

    def _scan_held(self, view: str, held: tuple[np.ndarray, np.ndarray], vector: np.ndarray, limit: int,
                   pool: int | None) -> list[tuple[str, float]]:
        """Cosine over the held copy with numkong's f16 dot product, over the rows' own norms (rounding to f16
        leaves them a little off 1): the best `pool` rows of the projection rescored (every row when the pool
        holds them all)."""
        import numkong

        keys, matrix = held
        scan = self._scanned(view, matrix)
        query = np.asarray(vector, dtype=np.float32)
        query = query / max(float(np.linalg.norm(query)), 1e-12)
        rows = None
        if pool and 4 * limit < len(matrix):
            pool = min(max(pool, 4 * limit), len(matrix))
            approx = np.asarray(numkong.cdist((query @ scan.basis).astype(np.float16)[None], scan.projected,
                                              metric="dot", threads=1))[0]
            rows = np.argpartition(-approx, pool - 1)[:pool] if pool < len(approx) else None
        part = matrix if rows is None else matrix[rows]
        norms = scan.norms if rows is None else scan.norms[rows]
        scores = np.asarray(numkong.cdist(query.astype(np.float16)[None], part, metric="dot", threads=1))[0] / norms
        n = min(limit, len(scores))
        top = np.argpartition(-scores, n - 1)[:n] if n < len(scores) else np.arange(len(scores))
        top = top[np.argsort(-scores[top], kind="stable")]
        at = top if rows is None else rows[top]
        hits = ((self._key_to_chunk.get(int(keys[r])), float(scores[t])) for r, t in zip(at, top))
        return [(cid, score) for cid, score in hits if cid is not None]

    def _scanned(self, view: str, matrix: np.ndarray) -> _HeldScan:
        with self._lock:
            scan = self._held_scans.get(view)
            if scan is None:
                scan = self._held_scans[view] = _HeldScan.of(matrix)
            return scan

    def _held_vectors(self, view: str, index: Any) -> tuple[np.ndarray, np.ndarray] | None:
        """A copy of the view's vectors in key order, read once for filtered scans (fetching vectors one by one
        from usearch costs ~4 us each on the busy machine; a row of this copy, a fraction of that); None for a view
        over `HOLD_VECTORS_BELOW`, which fetches."""
        with self._lock:
            held = self._held.get(view)
            if held is None and 0 < len(index) <= HOLD_VECTORS_BELOW:
                keys = np.sort(np.asarray(index.keys[:], dtype=np.uint64))
                held = self._held[view] = (keys, np.vstack(index.get(keys)))
            return held


@dataclass(frozen=True)
class _HeldScan:
    """What scans of a held copy need beside it: the rows' norms, the view's first `PROJECTED_DIMS` principal axes
    (uncentred, so that a dot product on them approximates the full one) and the unit rows projected on them."""

    norms: np.ndarray  # float64, one a row
    basis: np.ndarray  # dims x PROJECTED_DIMS, float32
    projected: np.ndarray  # rows x PROJECTED_DIMS, float16

    @classmethod
    def of(cls, matrix: np.ndarray) -> _HeldScan:
        full = matrix.astype(np.float32)
        norms = np.maximum(np.linalg.norm(full, axis=1), 1e-12)
        full /= norms[:, None]
        _, axes = np.linalg.eigh(full.T @ full)  # eigenvalues ascending
        basis = np.ascontiguousarray(axes[:, ::-1][:, :PROJECTED_DIMS], dtype=np.float32)
        return cls(norms.astype(np.float64), basis, np.ascontiguousarray((full @ basis).astype(np.float16)))


SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (doc_id TEXT PRIMARY KEY, title TEXT, metadata TEXT, units TEXT);
CREATE TABLE IF NOT EXISTS chunks (key INTEGER PRIMARY KEY AUTOINCREMENT, chunk_id TEXT UNIQUE,
    doc_id TEXT, view TEXT, start INTEGER, end INTEGER, text TEXT,
    char_start INTEGER, char_end INTEGER, section TEXT);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(doc_id);
"""


def _connect(file: Path, writable: bool) -> sqlite3.Connection:
    """SQLite of an index. Writers use a rollback journal (no -wal / -shm files beside it), so readers open it
    read-only (`mode=ro`) and never write; where even that cannot open it (a read-only folder holding a database
    left in WAL mode by an older build), as immutable."""
    try:
        if writable:
            db = sqlite3.connect(file, check_same_thread=False, timeout=60)
            db.execute("PRAGMA journal_mode=DELETE")
            return db
        uri = f"{file.resolve().as_uri()}?mode=ro"
        if not file.is_file():
            raise IndexUnusableError(f"the index at {file.parent} has no store.sqlite: rebuild it with `ragfunnel index --rebuild`")
        db = sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=60)
        try:
            db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        except sqlite3.OperationalError:  # cannot open its WAL files read-only
            db.close()
            db = sqlite3.connect(f"{uri}&immutable=1", uri=True, check_same_thread=False)
        return db
    except sqlite3.DatabaseError as exc:
        raise _corrupt(file, exc) from None


def _check_text(docs: Sequence[Document]) -> None:
    """Every id, title and unit can be stored as UTF-8: a lone surrogate (from a JSON `\\udcff` escape, or bytes a
    loader decoded with surrogateescape) is an error naming the document and unit, before anything is written."""
    for doc in docs:
        for what, text in (("id", doc.doc_id), ("title", doc.title),
                           *((f"unit {u.unit_id}", u.text) for u in doc.units),
                           *((f"speaker of {u.unit_id}", s) for u in doc.units for s in u.speakers)):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise CorpusError(f"document {doc.doc_id.encode('utf-8', 'backslashreplace').decode()}: its {what} holds "
                                  f"a lone surrogate (\\u{ord(text[exc.start]):04x}) at character {exc.start}, "
                                  "which is not text: fix the source") from None


def _corrupt(file: Path, exc: BaseException) -> IndexUnusableError:
    return IndexUnusableError(f"the index file {file.name} in {file.parent} is damaged ({str(exc) or type(exc).__name__}): "
                       "rebuild the index with `ragfunnel index --rebuild`")


def _usearch_index_class():
    # onnxruntime segfaults when imported after usearch 2.26 (seen with onnxruntime 1.32); the other order is fine.
    import onnxruntime  # noqa: F401
    from usearch.index import Index

    return Index


def _chunk(chunk_id: str, doc_id: str, view: str, start: int, end: int, text: str, char_start: int | None,
           char_end: int | None, section: str | None) -> Chunk:
    return Chunk(chunk_id, doc_id, view, text, start, end, char_start or 0, char_end or 0,
                 tuple(json.loads(section)) if section else ())


def _units_json(units: Sequence[Unit]) -> str:
    return json.dumps([u.to_row() for u in units])


def _read_manifest(path: Path) -> dict[str, Any]:
    file = path / MANIFEST
    if not file.is_file():
        raise IndexUnusableError(f"no index at {path}: build it with `ragfunnel index` (or set RAGFUNNEL_HOME / --index)")
    try:
        return json.loads(file.read_text())
    except json.JSONDecodeError:
        raise IndexUnusableError(f"{file} is corrupt: rebuild with `ragfunnel index --rebuild`") from None


def _info(manifest: dict[str, Any]) -> IndexInfo:
    settings = StoreSettings.from_stored(manifest["settings"])
    return IndexInfo(
        backend="embedded",
        settings=settings,
        encoder_model_id=manifest.get("encoder_model_id"),
        documents=int(manifest.get("documents") or 0),
        chunks={str(k): int(v) for k, v in (manifest.get("chunks") or {}).items()},
        built_at=manifest.get("built_at"),
        pending_vectors=[v for v in manifest.get("pending_dense") or () if v in settings.dense_views],
    )


def peek_embedded(path: str | Path) -> IndexInfo | None:
    """What the complete index at `path` holds, read from its manifest without opening it; None when there is none
    (or it is incomplete, corrupt or of another format)."""
    try:
        manifest = json.loads((Path(path) / MANIFEST).read_text())
        if manifest.get("complete") and manifest.get("format_version") == FORMAT_VERSION:
            return _info(manifest)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def open_embedded(path: str | Path, cache: EmbeddingCache, check_encoder: bool = True) -> EmbeddedStore:
    """Open a built index; the settings it was built with come from its manifest. `check_encoder=False` is for
    readers of its text only (training data), which may open it while its encoder is being replaced."""
    path = Path(path)
    old = path.with_name(path.name + ".old")
    if not path.exists() and old.exists():  # a build was killed between its two renames
        os.replace(old, path)
    manifest = _read_manifest(path)
    if manifest.get("format_version") != FORMAT_VERSION:
        raise IndexUnusableError(
            f"the index at {path} was built by another version of ragfunnel "
            f"(format {manifest.get('format_version')}, this is {FORMAT_VERSION}): rebuild with `ragfunnel index --rebuild`"
        )
    if not manifest.get("complete"):
        raise IndexUnusableError(f"the index at {path} is incomplete: run `ragfunnel index` again to finish it")
    settings = StoreSettings.from_stored(manifest["settings"])
    model_id = shared_encoder(settings.encoder, settings.max_length).model_id if check_encoder else None
    if check_encoder and manifest.get("encoder_model_id") != model_id:
        raise IndexUnusableError(
            f"the index at {path} was built with the embedding model {manifest.get('encoder_model_id')!r}, "
            f"not {model_id!r}: rebuild with `ragfunnel index --rebuild`"
        )
    return EmbeddedStore(path, settings, cache, manifest)


class _BuildProgress:
    """One build's progress across its batches: each task counts on from where the last batch left it, its total
    the batches so far plus the rest estimated from the documents still to come (exact in the last batch), so a
    bar or a log line covers the whole build and finishes once."""

    def __init__(self, progress: Progress, documents: int | None):
        self.progress, self.documents = progress, documents
        self.done_before: dict[str, int] = {}
        self.last: dict[str, int] = {}
        self.seen = self.batch_size = 0

    def start_batch(self, seen_before: int, size: int) -> None:
        for task, total in self.last.items():
            self.done_before[task] = self.done_before.get(task, 0) + total
        self.last, self.seen, self.batch_size = {}, seen_before, size

    def __call__(self, task: str, done: int, total: int) -> None:
        self.last[task] = total
        prior = self.done_before.get(task, 0)
        still = self.documents - self.seen - self.batch_size if self.documents is not None else 0
        rest = max(1, round(total * still / self.batch_size)) if still > 0 and self.batch_size else 0
        self.progress(task, prior + done, prior + total + rest)


def _batches(docs: Iterable[Document], size: int) -> Iterator[list[Document]]:
    batch: list[Document] = []
    for doc in docs:
        batch.append(doc)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def build_embedded(
    docs: Iterable[Document],
    path: str | Path,
    settings: StoreSettings,
    cache: EmbeddingCache,
    progress: Progress | None = None,
    for_sync: bool = False,
    vectors_after: bool = False,
    on_searchable: Callable[[EmbeddedStore], None] | None = None,
) -> EmbeddedStore:
    """Build a complete index at `path` via `<path>.partial` and an atomic swap; the old index serves until then.
    `for_sync`: it will take replaces and deletes (a folder collection): BM25 goes in buckets from the start.
    `docs` are read once, `BUILD_BATCH` at a time (chunked, embedded and written a batch at a time; the HNSW files
    are saved once at the end), so a build holds one batch's chunks, not the whole corpus's, beside the index.
    `vectors_after` (a first build, with no index to serve meanwhile): the documents, chunks and BM25 are swapped in
    first, with the dense views listed as pending, so the index serves BM25 searches while its vectors are embedded
    (`finish_vectors`; `on_searchable` is called with the store before that); a kill during that leaves the BM25
    index serving, and the next build finishes it."""
    path = Path(path)
    partial = path.with_name(path.name + ".partial")
    old = path.with_name(path.name + ".old")
    if partial.exists():  # a killed build: its embeddings are in the cache, the rest is cheap to redo
        shutil.rmtree(partial)
    for leftover in path.parent.glob(f".{path.name}.failed-*"):  # what a failed build could not delete at once
        shutil.rmtree(leftover, ignore_errors=True)
    store = None
    try:
        pending = list(settings.dense_views) if vectors_after else []
        store = EmbeddedStore.create(partial, settings, cache, bm25_buckets=BM25_BUCKETS if for_sync else 0,
                                     pending=pending)
        tracker = _BuildProgress(progress, len(docs) if isinstance(docs, Sized) else None) if progress else None
        seen = 0
        for batch in _batches(docs, BUILD_BATCH):
            if tracker is not None:
                tracker.start_batch(seen, len(batch))
            store._apply(batch, (), tracker, build_batch=True)
            seen += len(batch)
        store._save_dense()
        store._set_manifest(
            complete=True,
            dirty=False,
            **store._counts(),  # not len(docs): a repeated id is one document
            built_at=time.strftime("%Y-%m-%dT%H:%M:%S"),
            generation=time.time_ns(),
        )
        store.close()
    except BaseException:  # a failed or interrupted build leaves no half-built index behind (the cache keeps the
        if store is not None:  # embeddings, so the next build redoes little)
            store.close()
        # moved aside first (atomic), then deleted: tantivy threads of the failed write may still touch files there
        trash = partial.with_name(f".{path.name}.failed-{os.getpid()}-{time.time_ns()}")
        try:
            os.replace(partial, trash)
        except OSError:
            trash = partial
        shutil.rmtree(trash, ignore_errors=True)
        raise
    if path.exists():
        if old.exists():
            shutil.rmtree(old)
        os.replace(path, old)
    os.replace(partial, path)
    if old.exists():
        shutil.rmtree(old)
    store = open_embedded(path, cache)
    if pending:
        if on_searchable is not None:
            on_searchable(store)
        store.finish_vectors(progress)
    return store
