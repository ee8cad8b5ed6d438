"""A store held in process memory: BM25 computed with numpy from term statistics (the same analyzer, k1 and b as
the embedded store's tantivy index), exact cosine search over float32 vectors.

It exists to show what a backend must implement (it passes the same conformance suite as the embedded store, in
~250 lines) and for tests and small corpora: building it needs no index engine. It is saved to one file in its
directory (`memory.npz`), each write replacing it atomically, so a reader never sees half a write.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragfunnel import __version__
from ragfunnel.analysis import build_analyzer
from ragfunnel.chunking import chunk_documents
from ragfunnel.embedding import EmbeddingCache, shared_encoder
from ragfunnel.errors import IndexUnusableError
from ragfunnel.store.base import IndexInfo, Progress, StoreSettings, WritesThroughApply, chunk_context
from ragfunnel.store.filters import Filter
from ragfunnel.store.vectors import all_vectors
from ragfunnel.types import Chunk, Document, Unit

K1, B = 1.2, 0.75  # tantivy's BM25 constants
STATE_FILE = "memory.npz"


class MemoryStore(WritesThroughApply):
    def __init__(self, settings: StoreSettings, cache: EmbeddingCache | None, path: Path | None = None,
                 encoder_model_id: str | None = None):
        self.settings, self.cache = settings, cache
        self.path = Path(path) if path is not None else None
        self._artifacts: dict[str, str] = {}  # saved with the state
        self.encoder_model_id = encoder_model_id  # what the stored vectors were made with
        self._analyzer = build_analyzer(settings.analyzer)
        self._lock = threading.RLock()
        self._docs: dict[str, Document] = {}
        self._chunks: dict[str, Chunk] = {}  # insertion order = stable chunk order
        self._terms: dict[str, Counter] = {}  # chunk id -> term frequencies (sparse views only)
        self._vectors: dict[str, np.ndarray] = {}  # chunk id -> unit vector (dense views only)
        self.built_at: str | None = None

    # ---- writes -----------------------------------------------------------------------------------------------

    def apply(self, upserts: Sequence[Document] = (), deletes: Sequence[str] = (),
              progress: Progress | None = None) -> int:
        """Upsert and delete in one write, saved by one atomic file replace; returns how many deletes existed."""
        docs = list({d.doc_id: d for d in upserts}.values())
        ids = {d.doc_id for d in docs}
        chunks = chunk_documents(docs, self.settings.views, chunk_context(self.settings, self.cache))
        vectors = {cid: _unit(v) for cid, v in all_vectors(self.settings, self.cache, chunks, progress).items()}
        with self._lock:
            existing = [d for d in dict.fromkeys(deletes) if d in self._docs and d not in ids]
            if not docs and not existing:
                return 0
            self._remove([*ids, *existing])
            for d in docs:
                self._docs[d.doc_id] = d
            for c in chunks:
                self._chunks[c.chunk_id] = c
                if c.view in self.settings.sparse_views:
                    self._terms[c.chunk_id] = Counter(self.analyze(c.text))
            self._vectors.update(vectors)
            self._save()
            return len(existing)

    def _remove(self, doc_ids: list[str]) -> None:
        gone = set(doc_ids)
        for d in doc_ids:
            self._docs.pop(d, None)
        for cid in [cid for cid, c in self._chunks.items() if c.doc_id in gone]:
            del self._chunks[cid]
            self._terms.pop(cid, None)
            self._vectors.pop(cid, None)

    # ---- reads ------------------------------------------------------------------------------------------------

    def info(self) -> IndexInfo:
        with self._lock:
            return IndexInfo(
                backend="memory",
                settings=self.settings,
                encoder_model_id=self.encoder_model_id,
                documents=len(self._docs),
                chunks={v: self.count_chunks(v) for v in self.settings.views},
                built_at=self.built_at,
            )

    def read_artifact(self, name: str) -> str | None:
        return self._artifacts.get(name)

    def write_artifact(self, name: str, text: str) -> str:
        with self._lock:
            self._artifacts[name] = text
            self._save()
        return f"{self.path / STATE_FILE if self.path else 'memory'} ({name})"

    def document(self, doc_id: str) -> Document | None:
        return self._docs.get(doc_id)

    def doc_metadata(self, doc_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        return {d: dict(self._docs[d].metadata) for d in doc_ids if d in self._docs}

    def doc_ids(self) -> list[str]:
        return sorted(self._docs)

    def count_matching(self, where: Filter) -> int:
        with self._lock:
            return sum(1 for d in self._docs.values()
                       if where.matches_document(d.doc_id, d.metadata) and where.matches_units(d.units))

    def _admitted(self, view: str, where: Filter) -> set[str]:
        """The chunks of `view` that `where` admits: their document matches, then one of their units does."""
        with self._lock:
            docs = {d for d, doc in self._docs.items() if where.matches_document(d, doc.metadata)}
            return {cid for cid, c in self._chunks.items() if c.view == view and c.doc_id in docs
                    and where.matches_units(self._docs[c.doc_id].units[c.start:c.end])}

    # Reads that walk the dicts hold the lock: a concurrent write would otherwise change them mid-iteration.

    def chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        with self._lock:
            return [self._chunks[c] for c in chunk_ids if c in self._chunks]

    def count_chunks(self, view: str | None = None) -> int:
        with self._lock:
            return sum(1 for c in self._chunks.values() if view is None or c.view == view)

    def view_chunks(self, view: str) -> list[Chunk]:
        with self._lock:
            return [c for c in self._chunks.values() if c.view == view]

    def doc_chunks(self, view: str, doc_id: str) -> list[Chunk]:
        with self._lock:
            chunks = [c for c in self._chunks.values() if c.doc_id == doc_id and c.view == view]
        return sorted(chunks, key=lambda c: c.start)

    def close(self) -> None:
        pass

    def snapshot(self) -> threading.RLock:
        return self._lock

    # ---- sparse -----------------------------------------------------------------------------------------------

    def analyze(self, text: str) -> list[str]:
        return self._analyzer.analyze(text)

    def _require(self, view: str, views: list[str], kind: str) -> None:
        if view not in views:
            raise IndexUnusableError(
                f"this index has no {kind} index for view {view!r} (it has {sorted(views) or 'none'}); "
                "rebuild with the view enabled: ragfunnel index --rebuild"
            )

    def _sparse_view(self, view: str) -> list[tuple[str, Counter]]:
        self._require(view, self.settings.sparse_views, "BM25")
        with self._lock:
            return [(cid, self._terms[cid]) for cid, c in self._chunks.items() if c.view == view]

    def count_sparse(self, view: str) -> int:
        return len(self._sparse_view(view))

    def term_idfs(self, view: str, query: str) -> dict[str, float | None]:
        rows = self._sparse_view(view)
        n = max(len(rows), 1)
        out: dict[str, float | None] = {}
        for term in dict.fromkeys(self.analyze(query)):
            df = sum(1 for _, tf in rows if term in tf)
            out[term] = math.log(1 + (n - df + 0.5) / (df + 0.5)) if df else None
        return out

    def match_sparse(self, view: str, query: str, where: Filter | None = None) -> list[str]:
        rows = self._sparse_view(view)
        terms = set(self.analyze(query))
        if not terms:
            return []
        found = [cid for cid, tf in rows if all(t in tf for t in terms)]
        if where is not None:
            admitted = self._admitted(view, where)
            found = [cid for cid in found if cid in admitted]
        return sorted(found)

    def search_sparse(self, view: str, query: str, limit: int, where: Filter | None = None) -> list[tuple[str, float]]:
        rows = self._sparse_view(view)
        terms = self.analyze(query)
        if not terms or not rows:
            return []
        lengths = np.array([sum(tf.values()) for _, tf in rows], dtype=np.float64)
        norm = K1 * (1 - B + B * lengths / max(lengths.mean(), 1e-9))
        scores = np.zeros(len(rows))
        for term, idf in self.term_idfs(view, query).items():
            if idf is None:
                continue
            tf = np.array([t.get(term, 0) for _, t in rows], dtype=np.float64)
            scores += idf * terms.count(term) * tf * (K1 + 1) / (tf + norm)
        if where is not None:  # after scoring: the statistics are those of the whole view, filtered or not
            admitted = self._admitted(view, where)
            scores[[i for i, (cid, _) in enumerate(rows) if cid not in admitted]] = 0.0
        order = [i for i in np.argsort(-scores, kind="stable")[:limit] if scores[i] > 0]
        return [(rows[i][0], float(scores[i])) for i in order]

    # ---- dense ------------------------------------------------------------------------------------------------

    def _dense_view(self, view: str) -> tuple[list[str], np.ndarray]:
        self._require(view, self.settings.dense_views, "vector")
        with self._lock:
            ids = [cid for cid, c in self._chunks.items() if c.view == view and cid in self._vectors]
            rows = [self._vectors[c] for c in ids]
        dim = shared_encoder(self.settings.encoder, self.settings.max_length).dim or 384
        matrix = np.stack(rows) if rows else np.zeros((0, dim), dtype=np.float32)
        return ids, matrix

    def count_dense(self, view: str) -> int:
        return len(self._dense_view(view)[0])

    def search_dense(
        self, view: str, vector: np.ndarray, limit: int, ef: int | None = None, exact: bool = False,
        where: Filter | None = None, pool: int | None = None,
    ) -> list[tuple[str, float]]:
        ids, matrix = self._dense_view(view)  # always exact: `ef` has no meaning without an ANN index
        if where is not None:
            admitted = self._admitted(view, where)
            kept = [i for i, cid in enumerate(ids) if cid in admitted]
            ids, matrix = [ids[i] for i in kept], matrix[kept]
        if not ids:
            return []
        query = np.asarray(vector, dtype=np.float32)
        sims = matrix @ (query / max(float(np.linalg.norm(query)), 1e-12))  # rows are unit vectors: cosine
        order = np.argsort(-sims, kind="stable")[:limit]
        return [(ids[i], float(sims[i])) for i in order]

    def doc_vectors(self, view: str, doc_id: str) -> np.ndarray:
        self._require(view, self.settings.dense_views, "vector")
        with self._lock:
            rows = [self._vectors[c.chunk_id] for c in self.doc_chunks(view, doc_id) if c.chunk_id in self._vectors]
        dim = shared_encoder(self.settings.encoder, self.settings.max_length).dim or 384
        return np.stack(rows) if rows else np.zeros((0, dim), dtype=np.float32)

    # ---- persistence ------------------------------------------------------------------------------------------

    def _save(self) -> None:
        if self.path is None:
            return
        self.path.mkdir(parents=True, exist_ok=True)
        ids = list(self._vectors)
        state = {
            "ragfunnel_version": __version__,
            "settings": self.settings.model_dump(),
            "built_at": self.built_at,
            "encoder_model_id": self.encoder_model_id,
            "artifacts": self._artifacts,
            "documents": [
                [d.doc_id, d.title, d.metadata, [u.to_row() for u in d.units]]
                for d in self._docs.values()
            ],
            # stored, not re-chunked on load: a semantic chunker would need the encoder to cut them again
            "chunks": [[c.chunk_id, c.doc_id, c.view, c.text, c.start, c.end, c.char_start, c.char_end,
                        list(c.section)] for c in self._chunks.values()],
        }
        dim = shared_encoder(self.settings.encoder, self.settings.max_length).dim or 384
        tmp = self.path / ("tmp-" + STATE_FILE)
        with tmp.open("wb") as fh:  # one file, replaced whole: a reader sees the old state or the new
            np.savez(fh, state=np.array(json.dumps(state)), ids=np.array(ids, dtype=str),
                     vectors=np.stack([self._vectors[i] for i in ids]) if ids else np.zeros((0, dim), np.float32))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path / STATE_FILE)

    @classmethod
    def load(cls, path: Path, cache: EmbeddingCache | None) -> MemoryStore:
        file = path / STATE_FILE
        if not file.is_file():
            raise IndexUnusableError(f"no index at {path}: build it with `ragfunnel index` (or set RAGFUNNEL_HOME / --index)")
        try:
            with np.load(file) as npz:
                state, ids, matrix = json.loads(str(npz["state"])), [str(i) for i in npz["ids"]], npz["vectors"]
        except (OSError, ValueError, KeyError, EOFError):
            raise IndexUnusableError(f"the index at {path} is corrupt: rebuild with `ragfunnel index --rebuild`") from None
        store = cls(StoreSettings.from_stored(state["settings"]), cache, path)
        store.built_at, store.encoder_model_id = state.get("built_at"), state.get("encoder_model_id")
        store._artifacts = dict(state.get("artifacts") or {})
        docs = [Document(i, t, tuple(Unit.from_row(u) for u in units), meta)
                for i, t, meta, units in state["documents"]]
        store._docs = {d.doc_id: d for d in docs}
        if "chunks" in state:
            chunks = [Chunk(*row[:8], tuple(row[8])) for row in state["chunks"]]
        else:  # saved before chunks were stored: chunking is deterministic, cut them again
            chunks = chunk_documents(docs, store.settings.views, chunk_context(store.settings, cache))
        for c in chunks:
            store._chunks[c.chunk_id] = c
            if c.view in store.settings.sparse_views:
                store._terms[c.chunk_id] = Counter(store.analyze(c.text))
        store._vectors = {cid: np.asarray(matrix[i], dtype=np.float32) for i, cid in enumerate(ids)}
        return store


def _unit(vector: np.ndarray) -> np.ndarray:
    vector = np.asarray(vector, dtype=np.float32)
    return vector / max(float(np.linalg.norm(vector)), 1e-12)


def build_memory(
    docs: Iterable[Document], path: str | Path | None, settings: StoreSettings, cache: EmbeddingCache,
    progress: Progress | None = None, for_sync: bool = False,
) -> MemoryStore:
    """A store of `docs` saved at `path` (`for_sync` changes nothing: every write already recomputes BM25)."""
    store = MemoryStore(settings, cache, None, shared_encoder(settings.encoder, settings.max_length).model_id)
    store.built_at = time.strftime("%Y-%m-%dT%H:%M:%S")
    store.upsert(docs, progress)
    if path is not None:  # written whole once complete: the old state serves until the swap
        store.path = Path(path)
        store._save()
    return store


def peek_memory(path: str | Path) -> IndexInfo | None:
    try:
        return MemoryStore.load(Path(path), None).info()  # the cache is only used for writes; no encoder is loaded
    except IndexUnusableError:
        return None


def open_memory(path: str | Path, cache: EmbeddingCache, check_encoder: bool = True) -> MemoryStore:
    """Open a saved store. `check_encoder=False` is for readers of its text only (as in `open_embedded`)."""
    store = MemoryStore.load(Path(path), cache)
    if check_encoder:
        model_id = shared_encoder(store.settings.encoder, store.settings.max_length).model_id
        if store.encoder_model_id != model_id:
            raise IndexUnusableError(
                f"the index at {path} was built with the embedding model {store.encoder_model_id!r}, "
                f"not {model_id!r}: rebuild with `ragfunnel index --rebuild`"
            )
    return store
