"""Collections: several indexes side by side under `$RAGFUNNEL_HOME`, each with its own settings.

`friends` is the Friends corpus in `<home>/index` (so every earlier command and table keeps working); any other name
is a folder collection in `<home>/collections/<name>/`: `index/` (the store), `collection.toml` (its own settings,
e.g. `[store]` views; read after the home's config.toml) and `sources.json` (the PATHs, globs and per-file content
hashes of the last index run, so running `index` again reports what was added, updated, deleted, unchanged or
skipped).

Indexing a folder builds a complete new index beside the old one and swaps it in (the old one serves until then;
a killed run leaves the old one); files whose text did not change are not embedded again (the embedding cache).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ragfunnel.config import COLLECTION_FILE, DEFAULT_COLLECTION, Settings
from ragfunnel.corpus.folder import walk
from ragfunnel.corpus.loaders.base import LoaderOptions
from ragfunnel.embedding import EmbeddingCache
from ragfunnel.errors import ConfigError
from ragfunnel.store import IndexInfo, StoreSettings, build_index, peek_index
from ragfunnel.store.base import Progress

SOURCES_FILE = "sources.json"
# A file is one document; its whole text makes a poor vector (the encoder reads its first 256 tokens), so folder
# collections index structure-aware chunks of at most 256 embedder tokens (never across a section or a PDF page,
# each headed by `Title › Section`) for BM25 and vectors, and keep BM25 over the whole file. Chosen by measurement
# (docs/results/first_stage/chunkers.md): on NFCorpus dev, hybrid over `sec256` 0.331 nDCG@10 against 0.319 for
# the former default (BM25 over files, 3-block windows and blocks + window and block vectors); BM25 over `sec256`
# beats BM25 over whole files on NFCorpus dev and SciFact test. The modes `bm25`, `vector` and `hybrid` of a
# folder collection search those views (written to its collection.toml with the store settings).
FILES_STORE = {"corpus": "files", "sparse_views": ["scene", "sec256"], "dense_views": ["sec256"]}
FILES_MODES: dict[str, dict[str, Any]] = {
    "bm25": {"retrievers": ["bm25_sec256"], "fusion": {"method": "none"},
             "description": "BM25 over sections of at most 256 tokens, collapsed to files"},
    "vector": {"retrievers": ["dense_sec256"], "fusion": {"method": "none"},
               "description": "MiniLM over sections of at most 256 tokens, collapsed to files"},
    "hybrid": {"retrievers": ["bm25_sec256", "dense_sec256"], "fusion": {"method": "rrf", "k": 10},
               "description": "BM25 + vectors over sections of at most 256 tokens, RRF k=10"},
    "accurate": {"retrievers": ["bm25_sec256", "dense_sec256"], "fusion": {"method": "rrf", "k": 10},
                 "rerank": {"method": "ltr", "candidates": 20},
                 "description": "hybrid, then the collection's LambdaMART (ragfunnel train reranker) over the top 20"},
}
# A BEIR collection (`ragfunnel eval beir`): documents are short (abstracts, passages) and their units sentences.
# BM25 over whole documents, sentence windows and sentences; vectors per document (the encoder reads its first 256
# tokens, most of an abstract) and per sentence (short: about as many tokens in all as the documents; windows would
# triple that). Its own modes replace the Friends ones that need window vectors.
BEIR_STORE = {"corpus": "beir", "sparse_views": ["scene", "w3s1", "utt"], "dense_views": ["scene", "utt"]}
_BEIR_RETRIEVERS = ["bm25_scene", "bm25_w3s1", "bm25_utt", "dense_scene", "dense_utt"]
_BEIR_WEIGHTS = {"bm25_scene": 0.2, "bm25_w3s1": 0.2, "bm25_utt": 0.2, "dense_scene": 0.2, "dense_utt": 0.2}
BEIR_MODES: dict[str, dict[str, Any]] = {
    "bm25": {"retrievers": ["bm25_scene"], "fusion": {"method": "none"}, "description": "BM25 over whole documents"},
    "vector": {"retrievers": ["dense_scene"], "fusion": {"method": "none"},
               "description": "MiniLM over whole documents (first 256 tokens)"},
    # min-max score fusion, vectors 0.4 and each BM25 view 0.2: best of RRF k 10/30/60 (0.711), dense-weighted RRF
    # and score fusion with dense 0.4/0.5/0.6 (0.733) on SciFact *train* (docs/results/first_stage/beir.md)
    "hybrid": {"retrievers": _BEIR_RETRIEVERS, "fusion": {"method": "score", "weights": _BEIR_WEIGHTS},
               "description": "BM25 over documents, sentence windows and sentences + document vectors, score fusion"},
    "accurate": {"retrievers": _BEIR_RETRIEVERS, "fusion": {"method": "score", "weights": _BEIR_WEIGHTS},
                 "rerank": {"method": "ltr", "candidates": 50},
                 "description": "hybrid, then the collection's LambdaMART (ragfunnel train reranker) over the top 50"},
}


@dataclass
class SyncReport:
    collection: str
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # file -> why
    problems: dict[str, list[str]] = field(default_factory=dict)  # file -> what was skipped inside it
    documents: int = 0
    seconds: float = 0.0
    rebuilt: bool = False  # False: nothing changed, the index was left as it was

    def counts(self) -> dict[str, int]:
        return {k: len(getattr(self, k)) for k in ("added", "updated", "deleted", "unchanged", "skipped")}

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "counts": self.counts()}


def default_name(paths: Sequence[Path]) -> str:
    """A collection name from the first PATH: its folder (or file stem) name, reduced to the allowed characters."""
    first = Path(paths[0]).expanduser().resolve()
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", first.stem if first.is_file() else first.name).strip("-.") or "documents"
    return name[:64]


def read_sources(settings: Settings) -> dict[str, Any] | None:
    file = settings.collection_dir / SOURCES_FILE
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)


def folder_store_settings(settings: Settings) -> StoreSettings:
    """The store settings of a folder collection: its collection.toml's `[store]` over the folder defaults."""
    own = settings.collection_dir / COLLECTION_FILE
    if own.is_file():  # load_settings already merged it: the collection's choice stands, corpus included
        return settings.store.model_copy(update={"corpus": "files"})
    return settings.store.model_copy(update=FILES_STORE)


def index_folder(
    settings: Settings,
    paths: Sequence[str | Path],
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    rebuild: bool = False,
    progress: Progress | None = None,
    options: LoaderOptions | None = None,
) -> SyncReport:
    """Index the files under `paths` as the collection `settings.collection`; report what changed since last time."""
    if settings.collection == DEFAULT_COLLECTION:
        raise ConfigError(f"'{DEFAULT_COLLECTION}' is the Friends collection: name yours with --collection NAME")
    t0 = time.perf_counter()
    roots = [str(Path(p).expanduser().resolve()) for p in paths]
    result = walk(roots, include, exclude, options)
    before = read_sources(settings) or {}
    old_hashes: dict[str, str] = before.get("hashes", {})
    report = SyncReport(settings.collection, skipped={s.rel: s.reason for s in result.skipped})
    for s in result.problems:
        report.problems.setdefault(s.rel, []).append(s.reason)
    for rel, digest in result.hashes.items():
        if rel not in old_hashes:
            report.added.append(rel)
        elif old_hashes[rel] != digest:
            report.updated.append(rel)
        else:
            report.unchanged.append(rel)
    report.deleted = sorted(set(old_hashes) - set(result.hashes))
    store_settings = folder_store_settings(settings)
    existing = peek_index(settings.index_dir)
    same = existing is not None and existing.settings == store_settings and before.get("roots") == roots
    report.documents = len(result.documents)
    if same and not rebuild and not (report.added or report.updated or report.deleted):
        report.seconds = time.perf_counter() - t0
        return report
    if not result.documents:
        raise ConfigError(f"nothing to index under {', '.join(roots)}: no file could be read "
                          f"({len(report.skipped)} skipped; see the report)")
    store = build_index(result.documents, settings.index_dir, store_settings, EmbeddingCache(settings.cache_path),
                        progress)
    store.close()
    _write_json(settings.collection_dir / SOURCES_FILE, {
        "roots": roots, "include": list(include), "exclude": list(exclude), "hashes": result.hashes,
        "skipped": report.skipped, "indexed_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
    })
    _write_collection_file(settings, {"store": FILES_STORE, "modes": FILES_MODES})
    report.rebuilt, report.seconds = True, time.perf_counter() - t0
    return report


def _toml(data: dict[str, Any], prefix: str = "") -> str:
    """TOML for nested dicts whose leaves are strings, numbers, booleans or lists of those (JSON spells those the
    way TOML does)."""
    scalars = [f"{k} = {json.dumps(v)}" for k, v in data.items() if not isinstance(v, dict)]
    out = ([f"[{prefix}]"] if prefix and scalars else []) + scalars
    for key, value in data.items():
        if isinstance(value, dict):
            out.append(_toml(value, f"{prefix}.{key}" if prefix else key))
    return "\n".join(line for line in out if line)


def _write_collection_file(settings: Settings, defaults: dict[str, Any]) -> None:
    """The settings a collection was first built with, to read and edit; never overwrites the user's file."""
    own = settings.collection_dir / COLLECTION_FILE
    if not own.is_file():
        own.parent.mkdir(parents=True, exist_ok=True)
        own.write_text(f"# settings of the collection {settings.collection!r} (read after $RAGFUNNEL_HOME/config.toml)"
                       f"\n{_toml(defaults)}\n", encoding="utf-8")


def beir_collection_name(folder: str | Path) -> str:
    """`beir-<folder name>`: the collection a BEIR folder is indexed as."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(folder).expanduser().resolve().name).strip("-.") or "data"
    return f"beir-{name}"[:64]


def index_beir(settings: Settings, folder: str | Path, rebuild: bool = False,
               progress: Progress | None = None) -> tuple[IndexInfo, bool]:
    """Index the BEIR folder as the collection `settings.collection` unless an index of the same folder and store
    settings is there; returns its info and whether it was (re)built. Writes the collection's settings (BEIR
    views and modes) when it has none, so the caller must load settings again."""
    from ragfunnel.corpus.beir import BeirCorpus

    root = str(Path(folder).expanduser().resolve())
    own = settings.collection_dir / COLLECTION_FILE
    store_settings = settings.store if own.is_file() else settings.store.model_copy(update=BEIR_STORE)
    store_settings = store_settings.model_copy(update={"corpus": "beir"})
    existing = peek_index(settings.index_dir)
    sources = read_sources(settings) or {}
    _write_collection_file(settings, {"store": BEIR_STORE, "modes": BEIR_MODES})
    if existing is not None and not rebuild and existing.settings == store_settings and sources.get("beir") == root:
        return existing, False
    docs = list(BeirCorpus(root).documents())
    store = build_index(docs, settings.index_dir, store_settings, EmbeddingCache(settings.cache_path), progress)
    info = store.info()
    store.close()
    _write_json(settings.collection_dir / SOURCES_FILE, {"beir": root, "indexed_at": time.strftime("%Y-%m-%dT%H:%M:%S")})
    return info, True


@dataclass
class CollectionInfo:
    name: str
    index: str
    info: IndexInfo | None  # None: not built (or incomplete)
    sources: dict[str, Any] | None


def list_collections(settings: Settings) -> list[CollectionInfo]:
    """`friends` (when built or configured) and every folder collection under `<home>/collections/`."""
    out = []
    friends = settings.model_copy(update={"collection": DEFAULT_COLLECTION, "index": None})
    out.append(CollectionInfo(DEFAULT_COLLECTION, str(friends.index_dir), peek_index(friends.index_dir), None))
    root = settings.home.expanduser() / "collections"
    for folder in sorted(root.iterdir()) if root.is_dir() else []:
        if folder.is_dir():
            one = settings.model_copy(update={"collection": folder.name, "index": None})
            out.append(CollectionInfo(folder.name, str(one.index_dir), peek_index(one.index_dir), read_sources(one)))
    return out
