"""Collections: several indexes side by side under `$RAGFUNNEL_HOME`, each with its own settings, and the one way
any of them is indexed (`index_collection`: the CLI's `index`, `Client.index`).

Where a collection's files are is `config.CollectionLayout`'s to say. `friends` is the Friends corpus in
`<home>/index` (so every earlier command and table keeps working); any other name is a folder (or BEIR) collection
in `<home>/collections/<name>/`: `index/` (the store), `collection.toml` (its own settings,
e.g. `[store]` views; read after the home's config.toml) and `sources.json` (the PATHs, globs, loader options and
the state of every file at the last run: size, time stamp, sha256, the document ids it gave or why it was skipped).

The first `index` of a folder builds a complete index beside any old one and swaps it in. Every later run syncs:
a file whose size and time stamp are as remembered is not opened, one whose bytes changed is parsed again, and the
new, changed and deleted files' documents go into the index in one `Store.apply` (old or new after a kill, never
some of each); unchanged text is never embedded twice (the embedding cache). sources.json is replaced after the
index changed: a run killed in between finds those files changed again next time and writes them again (the same
result). Other store settings, other PATHs, other loader options or `--rebuild` build a whole new index instead.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ragfunnel.config import COLLECTION_FILE, DEFAULT_COLLECTION, CollectionLayout, Settings
from ragfunnel.corpus.checks import limit_lengths
from ragfunnel.corpus.friends import is_friends_collection
from ragfunnel.corpus.folder import FileState, scan
from ragfunnel.corpus.loaders.base import LoaderOptions
from ragfunnel.embedding import DEFAULT_MODEL, INT8_MODEL, EmbeddingCache, shared_encoder
from ragfunnel.errors import ConfigError, RagfunnelError
from ragfunnel.schema import CollectionSummary
from ragfunnel.store import IndexInfo, StoreSettings, build_index, open_store, peek_index
from ragfunnel.store.base import Progress
from ragfunnel.store.crash import crash_point
from ragfunnel.store.files import write_text_atomic
from ragfunnel.store.locks import LockHeld, file_lock

SOURCES_FILE = "sources.json"
SOURCES_VERSION = 2  # 2: per-file states (size, time stamp, sha256, document ids)
SYNC_LOCK = "sync.lock"
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
BEIR_STORE = {"corpus": "beir", "sparse_views": ["scene", "w3s1", "utt"], "dense_views": ["scene", "utt"],
              "late_chunked_views": []}  # sentences embedded alone, as measured in docs/results/first_stage/beir.md
_BEIR_RETRIEVERS = ["bm25_scene", "bm25_w3s1", "bm25_utt", "dense_scene", "dense_utt"]
_BEIR_WEIGHTS = {"bm25_scene": 0.15, "bm25_w3s1": 0.15, "bm25_utt": 0.15, "dense_scene": 0.25, "dense_utt": 0.3}
BEIR_MODES: dict[str, dict[str, Any]] = {
    "bm25": {"retrievers": ["bm25_scene"], "fusion": {"method": "none"}, "description": "BM25 over whole documents"},
    "vector": {"retrievers": ["dense_scene"], "fusion": {"method": "none"},
               "description": "MiniLM over whole documents (first 256 tokens)"},
    # min-max score fusion, each BM25 view 0.15, document vectors 0.25, sentence vectors 0.3: the best on SciFact
    # *train* nDCG@10 (0.745) of RRF k 10/30/60 (0.711 without sentence vectors), dense-weighted RRF and four
    # score-fusion weightings (0.736-0.745) (docs/results/first_stage/beir.md)
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
    deleted: list[str] = field(default_factory=list)  # files whose documents left the index (gone, or now unreadable)
    unchanged: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # file -> why
    problems: dict[str, list[str]] = field(default_factory=dict)  # file -> what was skipped inside it
    documents: int = 0  # in the index after the run
    parsed: int = 0  # files read and parsed this run (the rest were known by their size and time stamp or hash)
    seconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)  # seconds per step: scan, open, write, sources
    action: str = "none"  # none (nothing changed) | synced (only the changes written) | built (a whole new index)
    rebuild_reason: str | None = None  # why a whole new index was built, when one was

    @property
    def rebuilt(self) -> bool:
        return self.action == "built"

    def counts(self) -> dict[str, int]:
        return {k: len(getattr(self, k)) for k in ("added", "updated", "deleted", "unchanged", "skipped")}

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "rebuilt": self.rebuilt, "counts": self.counts()}


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
    write_text_atomic(path, json.dumps(data, indent=1, ensure_ascii=False))


def folder_default_encoder() -> str:
    """The encoder of a new folder collection when nobody chose one: the bundled MiniLM with int8 weights where
    onnx (the `files` extra) can make it, else the fp32 model. Measured on the mixed-format folder
    (docs/results/first_stage/mixed_folder_llamaindex.md) and a SciFact folder (folder_encoder.md): 1.6-1.7x faster
    to build at the same nDCG@10."""
    import importlib.util

    return INT8_MODEL if importlib.util.find_spec("onnx") is not None else DEFAULT_MODEL


def folder_store_settings(settings: Settings, built: StoreSettings | None = None) -> StoreSettings:
    """The store settings of a folder collection: its collection.toml's `[store]` over the folder defaults. The
    encoder: the one chosen (a config file, `--encoder`), else the one its index was `built` with (a sync never
    swaps the model under an index), else `folder_default_encoder()`."""
    own = settings.collection_dir / COLLECTION_FILE
    if own.is_file():  # load_settings already merged it: the collection's choice stands, corpus included
        store = settings.store.model_copy(update={"corpus": "files"})
    else:
        store = settings.store.model_copy(update=FILES_STORE)
    if not settings.encoder_chosen:
        store = store.model_copy(update={"encoder": built.encoder if built is not None else folder_default_encoder()})
    return store


def _known_files(sources: dict[str, Any]) -> dict[str, FileState]:
    try:
        return {rel: FileState.from_json(state) for rel, state in sources.get("files", {}).items()}
    except (KeyError, TypeError, ValueError):
        return {}


def _rebuild_reason(sources: dict[str, Any] | None, existing: IndexInfo | None, store: StoreSettings,
                    roots: list[str], options: LoaderOptions, rebuild: bool) -> str | None:
    """Why this run must build a whole new index rather than sync the one there; None: sync."""
    if rebuild:
        return "--rebuild"
    if existing is None:
        return "no index yet"
    if sources is None or sources.get("version") != SOURCES_VERSION:
        return "no sources.json of this version"
    if existing.settings != store:
        return "the collection's store settings changed (views, encoder...)"
    if sources.get("roots") != roots:
        return "other PATHs than last time (document ids are relative to them)"
    if sources.get("options") != _options_json(options):
        return "other loader options than last time"
    return None


def _options_json(options: LoaderOptions) -> dict[str, Any]:
    return json.loads(json.dumps(asdict(options)))  # tuples as lists, as read back from sources.json


def index_folder(
    settings: Settings,
    paths: Sequence[str | Path],
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    rebuild: bool = False,
    progress: Progress | None = None,
    options: LoaderOptions | None = None,
) -> SyncReport:
    """Index the files under `paths` as the collection `settings.collection`: the first time (or with other
    settings, PATHs or loader options, or `rebuild`) as a whole new index, after that as a sync; report what
    changed since last time."""
    if is_friends_collection(settings):
        raise ConfigError(f"'{DEFAULT_COLLECTION}' is the Friends collection: name yours with --collection NAME")
    settings.collection_dir.mkdir(parents=True, exist_ok=True)
    try:
        with file_lock(settings.collection_dir / SYNC_LOCK, exclusive=True, wait=False):
            return _index_folder(settings, paths, include, exclude, rebuild, progress, options or LoaderOptions())
    except LockHeld:
        raise RagfunnelError(f"another `ragfunnel index` of the collection {settings.collection!r} is running; "
                             "run this one when it has finished") from None


def _index_folder(settings: Settings, paths: Sequence[str | Path], include: Sequence[str], exclude: Sequence[str],
                  rebuild: bool, progress: Progress | None, options: LoaderOptions) -> SyncReport:
    t0 = time.perf_counter()
    roots = [str(Path(p).expanduser().resolve()) for p in paths]
    before = read_sources(settings)
    existing = peek_index(settings.index_location, settings.backend)
    store_settings = folder_store_settings(settings, existing.settings if existing else None)
    reason = _rebuild_reason(before, existing, store_settings, roots, options, rebuild)
    old_files = _known_files(before or {})
    scanned = scan(roots, include, exclude, options, known={} if reason else old_files)
    t_scan = time.perf_counter()
    report = SyncReport(settings.collection, skipped={s.rel: s.reason for s in scanned.duplicates},
                        parsed=len(scanned.documents))
    for rel, file_docs in scanned.documents.items():  # [limits]: long units split, long documents cut, reported
        scanned.documents[rel], notes = limit_lengths(file_docs, settings.limits.max_unit_chars,
                                                      settings.limits.max_document_chars)
        if notes:
            report.problems.setdefault(rel, []).extend(notes)
    for rel, state in scanned.states.items():
        if state.skipped is not None:
            report.skipped[rel] = state.skipped
            continue
        if state.problems:
            report.problems[rel] = [*state.problems, *report.problems.get(rel, [])]
        old = old_files.get(rel)
        if old is None or old.skipped is not None:
            report.added.append(rel)
        elif old.sha256 != state.sha256:
            report.updated.append(rel)
        else:
            report.unchanged.append(rel)
    report.deleted = sorted(rel for rel, old in old_files.items() if old.skipped is None
                            and (rel not in scanned.states or scanned.states[rel].skipped is not None))
    indexed = {rel: state for rel, state in scanned.states.items() if state.skipped is None}
    if not any(state.docs for state in indexed.values()):
        raise ConfigError(f"nothing to index under {', '.join(roots)}: no file could be read "
                          f"({len(report.skipped)} skipped; see the report)")
    report.timings["scan"] = t_scan - t0
    cache = EmbeddingCache(settings.cache_path)
    if reason:
        docs = [d for rel in indexed for d in scanned.documents[rel]]
        build_index(docs, settings.index_location, store_settings, cache, progress, settings.backend, for_sync=True).close()
        report.action, report.rebuild_reason = "built", reason
        report.timings["write"] = time.perf_counter() - t_scan
    elif report.added or report.updated or report.deleted:
        changed = [rel for rel in indexed if rel in scanned.documents]  # new or with other bytes
        upserts = [d for rel in changed for d in scanned.documents[rel]]
        kept = {d.doc_id for d in upserts}
        deletes = [doc_id for rel in [*report.updated, *report.deleted] for doc_id in old_files[rel].docs
                   if doc_id not in kept]  # a record gone from a changed container, or a gone file's documents
        store = open_store(settings.index_location, cache, backend_name=settings.backend)
        t_open = time.perf_counter()
        try:
            store.apply(upserts, deletes, progress)
        finally:
            store.close()
        report.action = "synced"
        report.timings.update(open=t_open - t_scan, write=time.perf_counter() - t_open)
    crash_point("sync:before-sources")
    t_sources = time.perf_counter()
    if report.action != "none" or {r: s.to_json() for r, s in scanned.states.items()} != (before or {}).get("files"):
        _write_json(settings.collection_dir / SOURCES_FILE, {
            "version": SOURCES_VERSION, "roots": roots, "include": list(include), "exclude": list(exclude),
            "options": _options_json(options), "indexed_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "files": {rel: state.to_json() for rel, state in scanned.states.items()},
        })
    report.timings["sources"] = time.perf_counter() - t_sources
    _write_collection_file(settings, {"store": FILES_STORE, "modes": FILES_MODES})
    info = peek_index(settings.index_location, settings.backend)
    report.documents = info.documents if info else 0
    report.seconds = time.perf_counter() - t0
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
    existing = peek_index(settings.index_location, settings.backend)
    sources = read_sources(settings) or {}
    _write_collection_file(settings, {"store": BEIR_STORE, "modes": BEIR_MODES})
    if existing is not None and not rebuild and existing.settings == store_settings and sources.get("beir") == root:
        return existing, False
    docs = list(BeirCorpus(root).documents())
    store = build_index(docs, settings.index_location, store_settings, EmbeddingCache(settings.cache_path), progress,
                        settings.backend)
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

    def summary(self) -> CollectionSummary:
        """In the result schema: what `ragfunnel collections --json` prints and `Client.collections()` returns."""
        info = self.info
        return CollectionSummary(
            name=self.name, index=self.index, built=info is not None, documents=info.documents if info else 0,
            chunks=dict(info.chunks) if info else {}, settings=info.settings.model_dump() if info else None,
            sources=(self.sources or {}).get("roots"),
        )


def list_collections(settings: Settings) -> list[CollectionInfo]:
    """`friends` (when built or configured) and every folder collection under `<home>/collections/`."""
    out = []
    friends = settings.model_copy(update={"collection": DEFAULT_COLLECTION, "index": None})
    out.append(CollectionInfo(DEFAULT_COLLECTION, str(friends.index_dir), peek_index(friends.index_location, settings.backend), None))
    root = CollectionLayout.under(settings.home)
    for folder in sorted(root.iterdir()) if root.is_dir() else []:
        if folder.is_dir():
            one = settings.model_copy(update={"collection": folder.name, "index": None})
            out.append(CollectionInfo(folder.name, str(one.index_dir), peek_index(one.index_location, settings.backend), read_sources(one)))
    return out


# ---- one way to index any collection ----------------------------------------------------------------------------

Say = Callable[[str], None]


def index_collection(
    settings: Settings,
    paths: Sequence[str | Path] = (),
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    rebuild: bool = False,
    progress: Progress | None = None,
    *,
    corpus: Path | None = None,
    vectors: str | None = None,
    on_duplicate: str = "error",
    say: Say | None = None,
    warn: Say | None = None,
) -> SyncReport:
    """Build or sync the index of the collection `settings.collection`: what `ragfunnel index`, `Client.index` and
    the server call alike. The files under `paths` (or the folders a collection was indexed from) become a folder
    collection; a BEIR collection is indexed from its folder again; the built-in collection from its corpus data
    (`corpus`, default `<data>/<corpus>`). `say` hears what the build does, `warn` what it had to cut."""
    builtin = is_friends_collection(settings)
    if vectors and (paths or not builtin):
        raise ConfigError("--vectors is for the Friends index: a collection's vector views are `dense_views` under "
                          "[store] in its collection.toml")
    sources = None if builtin else read_sources(settings)
    if not paths and sources and sources.get("beir"):
        t0 = time.perf_counter()
        info, built = index_beir(settings, sources["beir"], rebuild, progress)
        reason = ("--rebuild" if rebuild else "no index of this folder with these settings yet") if built else None
        return SyncReport(settings.collection, documents=info.documents, seconds=time.perf_counter() - t0,
                          action="built" if built else "none", rebuild_reason=reason)
    if not paths and sources:  # `index --collection NAME`: the same sources again
        paths, include, exclude = [Path(p) for p in sources["roots"]], sources.get("include") or (), sources.get("exclude") or ()
    if paths:
        if settings.encoder_chosen:  # a missing or unknown model fails here, not mid-build
            shared_encoder(settings.store.encoder, settings.store.max_length)
        return index_folder(settings, paths, include, exclude, rebuild, progress)
    if not builtin:
        raise ConfigError(f"collection {settings.collection!r} has no sources yet: "
                          f"ragfunnel index PATH --collection {settings.collection}")
    return index_corpus(settings, corpus, rebuild=rebuild, vectors=vectors, on_duplicate=on_duplicate,
                        progress=progress, say=say, warn=warn)


def encoder_name(name: str, settings: Settings) -> str:
    """The encoder a short name (`--encoder`) stands for: default, int8, tuned (the collection's own, from `train
    embedder`), tuned-int8; any other name as given."""
    if name in ("default", DEFAULT_MODEL):
        return DEFAULT_MODEL
    if name in ("int8", INT8_MODEL):
        return INT8_MODEL
    if name == "tuned":
        return f"onnx:{settings.embedder_dir}"
    if name == "tuned-int8":
        return f"int8:{settings.embedder_dir}"
    return name


SOURCE_FILE = "corpus_source.json"  # beside the index's own files: which corpus data it was built from


def index_corpus(settings: Settings, corpus: Path | None = None, *, rebuild: bool = False, vectors: str | None = None,
                 on_duplicate: str = "error", progress: Progress | None = None, say: Say | None = None,
                 warn: Say | None = None) -> SyncReport:
    """Build the index of a corpus's data (`settings.store.corpus`, read from `corpus` or `<data>/<corpus>`) unless
    the index there was built from the same data with the same settings; finish the vectors a stopped first build
    left. A first build is searchable (BM25) before its vectors are in: `say` is told when."""
    from ragfunnel.corpus import make_corpus

    say = say or (lambda _: None)
    t0 = time.perf_counter()
    target = settings.index_location
    existing = peek_index(target, settings.backend)
    if existing and not settings.encoder_chosen:  # the index's own encoder, unless one was chosen on purpose
        settings.store = settings.store.model_copy(update={"encoder": existing.settings.encoder})
    settings.store = dense_views(vectors, settings.store, existing.settings if existing else None)
    shared_encoder(settings.store.encoder, settings.store.max_length)  # a missing model fails here, not mid-build
    source = corpus or settings.corpus_dir
    cache = EmbeddingCache(settings.cache_path)
    report = SyncReport(settings.collection)
    if existing and not rebuild and existing.settings == settings.store:
        if corpus is None or _source_fingerprint(corpus) == _built_from(target, settings):
            if existing.pending_vectors:  # a first build stopped while embedding: BM25 serves, the vectors go on
                _finish_vectors(target, settings, cache, progress, say)
                report.action = "synced"
            else:
                say(f"index at {target} is up to date ({existing.documents} documents); --rebuild to redo it")
            report.documents, report.seconds = existing.documents, time.perf_counter() - t0
            return report
        # `corpus` names other data than the index was built from: never ignored, a new index is built
        say(f"--corpus {corpus} is not what the index at {target} was built from: building a new index")
        report.rebuild_reason = "other corpus data"
    docs = _checked_documents(make_corpus(settings.store.corpus, source), settings, on_duplicate, warn or say)
    say(f"loaded {len(docs):,} documents, {sum(len(d.units) for d in docs):,} units from {source}")
    first = existing is None and bool(settings.store.dense_views)  # nothing serves meanwhile: BM25 first, then vectors

    def searchable(store) -> None:  # the BM25 index is in place; the vectors come next
        _record_source(source, target, settings)
        say(f"searchable at {target} in {time.perf_counter() - t0:.1f}s (bm25 until the vectors are in: "
            "`ragfunnel search` works now); embedding the vectors")

    store = build_index(docs, target, settings.store, cache, progress, settings.backend,
                        vectors_after=first, on_searchable=searchable if first else None)
    counts = {v: store.count_chunks(v) for v in settings.store.views}
    say(f"index ready at {target} in {time.perf_counter() - t0:.1f}s: chunks {counts}")
    store.close()
    _record_source(source, target, settings)
    report.action, report.documents, report.seconds = "built", len(docs), time.perf_counter() - t0
    report.rebuild_reason = report.rebuild_reason or ("first build" if existing is None else
                                                      "--rebuild" if rebuild else "other store settings")
    return report


def dense_views(vectors: str | None, store: StoreSettings, built: StoreSettings | None) -> StoreSettings:
    """The store settings with the dense views `--vectors` names ('default': the defaults); without it, the views
    of the index already built (`built`) when the settings leave them at their default, so that `index` keeps what
    an earlier `--vectors` (or an index of an older version) chose."""
    defaults = StoreSettings()
    if vectors is None:
        chosen = (store.dense_views, store.derived_views, store.late_chunked_views)
        if built is None or chosen != (defaults.dense_views, defaults.derived_views, defaults.late_chunked_views):
            return store
        return store.model_copy(update={"dense_views": built.dense_views, "derived_views": built.derived_views,
                                        "late_chunked_views": built.late_chunked_views})
    from ragfunnel.chunking import canonical_view, resolve_view

    if vectors.strip() == "default":
        views = list(defaults.dense_views)
    else:
        views = list(dict.fromkeys(canonical_view(v.strip()) for v in vectors.split(",") if v.strip()))
        for view in views:
            resolve_view(view)  # an unknown view is a one-line error here
    derived = {**defaults.derived_views, **store.derived_views}
    return StoreSettings.model_validate({**store.model_dump(), "dense_views": views, "derived_views": derived,
                                         "late_chunked_views": store.late_chunked_views or defaults.late_chunked_views})


def _finish_vectors(target: Path | str, settings: Settings, cache: EmbeddingCache, progress: Progress | None,
                    say: Say) -> None:
    """Embed the vectors a stopped first build left pending (the index serves BM25 meanwhile)."""
    t0 = time.perf_counter()
    store = open_store(target, cache, backend_name=settings.backend)
    try:
        pending = store.pending_vectors()
        say(f"index at {target}: vectors {pending.percent if pending else 0}% embedded; embedding the rest (it "
            "serves bm25 meanwhile)")
        store.finish_vectors(progress)
    finally:
        store.close()
    say(f"index ready at {target}: vectors in after {time.perf_counter() - t0:.1f}s")


def _source_fingerprint(path: Path) -> dict:
    """The corpus data at `path` as it is now: its resolved path and its files' sizes and times."""
    path = path.expanduser().resolve()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    return {"path": str(path), "files": [[p.name, p.stat().st_size, p.stat().st_mtime_ns] for p in files if p.exists()]}


def _source_record(target: Path | str, settings: Settings) -> Path:
    """Where the corpus source of an index is recorded: beside a local index's files; for an index on a database
    server (`target`: its DSN and collection), in the home, under a name of its own."""
    if isinstance(target, Path):
        return target / SOURCE_FILE
    import hashlib

    return Path(settings.home) / "sources" / f"{hashlib.sha256(target.encode()).hexdigest()[:16]}.json"


def _record_source(source: Path, target: Path | str, settings: Settings) -> None:
    path = _source_record(target, settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_source_fingerprint(source)))


def _built_from(target: Path | str, settings: Settings) -> dict | None:
    try:
        return json.loads(_source_record(target, settings).read_text())
    except (OSError, ValueError):
        return None


def _checked_documents(corpus: Any, settings: Settings, on_duplicate: str, warn: Say) -> list:
    """The corpus's documents, one per id (`on_duplicate`), within the `[limits]` on unit and document length
    (what was split or cut is reported, a line each for the first few)."""
    from ragfunnel.corpus.checks import located, unique_documents

    pairs = corpus.located_documents() if hasattr(corpus, "located_documents") else located(list(corpus.documents()), str(corpus.path))
    docs = unique_documents(pairs, on_duplicate)  # type: ignore[arg-type]
    docs, notes = limit_lengths(docs, settings.limits.max_unit_chars, settings.limits.max_document_chars)
    for note in notes[:5]:
        warn(f"limit: {note}")
    if len(notes) > 5:
        warn(f"limit: ... and {len(notes) - 5} more ([limits] max_unit_chars / max_document_chars)")
    return docs
