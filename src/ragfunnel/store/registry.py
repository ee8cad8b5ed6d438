"""Store backends by name: how to build and open an index. The only place that names concrete stores besides
their own modules, so the rest of the package is typed against the `Store` protocol.

`STORE_BACKENDS` is a `ragfunnel.registry.Registry`: a name -> a factory of the `StoreBackend`, with the pip extra
its dependencies come with and a one-line description; opening one whose dependencies are missing says what to
install.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragfunnel.embedding import EmbeddingCache
from ragfunnel.errors import ConfigError
from ragfunnel.registry import Registry
from ragfunnel.store.base import IndexInfo, Progress, Store, StoreSettings
from ragfunnel.store.embedded import build_embedded, open_embedded, peek_embedded
from ragfunnel.store.memory import build_memory, open_memory, peek_memory
from ragfunnel.store.postgres import build_postgres, bulk_load, location_for, open_postgres, peek_postgres
from ragfunnel.types import Document

DEFAULT_BACKEND = "embedded"


@dataclass(frozen=True)
class StoreBackend:
    build: Callable[..., Store]  # (docs, location, settings, cache, progress, for_sync) -> a complete, open store
    open: Callable[..., Store]  # (location, cache, check_encoder) -> the store built there
    peek: Callable[..., IndexInfo | None]  # (location) -> what a complete index there holds, without opening it
    # (index directory, dsn, collection) -> the location of a collection's index (default: its directory)
    locate: Callable[[Path, str | None, str], str | Path] | None = None
    # (location, settings, encoder model id, dim, docs, chunks, {chunk id: vector}, progress, built_at) -> None:
    # write a whole index of given chunks and vectors (nothing chunked or embedded again); None: not supported
    load: Callable[..., None] | None = None
    # its build takes `vectors_after`: a first build serves BM25 while its vectors are embedded
    vectors_after: bool = False


def _locate_postgres(directory: Path, dsn: str | None, collection: str) -> str:
    if not dsn:
        raise ConfigError("the postgres store needs a server: give --dsn, RAGFUNNEL_DSN or [store] dsn "
                          "(no server? `ragfunnel db start` runs one and prints its DSN)")
    return location_for(dsn, collection)


STORE_BACKENDS = Registry("store backend")


def register_backend(name: str, store_backend: StoreBackend, **details: Any) -> None:
    """Add a backend: its entry's factory gives `store_backend`; `details` are the Entry's (description, the extra
    and modules its dependencies come with)."""
    STORE_BACKENDS.register(name, lambda arg="": store_backend, **details)


register_backend("embedded", StoreBackend(build_embedded, open_embedded, peek_embedded, vectors_after=True),
                 description="one directory: SQLite + tantivy (BM25) + usearch (HNSW); the default")
register_backend("memory", StoreBackend(build_memory, open_memory, peek_memory),
                 description="everything in process memory (numpy BM25 and exact vectors), saved to one file; "
                             "for tests and small corpora")
register_backend("postgres", StoreBackend(build_postgres, open_postgres, peek_postgres, _locate_postgres, bulk_load),
                 extra="postgres", modules=("psycopg",), needs="psycopg",
                 description="PostgreSQL + pgvector: one database shared by many processes and machines; the location "
                             "is a DSN with the index's schema (postgresql://host/db#name)")


def backend(name: str) -> StoreBackend:
    if name not in STORE_BACKENDS.names():
        raise ConfigError(f"unknown store backend {name!r}: choose one of {', '.join(STORE_BACKENDS)}")
    return STORE_BACKENDS.get(name).factory("")


def index_location(backend_name: str, directory: Path, dsn: str | None, collection: str) -> str | Path:
    """Where the index of `collection` is on `backend_name`: `directory`, or what the backend derives (a DSN and
    schema for postgres)."""
    locate = backend(backend_name).locate
    return locate(directory, dsn, collection) if locate else directory


def build_index(
    docs: Iterable[Document],
    path: str | Path,
    settings: StoreSettings,
    cache: EmbeddingCache,
    progress: Progress | None = None,
    backend_name: str = DEFAULT_BACKEND,
    for_sync: bool = False,
    vectors_after: bool = False,
    on_searchable: Callable[[Store], None] | None = None,
) -> Store:
    """Build a complete index of `docs` (read once, so a generator will do) at `path`; the old one (if any) serves
    until the new one is complete.
    `for_sync`: the index will be kept in step with its sources by `Store.apply` (replaces, deletes); a backend
    may lay it out for that (the embedded one keeps BM25 in buckets, so a write rewrites only what it touches).
    `vectors_after`: a first build (nothing to serve meanwhile) makes the index searchable with BM25 before its
    vectors are embedded, where the backend can (`Store.pending_vectors` says how far they are; `on_searchable` is
    called with the store at that point); others build as usual."""
    chosen = backend(backend_name)
    if vectors_after and chosen.vectors_after:
        return chosen.build(docs, path, settings, cache, progress, for_sync=for_sync, vectors_after=True,
                            on_searchable=on_searchable)
    return chosen.build(docs, path, settings, cache, progress, for_sync=for_sync)


def open_store(
    path: str | Path, cache: EmbeddingCache, check_encoder: bool = True, backend_name: str = DEFAULT_BACKEND
) -> Store:
    """Open a built index. `check_encoder=False` is for readers of its text only (training data), which may open it
    while its encoder is being replaced."""
    return backend(backend_name).open(path, cache, check_encoder)


def peek_index(path: str | Path, backend_name: str = DEFAULT_BACKEND) -> IndexInfo | None:
    """What the complete index at `path` holds, without opening it; None when there is none yet."""
    return backend(backend_name).peek(path)


def copy_index(source: Store, location: str | Path, backend_name: str, progress: Progress | None = None) -> IndexInfo:
    """Copy the whole index `source` (documents, chunks and their stored vectors: nothing is chunked or embedded
    again) to a new index at `location` on `backend_name`; returns what the copy holds."""
    target = backend(backend_name)
    if target.load is None:
        raise ConfigError(f"the {backend_name} store cannot take a copied index: build it with `ragfunnel index`")
    info = source.info()
    settings = source.settings
    doc_ids = source.doc_ids()
    docs = []
    for i, doc_id in enumerate(doc_ids):
        doc = source.document(doc_id)
        if doc is not None:
            docs.append(doc)
        if progress and i % 1000 == 0:
            progress("documents", i, len(doc_ids))
    chunks, vectors = [], {}
    for view in settings.views:
        chunks += source.view_chunks(view)
    dim = 0
    for view in settings.dense_views:
        for i, doc in enumerate(docs):
            rows = source.doc_vectors(view, doc.doc_id)
            dim = dim or (rows.shape[1] if rows.ndim == 2 and rows.shape[0] else 0)
            for chunk, row in zip(source.doc_chunks(view, doc.doc_id), rows):
                vectors[chunk.chunk_id] = row
            if progress and i % 500 == 0:
                progress(f"vectors {view}", i, len(docs))
    target.load(location, settings, info.encoder_model_id or "", dim or 384, docs, chunks, vectors, progress,
                info.built_at)
    copied = peek_index(location, backend_name)
    if copied is None:
        raise ConfigError(f"the copy at {location} is not readable after the load")
    return copied
