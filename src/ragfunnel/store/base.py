"""The Store protocol: everything the pipeline, retrievers, rerankers, presenter, reader and trainers may ask of
an index, whatever engine holds it. Nothing outside `store/` names a concrete store.

The protocol is split by concern: `StoreReader` (documents and chunks), `SparseIndex` (BM25 over a chunk view),
`DenseIndex` (vectors of a chunk view) and `StoreWriter` (upsert, delete, or both in one write: apply). `Store` is
all four. Sparse and dense search take a metadata filter (`where`, store/filters.py) that the backend applies inside the search. A backend is
added by implementing it and passing the conformance suite in tests/store/contract.py (see docs/architecture.md).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from pydantic import BaseModel, Field, model_validator

from ragfunnel.analysis import AnalyzerSettings
from ragfunnel.chunking import ChunkContext, ChunkView, canonical_view, resolve_view
from ragfunnel.embedding import DEFAULT_MODEL, EmbeddingCache
from ragfunnel.store.filters import Filter
from ragfunnel.types import Chunk, Document

Progress = Callable[[str, int, int], None]  # (task, done, total)

# A dense view of at most this many vectors is searched by an exact scan, not through its HNSW graph: at Friends'
# size (~61k windows) a scan costs ~5 ms on 2 cores and finds scenes HNSW misses at ef <= 600
# (docs/results/first_stage/ann_depth.md)
EXACT_SCAN_BELOW = 200_000


class StoreSettings(BaseModel):
    """Everything that decides what is in an index: a different value means a rebuild."""

    sparse_views: list[str] = Field(default_factory=lambda: ["scene", "w3s1", "utt"])
    # no scene vectors: only the vector_scene and all4 modes read them (`ragfunnel index --vectors scene,w3s1,utt`)
    dense_views: list[str] = Field(default_factory=lambda: ["w3s1", "utt"])
    encoder: str = DEFAULT_MODEL
    max_length: int = 256
    analyzer: AnalyzerSettings = Field(default_factory=AnalyzerSettings)
    vector_dtype: str = "f16"  # half-precision halves the exact scan (4.6 -> 2.9 ms for 61k windows), same top 50
    hnsw_connectivity: int = 16
    hnsw_expansion_add: int = 128
    corpus: str = "friends"  # the corpus (corpus/registry.py) the index was built from: its query filters, prompt domain
    derived_views: dict[str, str] = Field(
        # by default the windows' vectors come from their lines' vectors read in context (late_chunked_views): a
        # quarter of the encoder's tokens, a Friends cold build 3.1 times faster at hybrid recall@5 within 0.01 of
        # encoded windows on Direct, Reworded and FriendsQA dev
        # (docs/results/first_stage/cold_build_late_vs_encoded.md); from lines embedded alone, derived windows lost
        # 0.011-0.0125
        default_factory=lambda: {"w3s1": "utt"},
        description="dense view -> the one-unit dense view its vectors are derived from: a chunk's vector is the "
        "mean of the vectors of its units in that view, each weighted by its length in tokens, normalised, with no "
        "encoder call (`w3s1 = \"utt\"`). An entry applies when both views are dense views of the index; others "
        "are dropped.")

    late_chunked_views: list[str] = Field(
        default_factory=lambda: ["utt"],
        description="one-unit dense views (utt) whose vectors are read in context (late chunking): each document's "
        "units are packed into passes of at most max_length tokens, every pass is encoded once and a unit's vector is "
        "the mean of its own tokens' vectors there, so a line's vector sees the lines around it. With derived_views "
        "= {w3s1 = \"utt\"} the windows' vectors come from the same pass: one encoder call per pass for both views. "
        "Only encoders that give token vectors (the ONNX ones) read in context; others embed each unit alone.")

    @property
    def views(self) -> list[str]:
        return list(dict.fromkeys([*self.sparse_views, *self.dense_views]))

    @model_validator(mode="after")
    def _applicable_derived_views(self) -> StoreSettings:
        """Keep the `derived_views` entries whose two views are dense views of this index (so a default entry
        does not touch an index without them); such an entry must derive windows of units from one-unit chunks."""
        dense = {canonical_view(v) for v in self.dense_views}
        kept: dict[str, str] = {}
        for target, source in self.derived_views.items():
            target, source = canonical_view(target), canonical_view(source)
            if target not in dense or source not in dense or target == source:
                continue
            made, by = resolve_view(target), resolve_view(source)
            if not isinstance(made, ChunkView) or not isinstance(by, ChunkView) or by.size != 1:
                raise ValueError(f"derived_views: {target} = {source!r}: a view of whole units (scene, wNsS) can be "
                                 "derived from the one-unit view (utt), no other")
            kept[target] = source
        if kept != self.derived_views:
            self.derived_views = kept
        late: list[str] = []
        for view in self.late_chunked_views:
            view = canonical_view(view)
            if view not in dense or view in late:
                continue
            unit = resolve_view(view)
            if not isinstance(unit, ChunkView) or unit.size != 1:
                raise ValueError(f"late_chunked_views: {view!r}: only the one-unit view (utt) is read in context")
            late.append(view)
        if late != self.late_chunked_views:
            self.late_chunked_views = late
        return self

    @classmethod
    def from_stored(cls, data: dict[str, Any]) -> StoreSettings:
        """The settings an index was built with, as its manifest stores them: a setting added since is given the
        value that the index was built with (no derived views before they existed), not today's default."""
        return cls.model_validate({"derived_views": {}, "late_chunked_views": [], **data})

    def fingerprint_dump(self) -> dict[str, Any]:
        """The settings as the fingerprint hashes them: a setting at the value every index had before it existed
        is left out, so an index built before it keeps its fingerprint."""
        dump = self.model_dump()
        for key in ("derived_views", "late_chunked_views"):
            if not dump.get(key):
                dump.pop(key, None)
        return dump


def chunk_context(settings: StoreSettings, cache: EmbeddingCache | None) -> ChunkContext:
    """What the chunkers of an index use: its encoder's tokenizer and vectors (through the embedding cache)."""
    return ChunkContext(settings.encoder, settings.max_length, cache)


class PendingVectors(BaseModel):
    """Dense views of an index whose vectors are still being embedded (a first build serves BM25 and its documents
    first): how far the embedding is, and whether a build is at it now."""

    views: list[str]
    done: int = 0  # distinct texts of these views embedded so far (cached ones included)
    total: int = 0
    running: bool = False  # a `ragfunnel index` holds the index's vectors lock now

    @property
    def percent(self) -> int:
        return int(100 * self.done / self.total) if self.total else 0

    def line(self) -> str:
        """The one line a search says while it falls back to BM25."""
        if self.running:
            return f"vectors: {self.percent}% embedded; bm25 until then"
        return (f"vectors: {self.percent}% embedded and no build at it (stopped?): run `ragfunnel index` to finish "
                "them; bm25 until then")


class IndexInfo(BaseModel):
    """What an index holds, whatever engine holds it: enough to tell two indexes apart (`fingerprint`)."""

    backend: str
    settings: StoreSettings
    encoder_model_id: str | None = None
    documents: int = 0
    chunks: dict[str, int] = Field(default_factory=dict)
    built_at: str | None = None
    pending_vectors: list[str] = Field(default_factory=list, description="dense views not embedded yet: a first "
                                       "build serves BM25 while it embeds them")

    @property
    def fingerprint(self) -> str:
        """A short hash of what decides search results: settings, encoder and the size of every view.
        Two indexes with the same fingerprint answer the same questions the same way."""
        parts: list[Any] = [self.settings.fingerprint_dump(), self.encoder_model_id, self.documents,
                            sorted(self.chunks.items())]
        if self.pending_vectors:  # it answers otherwise until its vectors are in
            parts.append({"pending_vectors": sorted(self.pending_vectors)})
        payload = json.dumps(parts, sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:12]


class StoreReader(Protocol):
    """Documents and chunks by id."""

    settings: StoreSettings

    def info(self) -> IndexInfo:
        """What the index holds (settings, encoder, counts); its `fingerprint` names it."""

    def read_artifact(self, name: str) -> str | None:
        """A text trained for this index (the answerability gate's model) kept under `name`, or None."""

    def write_artifact(self, name: str, text: str) -> str:
        """Keep `text` under `name` with this index, replacing what was there (readers see the old text or the new,
        never a part); a rebuild starts without artifacts, a sync keeps them. Returns where it went, for messages."""

    def document(self, doc_id: str) -> Document | None: ...

    def snapshot(self) -> AbstractContextManager[Any]:
        """A context whose reads see one state of the index: a write of this process or another lands before all
        of them or after all of them (a hit's document and its chunks agree during a sync)."""

    def doc_metadata(self, doc_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The metadata of these documents; unknown ids are left out."""

    def doc_ids(self) -> list[str]:
        """Every document id, sorted."""

    def count_matching(self, where: Filter) -> int:
        """How many documents `where` admits: those matching its document conditions with at least one unit that
        matches its unit conditions (store/filters.py)."""

    def chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        """The chunks with these ids, in the order asked; unknown ids are left out."""

    def count_chunks(self, view: str | None = None) -> int: ...

    def view_chunks(self, view: str) -> list[Chunk]:
        """Every chunk of `view`, in a stable order."""

    def doc_chunks(self, view: str, doc_id: str) -> list[Chunk]:
        """Every chunk of `doc_id` in `view`, in unit order (the row order of `DenseIndex.doc_vectors`)."""

    def close(self) -> None: ...


class SparseIndex(Protocol):
    """BM25 over each sparse view, with the analyzer of `settings.analyzer`."""

    def analyze(self, text: str) -> list[str]:
        """The BM25 terms of `text`, in order (query and index use the same analysis)."""

    def search_sparse(self, view: str, query: str, limit: int, where: Filter | None = None) -> list[tuple[str, float]]:
        """(chunk id, BM25 score), best first. `where`: only chunks the filter admits, applied inside the search
        (up to `limit` of them whenever that many match); scores and IDFs stay those of the whole view."""

    def term_idfs(self, view: str, query: str) -> dict[str, float | None]:
        """BM25 IDF of each distinct analysed query term in `view` (None for a term no chunk contains)."""

    def match_sparse(self, view: str, query: str, where: Filter | None = None) -> list[str]:
        """Every chunk id of `view` that holds all the analysed terms of `query` (a conjunction, unranked, no
        limit: the exhaustive list an aggregation question needs), sorted; [] when `query` has no terms. `where`:
        only chunks the filter admits."""

    def count_sparse(self, view: str) -> int:
        """Chunks in the BM25 index of `view`."""


class DenseIndex(Protocol):
    """Vectors of each dense view (cosine similarity; the encoder is `settings.encoder`)."""

    def search_dense(
        self, view: str, vector: np.ndarray, limit: int, ef: int | None = None, exact: bool = False,
        where: Filter | None = None, pool: int | None = None,
    ) -> list[tuple[str, float]]:
        """(chunk id, cosine similarity), best first. `ef`: ANN search depth; `exact`: scan every vector.
        `where`: only chunks the filter admits, up to `limit` of them whenever that many match. `pool` (with
        `exact`): the store may scan a compact projection of every vector instead and rescore its best
        max(`pool`, 4 x `limit`) in full (a store without projections scans every vector in full)."""

    def count_dense(self, view: str) -> int:
        """Vectors in the dense index of `view`."""

    def pending_vectors(self) -> PendingVectors | None:
        """The dense views whose vectors a build is still embedding (searches of them fall back to BM25 until then),
        with its progress; None when every dense view is searchable (a backend that builds its vectors with the rest
        always says None)."""

    def doc_vectors(self, view: str, doc_id: str) -> np.ndarray:
        """The stored vectors of every chunk of `doc_id` in `view` (rows in the order of `doc_chunks`)."""


class StoreWriter(Protocol):
    def upsert(self, docs: Sequence[Document], progress: Progress | None = None) -> None:
        """Add documents, replacing any with the same id, in every index at once."""

    def delete(self, doc_ids: Sequence[str]) -> int:
        """Remove documents (and all their chunks from every index); returns how many existed."""

    def apply(self, upserts: Sequence[Document] = (), deletes: Sequence[str] = (),
              progress: Progress | None = None) -> int:
        """Upsert `upserts` and delete `deletes` as one write (an id in both is upserted): an open after a crash
        anywhere in it sees all of it or none of it. Returns how many of `deletes` existed. A folder sync is one
        `apply`; `upsert` and `delete` are the two halves of it."""

    def finish_vectors(self, progress: Progress | None = None) -> None:
        """Embed the dense views `pending_vectors` lists and make them searchable (nothing to do when none is); an
        interrupted run leaves them pending, and the next one goes on from the embedding cache."""


class WritesThroughApply:
    """`upsert` and `delete` as the two halves of `apply`, for a store whose one write path is `apply`; no pending
    vectors unless the store overrides `pending_vectors` / `finish_vectors`."""

    def pending_vectors(self) -> PendingVectors | None:
        return None

    def finish_vectors(self, progress: Progress | None = None) -> None:
        return None

    def apply(self, upserts: Sequence[Document] = (), deletes: Sequence[str] = (),
              progress: Progress | None = None) -> int:
        raise NotImplementedError

    def upsert(self, docs: Sequence[Document], progress: Progress | None = None) -> None:
        self.apply(docs, (), progress)

    def delete(self, doc_ids: Sequence[str]) -> int:
        return self.apply((), doc_ids)


class Store(StoreReader, SparseIndex, DenseIndex, StoreWriter, Protocol):
    """The whole contract of an index."""
