"""Store backends by name: how to build and open an index. The only place that names concrete stores besides
their own modules, so the rest of the package is typed against the `Store` protocol.

A backend entry names the pip extra it needs; opening one whose dependencies are missing says what to install.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ragfunnel.embedding import EmbeddingCache
from ragfunnel.errors import ConfigError
from ragfunnel.store.base import IndexInfo, Progress, Store, StoreSettings
from ragfunnel.store.embedded import build_embedded, open_embedded, peek_embedded
from ragfunnel.store.memory import build_memory, open_memory, peek_memory
from ragfunnel.types import Document

DEFAULT_BACKEND = "embedded"


@dataclass(frozen=True)
class StoreBackend:
    build: Callable[..., Store]  # (docs, location, settings, cache, progress, for_sync) -> a complete, open store
    open: Callable[..., Store]  # (location, cache, check_encoder) -> the store built there
    peek: Callable[..., IndexInfo | None]  # (location) -> what a complete index there holds, without opening it
    extra: str | None = None  # the pip extra its dependencies come with (None: the core install)
    description: str = ""


STORE_BACKENDS: dict[str, StoreBackend] = {
    "embedded": StoreBackend(build_embedded, open_embedded, peek_embedded, None,
                             "one directory: SQLite + tantivy (BM25) + usearch (HNSW); the default"),
    "memory": StoreBackend(build_memory, open_memory, peek_memory, None,
                           "everything in process memory (numpy BM25 and exact vectors), saved to one file; "
                           "for tests and small corpora"),
}


def backend(name: str) -> StoreBackend:
    try:
        return STORE_BACKENDS[name]
    except KeyError:
        raise ConfigError(f"unknown store backend {name!r}: choose one of {', '.join(STORE_BACKENDS)}") from None


def build_index(
    docs: Sequence[Document],
    path: str | Path,
    settings: StoreSettings,
    cache: EmbeddingCache,
    progress: Progress | None = None,
    backend_name: str = DEFAULT_BACKEND,
    for_sync: bool = False,
) -> Store:
    """Build a complete index of `docs` at `path`; the old one (if any) serves until the new one is complete.
    `for_sync`: the index will be kept in step with its sources by `Store.apply` (replaces, deletes); a backend
    may lay it out for that (the embedded one keeps BM25 in buckets, so a write rewrites only what it touches)."""
    return backend(backend_name).build(docs, path, settings, cache, progress, for_sync=for_sync)


def open_store(
    path: str | Path, cache: EmbeddingCache, check_encoder: bool = True, backend_name: str = DEFAULT_BACKEND
) -> Store:
    """Open a built index. `check_encoder=False` is for readers of its text only (training data), which may open it
    while its encoder is being replaced."""
    return backend(backend_name).open(path, cache, check_encoder)


def peek_index(path: str | Path, backend_name: str = DEFAULT_BACKEND) -> IndexInfo | None:
    """What the complete index at `path` holds, without opening it; None when there is none yet."""
    return backend(backend_name).peek(path)
