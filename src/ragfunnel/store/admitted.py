"""What a metadata filter admits in an embedded store, resolved from SQLite once per (filter, view) and kept until
the next write: the documents it matches, and the integer keys of the chunks of a view it admits, which the BM25
query (a term set) and the vector search (a masked scan) are restricted to.

The document table (ids and metadata) and each view's chunk table (key, document, unit range) are read once and
held as arrays; a filter is then a pass over the documents' metadata plus, for unit conditions (`section`,
`page`), a pass over the units of the documents that matched. Nothing here writes to the index.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from ragfunnel.store.filters import Filter
from ragfunnel.types import Unit

CACHED_FILTERS = 64


@dataclass(frozen=True)
class Admitted:
    """The chunks of one view a filter admits: their keys (sorted), and, when the filter has no unit conditions,
    the ids of the documents they belong to (a shorter term set for BM25 than the keys); and the complements of
    both (what it leaves out: the shorter set when a filter admits most of a view)."""

    keys: np.ndarray
    doc_ids: tuple[str, ...] | None
    everything: bool  # every chunk of the view: search as without a filter
    excluded_keys: np.ndarray
    excluded_doc_ids: tuple[str, ...] | None

    @property
    def size(self) -> int:
        return int(self.keys.size)


@dataclass(frozen=True)
class _ViewTable:
    keys: np.ndarray  # uint64, sorted
    doc: np.ndarray  # index into the document table
    start: np.ndarray  # unit range [start, end) of each chunk
    end: np.ndarray


class FilterResolver:
    def __init__(self, db: sqlite3.Connection, lock: threading.RLock):
        self._db, self._lock = db, lock
        self.clear()

    def clear(self) -> None:
        """Forget everything read: the index changed."""
        with self._lock:
            self._doc_ids: list[str] | None = None
            self._doc_index: dict[str, int] = {}
            self._metadata: list[dict] = []
            self._views: dict[str, _ViewTable] = {}
            self._units: dict[int, tuple[Unit, ...]] = {}
            self._doc_masks: OrderedDict[Filter, np.ndarray] = OrderedDict()
            self._counts: dict[Filter, int] = {}
            self._admitted: OrderedDict[tuple[str, Filter], Admitted] = OrderedDict()

    def count(self, where: Filter) -> int:
        """Documents the filter admits (document conditions, then at least one unit for unit conditions)."""
        with self._lock:
            if where in self._counts:
                return self._counts[where]
            docs = np.flatnonzero(self._documents(where))
            count = int(docs.size) if not where.on_units else sum(
                1 for d in docs if any(where.matches_unit(u) for u in self._doc_units(int(d))))
            self._counts[where] = count
            if len(self._counts) > CACHED_FILTERS:
                self._counts.pop(next(iter(self._counts)))
            return count

    def admitted(self, view: str, where: Filter) -> Admitted:
        with self._lock:
            cached = self._admitted.get((view, where))
            if cached is not None:
                self._admitted.move_to_end((view, where))
                return cached
            docs = self._documents(where)  # first: it reads the document table the view table refers to
            table = self._view(view)
            rows = docs[table.doc] if table.doc.size else np.zeros(0, dtype=bool)
            if where.on_units:
                rows &= self._unit_rows(table, rows, where)
            doc_ids = excluded_ids = None
            if not where.on_units:
                doc_ids = tuple(self._doc_ids[i] for i in np.flatnonzero(docs))
                excluded_ids = tuple(self._doc_ids[i] for i in np.flatnonzero(~docs))
            admitted = Admitted(table.keys[rows], doc_ids, bool(rows.all()), table.keys[~rows], excluded_ids)
            self._admitted[(view, where)] = admitted
            if len(self._admitted) > CACHED_FILTERS:
                self._admitted.popitem(last=False)
            return admitted

    # ---- tables -------------------------------------------------------------------------------------------------------

    def _documents(self, where: Filter) -> np.ndarray:
        """A mask over the document table: which documents match the document conditions."""
        if self._doc_ids is None:
            rows = self._db.execute("SELECT doc_id, metadata FROM documents ORDER BY doc_id").fetchall()
            self._doc_ids = [d for d, _ in rows]
            self._metadata = [json.loads(m) for _, m in rows]
            self._doc_index = {d: i for i, d in enumerate(self._doc_ids)}
        key = Filter(where.on_documents)
        mask = self._doc_masks.get(key)
        if mask is None:
            mask = np.fromiter(
                (key.matches_document(d, m) for d, m in zip(self._doc_ids, self._metadata)), dtype=bool,
                count=len(self._doc_ids),
            )
            self._doc_masks[key] = mask
            if len(self._doc_masks) > CACHED_FILTERS:
                self._doc_masks.popitem(last=False)
        return mask.copy()

    def _view(self, view: str) -> _ViewTable:
        table = self._views.get(view)
        if table is None:
            rows = self._db.execute("SELECT key, doc_id, start, end FROM chunks WHERE view = ? ORDER BY key", (view,)).fetchall()
            index = self._doc_index
            table = _ViewTable(
                np.array([r[0] for r in rows], dtype=np.uint64),
                np.array([index.get(r[1], -1) for r in rows], dtype=np.int64),
                np.array([r[2] for r in rows], dtype=np.int64),
                np.array([r[3] for r in rows], dtype=np.int64),
            )
            self._views[view] = table
        return table

    def _doc_units(self, doc: int) -> tuple[Unit, ...]:
        """The document's units with only what unit conditions read (section, page): text is not kept."""
        units = self._units.get(doc)
        if units is None:
            (raw,) = self._db.execute("SELECT units FROM documents WHERE doc_id = ?", (self._doc_ids[doc],)).fetchone()
            units = tuple(Unit("", "", section=u.section, page=u.page) for u in map(Unit.from_row, json.loads(raw)))
            self._units[doc] = units
        return units

    def _unit_rows(self, table: _ViewTable, rows: np.ndarray, where: Filter) -> np.ndarray:
        """Of the chunks in `rows`, those with a unit that matches every unit condition."""
        out = np.zeros(rows.size, dtype=bool)
        matching: dict[int, np.ndarray] = {}  # document -> prefix count of its matching units
        for i in np.flatnonzero(rows):
            doc = int(table.doc[i])
            counts = matching.get(doc)
            if counts is None:
                flags = [where.matches_unit(u) for u in self._doc_units(doc)]
                counts = matching[doc] = np.concatenate([[0], np.cumsum(flags, dtype=np.int64)])
            start, end = int(table.start[i]), min(int(table.end[i]), counts.size - 1)
            out[i] = counts[end] > counts[start]
        return out
