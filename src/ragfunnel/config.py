"""Settings: defaults, then a TOML file, then environment variables, then CLI flags (later wins).

The defaults are the measured best configuration (see docs/results/); a config file can define other
retrievers and modes without code changes.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, PrivateAttr, ValidationError, field_validator, model_validator

from ragfunnel.chunking import canonical_view
from ragfunnel.corpus.friends import FriendsCorpus, is_builtin_collection
from ragfunnel.errors import ConfigError
from ragfunnel.query.transforms import TRANSFORMS
from ragfunnel.rerank.registry import RERANKERS
from ragfunnel.retrieve.fusion import FUSERS
from ragfunnel.retrieve.registry import RETRIEVERS
from ragfunnel.store.base import StoreSettings
from ragfunnel.store.registry import DEFAULT_BACKEND, STORE_BACKENDS, index_location


def _registered(name: str, registry: Any, what: str) -> str:
    """A setting that names a registry entry: unknown names fail when the config is read, listing the choices."""
    if name not in list(registry):  # exact: a registry's `in` ignores case, a setting's name may not
        raise ValueError(f"unknown {what} {name!r}: choose one of {', '.join(registry)}")
    return name


class RetrieverSpec(BaseModel):
    kind: str = Field(description="a key of retrieve.registry.RETRIEVERS: bm25, dense")
    view: str
    depth: int = Field(100, ge=1, description="chunks fetched before collapse to parents")
    ef: int | None = Field(600, ge=1, description="HNSW search depth (dense only)")
    exact: bool | None = Field(None, description="dense only: scan every vector; None = exact up to 200k vectors")
    pool: int | None = Field(2000, ge=0, description="dense only, with exact unset: the embedded store scans a "
                             "128-dimension projection of the vectors and rescores its best `pool` in full (0: off)")
    fb_docs: int | None = Field(None, ge=1, description="bm25_rm3 / dense_prf: feedback chunks from the first pass")
    fb_terms: int | None = Field(None, ge=1, description="bm25_rm3: expansion terms")
    orig_weight: float | None = Field(None, ge=0, le=1, description="bm25_rm3: weight of the original query terms")
    beta: float | None = Field(None, ge=0, description="dense_prf: how far the query vector moves to the feedback mean")

    @field_validator("view")
    @classmethod
    def _canonical_view(cls, view: str) -> str:
        return canonical_view(view)  # `doc` / `unit` name the index's `scene` / `utt` chunks

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, kind: str) -> str:
        return _registered(kind, RETRIEVERS, "retriever kind")


class FusionSpec(BaseModel):
    method: str = Field("rrf", description="none, or a key of retrieve.fusion.FUSERS: rrf, query_aware, score")
    k: float = 60.0
    weights: dict[str, float] = Field(default_factory=dict)
    idf_low: float = 2.0
    idf_high: float = 5.0
    w_low: float = 0.2
    w_high: float = 0.8
    both_bonus: float = 0.0
    learned: bool | None = Field(None, description="the collection's trained fusion (`ragfunnel train fusion`): None "
                                 "= used when one is trained for this mode, False = never, True = required")
    model: str | None = Field(None, description="the trained fusion's directory (default: the collection's "
                              "<models>/fusion)")

    @field_validator("method")
    @classmethod
    def _known_method(cls, method: str) -> str:
        return method if method == "none" else _registered(method, FUSERS, "fusion method")


class RerankSpec(BaseModel):
    method: str = Field("ltr", description="a name in rerank.registry.RERANKERS")
    candidates: int = Field(20, ge=1, le=200, description="fused top-N handed to the reranker")
    passage: Literal["window", "context", "scene"] = "context"
    model: str | None = Field(None, description="model dir / id; default: <home>/models/reranker")

    @field_validator("method")
    @classmethod
    def _known_method(cls, method: str) -> str:
        return _registered(method, RERANKERS.names(), "reranker")


class TransformSpec(BaseModel):
    kind: str = Field(description="a key of query.transforms.TRANSFORMS: rewrite, multi_query, hyde, decompose")
    n: int = Field(3, ge=1, le=8, description="multi_query / decompose: how many queries at most")
    max_tokens: int | None = Field(None, ge=8, le=512, description="the LLM's reply limit (default: the kind's)")
    weight: float = Field(1.0, ge=0, description="fusion weight of each list of its queries, times the retriever's")
    retrievers: list[str] | None = Field(None, description="the mode's retrievers that search its queries "
                                         "(default: all; hyde: the dense ones)")

    @field_validator("kind")
    @classmethod
    def _known(cls, kind: str) -> str:
        if kind not in TRANSFORMS:
            raise ValueError(f"unknown transform {kind!r}: choose one of {', '.join(TRANSFORMS)}")
        return kind


class ModeSpec(BaseModel):
    retrievers: list[str]
    fusion: FusionSpec = Field(default_factory=FusionSpec)
    rerank: RerankSpec | None = None
    transforms: list[TransformSpec] = Field(default_factory=list, description="LLM query transforms whose queries "
                                            "are searched too and fused (query/transforms.py)")
    description: str = ""

    @model_validator(mode="after")
    def _transforms_are_fused(self) -> ModeSpec:
        if self.transforms and self.fusion.method == "none":
            raise ValueError("a mode with transforms fuses their lists: give it a fusion method (rrf, score...)")
        for t in self.transforms:
            unknown = [r for r in t.retrievers or () if r not in self.retrievers]
            if unknown:
                raise ValueError(f"transform {t.kind} names retrievers the mode does not have: {', '.join(unknown)}")
        return self


def _default_retrievers() -> dict[str, RetrieverSpec]:
    return {
        "bm25_scene": RetrieverSpec(kind="bm25", view="scene", depth=100),
        "bm25_w3s1": RetrieverSpec(kind="bm25", view="w3s1", depth=300),
        "bm25_utt": RetrieverSpec(kind="bm25", view="utt", depth=300),
        "dense_scene": RetrieverSpec(kind="dense", view="scene", depth=100),
        "dense_w3s1": RetrieverSpec(kind="dense", view="w3s1", depth=300),
        "dense_utt": RetrieverSpec(kind="dense", view="utt", depth=300),
        # pseudo-relevance feedback (docs/results/query/transforms.md)
        "bm25_rm3_scene": RetrieverSpec(kind="bm25_rm3", view="scene", depth=100, fb_docs=3, fb_terms=30, orig_weight=0.8),
        "dense_prf_w3s1": RetrieverSpec(kind="dense_prf", view="w3s1", depth=300),
    }


def _single(retriever: str, description: str) -> ModeSpec:
    return ModeSpec(retrievers=[retriever], fusion=FusionSpec(method="none"), description=description)


def _default_modes() -> dict[str, ModeSpec]:
    pair = ["bm25_scene", "dense_w3s1"]
    four = ["bm25_scene", "dense_scene", "dense_w3s1", "dense_utt"]
    return {
        "bm25": _single("bm25_scene", "BM25 over whole scenes"),
        "bm25_window": _single("bm25_w3s1", "BM25 over 3-utterance windows, collapsed to scenes"),
        "vector": _single("dense_w3s1", "MiniLM over 3-utterance windows, collapsed to scenes"),
        "vector_scene": _single("dense_scene", "MiniLM over whole scenes (first 256 tokens; scene vectors are not "
                                "built by default: ragfunnel index --vectors scene,w3s1,utt)"),
        "vector_utt": _single("dense_utt", "MiniLM over single utterances, collapsed to scenes"),
        "rrf_naive": ModeSpec(retrievers=pair, fusion=FusionSpec(method="rrf", k=60), description="BM25 + window vectors, RRF k=60"),
        "rrf_weighted": ModeSpec(
            retrievers=pair,
            fusion=FusionSpec(method="rrf", k=60, weights={"bm25_scene": 0.7, "dense_w3s1": 0.3}),
            description="BM25 + window vectors, RRF with BM25 weight 0.7 (best of 0.5/0.6/0.7 on dev)",
        ),
        "query_aware": ModeSpec(
            retrievers=pair,
            fusion=FusionSpec(method="query_aware", k=60),
            description="RRF weighted by query IDF, the published rule (IDF 2->5 maps BM25 weight 0.2->0.8)",
        ),
        "query_aware_tuned": ModeSpec(
            retrievers=["bm25_scene", "bm25_w3s1", "dense_w3s1"],
            fusion=FusionSpec(method="query_aware", k=10, idf_low=3.0, idf_high=6.0, w_low=0.5, w_high=0.8),
            description="query-IDF weighting re-fit on dev: BM25 never below dense, k=10",
        ),
        "score": ModeSpec(
            retrievers=pair,
            fusion=FusionSpec(method="score", weights={"bm25_scene": 0.6, "dense_w3s1": 0.4}),
            description="min-max score fusion, BM25 weight 0.6 (best on dev; a both-found bonus did not help)",
        ),
        "all4": ModeSpec(
            retrievers=four, fusion=FusionSpec(method="rrf", k=60),
            description="BM25 + scene/window/utterance vectors, RRF k=60 (scene vectors: ragfunnel index --vectors scene,w3s1,utt)"
        ),
        "hybrid": ModeSpec(
            retrievers=["bm25_scene", "bm25_w3s1", "bm25_utt", "dense_w3s1", "dense_utt"],
            fusion=FusionSpec(method="rrf", k=10),
            description="BM25 over scenes, windows and lines + window and line vectors, RRF k=10 (best on dev)",
        ),
        "bm25_rm3": _single("bm25_rm3_scene", "BM25 over whole scenes with RM3 pseudo-relevance feedback (3 chunks, 30 terms, weight 0.8)"),
        "vector_prf": _single("dense_prf_w3s1", "window vectors with Rocchio feedback from the top 5 windows"),
        "hybrid_rm3": ModeSpec(
            retrievers=["bm25_rm3_scene", "bm25_w3s1", "bm25_utt", "dense_w3s1", "dense_utt"],
            fusion=FusionSpec(method="rrf", k=10),
            description="hybrid with RM3 feedback on scene BM25 (3 chunks, 30 terms, original weight 0.8: the best of 8 on dev)",
        ),
        "hybrid_prf": ModeSpec(
            retrievers=["bm25_rm3_scene", "bm25_w3s1", "bm25_utt", "dense_prf_w3s1", "dense_utt"],
            fusion=FusionSpec(method="rrf", k=10),
            description="hybrid with RM3 on scene BM25 and Rocchio feedback (top 5, beta 0.5) on window vectors",
        ),
        "accurate": ModeSpec(
            retrievers=["bm25_scene", "bm25_w3s1", "bm25_utt", "dense_w3s1", "dense_utt"],
            fusion=FusionSpec(method="rrf", k=10),
            rerank=RerankSpec(method="ltr", candidates=20),
            description="hybrid, then our trained reranker (cross-encoder + LambdaMART) over the top 20",
        ),
        "deep": ModeSpec(
            retrievers=["bm25_scene", "bm25_w3s1", "bm25_utt", "dense_w3s1", "dense_utt"],
            fusion=FusionSpec(method="rrf", k=10),
            transforms=[TransformSpec(kind="rewrite", weight=0.5), TransformSpec(kind="hyde", weight=0.5)],
            description="hybrid over the question, an LLM rewrite of it (every retriever) and an LLM-written passage "
                        "(HyDE, the vectors) at half weight, fused; needs an LLM (--llm); "
                        "docs/results/query/llm_transforms.md",
        ),
    }


class Limits(BaseModel):
    """`[limits]`: what one request, one client, one answer and one indexed document may take. Safe defaults; a
    request beyond a limit gets a clear 4xx (413, 422, 429) or a 503 with Retry-After, never an unbounded queue."""

    max_body_bytes: int = Field(64 * 1024, ge=1024, description="HTTP request body (413 beyond; checked while reading)")
    max_question_chars: int = Field(2000, ge=1, le=2000, description="question length (422 beyond; at most 2000)")
    max_k: int = Field(50, ge=1, le=50, description="results one request may ask for (422 beyond; at most 50)")
    max_filter_terms: int = Field(64, ge=1, description="fields, operators and values in one filter (422 beyond)")
    rate_per_minute: float = Field(240.0, ge=0, description="API requests per client address a minute (0: no limit)")
    rate_burst: int = Field(40, ge=1, description="requests a client may send at once before the rate applies")
    rate_limit_loopback: bool = Field(False, description="rate-limit clients on this machine too (127.0.0.1, ::1); off: "
                                      "local tools and benchmarks are not limited (behind a local proxy, limit there)")
    max_concurrent_answers: int = Field(2, ge=1, description="LLM answers generated at once; more get 503 + Retry-After")
    max_response_bytes: int = Field(8 * 1024 * 1024, ge=64 * 1024, description="one JSON response (a smaller k is asked for beyond)")
    max_unit_chars: int = Field(20_000, ge=100, description="one unit (line, paragraph) at indexing: longer ones are "
                                "split into parts of this size, and reported")
    max_document_chars: int = Field(5_000_000, ge=1000, description="one document at indexing: the units beyond are "
                                    "left out, and reported")


DEFAULT_COLLECTION = FriendsCorpus.name
COLLECTION_FILE = "collection.toml"  # a collection's own settings ([store], [sources], modes...)
COLLECTION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass(frozen=True)
class CollectionLayout:
    """Where one collection's files live under the home; every path of a collection is made here and nowhere else.

    A collection lives in `<home>/collections/<name>/`: `index/` (the store), `collection.toml` (its own settings),
    `sources.json` (what it was indexed from) and `models/<kind>` (what it trained from its own questions). The
    built-in collection keeps the home's own `index/` and `models/<kind>` instead: it is older than collections, and
    every earlier index and table is there. Models every collection shares (the local LLM, the embedding cache) are
    the home's."""

    home: Path
    name: str

    @classmethod
    def under(cls, home: Path) -> Path:
        """The folder that holds every collection but the built-in one."""
        return home.expanduser() / "collections"

    @property
    def _at_home(self) -> bool:
        return is_builtin_collection(self.name)

    @property
    def root(self) -> Path:
        return self.under(self.home) / self.name

    @property
    def settings_file(self) -> Path:
        return self.root / COLLECTION_FILE

    @property
    def index_dir(self) -> Path:
        return self.home.expanduser() / "index" if self._at_home else self.root / "index"

    @property
    def shared_models_dir(self) -> Path:
        return self.home.expanduser() / "models"

    def trained_dir(self, kind: str) -> Path:
        """What the collection trains from its own questions and index (reranker, fusion, a tuned embedder...)."""
        return self.shared_models_dir / kind if self._at_home else self.root / "models" / kind

    @property
    def cache_path(self) -> Path:
        return self.home.expanduser() / "cache" / "embeddings.sqlite"


class Settings(BaseModel):
    home: Path = Field(default_factory=lambda: Path("~/.ragfunnel").expanduser())
    data: Path = Field(default_factory=lambda: Path("../shared/data"))
    collection: str = Field(DEFAULT_COLLECTION, description="which index under the home: friends, or a folder collection")
    index: Path | None = None
    store: StoreSettings = Field(default_factory=StoreSettings)
    backend: str = Field(DEFAULT_BACKEND, description="the store backend ([store] backend): embedded, postgres, memory")
    dsn: str | None = Field(None, description="the PostgreSQL server of the postgres backend ([store] dsn, "
                                              "RAGFUNNEL_DSN, --dsn); giving one selects that backend")
    retrievers: dict[str, RetrieverSpec] = Field(default_factory=_default_retrievers)
    modes: dict[str, ModeSpec] = Field(default_factory=_default_modes)
    aliases: dict[str, str] = Field(default_factory=lambda: {"fast": "hybrid"})
    default_mode: str = "hybrid"
    limits: Limits = Field(default_factory=Limits)
    aggregate_min_similarity: float | None = Field(
        None, description="aggregation questions: also list lines whose vector is this close to the phrase (None: off; "
        "docs/results/query/aggregate.md measures it)")
    query_filters: bool = Field(
        True, description="read the metadata a question names as a filter (Friends: 'season 8' / 'episode 16' / 'S08E16')"
    )
    # whether someone chose `store.encoder` (a config file's [store] encoder, or `choose_encoder`); a new folder
    # collection whose encoder nobody chose gets the folder default (collections.folder_default_encoder)
    _encoder_chosen: bool = PrivateAttr(False)

    @property
    def encoder_chosen(self) -> bool:
        return self._encoder_chosen

    def choose_encoder(self, name: str) -> None:
        """Use the encoder `name` (a registered name, as the store keeps it), chosen on purpose."""
        self.store = self.store.model_copy(update={"encoder": name})
        self._encoder_chosen = True

    @field_validator("store")
    @classmethod
    def _canonical_views(cls, store: StoreSettings) -> StoreSettings:
        """`doc` / `unit` in a config file name the views an index spells `scene` / `utt`."""
        views = {key: list(dict.fromkeys(canonical_view(v) for v in getattr(store, key)))
                 for key in ("sparse_views", "dense_views")}
        changed = any(views[key] != getattr(store, key) for key in views)
        return store.model_copy(update=views) if changed else store

    @model_validator(mode="after")
    def _a_retriever_per_view(self) -> Settings:
        """`bm25_<view>` / `dense_<view>` for every view of the store that has no retriever of that name, so a
        collection that indexes `tok256o32` can name `dense_tok256o32` in its modes without defining it."""
        for kind, views in (("bm25", self.store.sparse_views), ("dense", self.store.dense_views)):
            for view in views:
                self.retrievers.setdefault(f"{kind}_{view}", RetrieverSpec(
                    kind=kind, view=view, depth=100 if canonical_view(view) == "scene" else 300))
        return self

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, name: str) -> str:
        return _registered(name, STORE_BACKENDS, "store backend")

    @property
    def index_location(self) -> str | Path:
        """Where the collection's index is, for the store registry: its directory, or (postgres) a DSN and schema."""
        return index_location(self.backend, self.index_dir, self.dsn, self.collection)

    @field_validator("collection")
    @classmethod
    def _collection_name(cls, name: str) -> str:
        if not COLLECTION_NAME.match(name):
            raise ValueError(f"collection name {name!r}: use letters, digits, '.', '_' or '-' (at most 64)")
        return name

    @property
    def layout(self) -> CollectionLayout:
        """Where this collection's files live (`index` overrides only where its index is)."""
        return CollectionLayout(self.home, self.collection)

    @property
    def collection_dir(self) -> Path:
        """Where a collection's settings and sources live (and its index, but for the built-in collection's)."""
        return self.layout.root

    @property
    def index_dir(self) -> Path:
        return self.index.expanduser() if self.index is not None else self.layout.index_dir

    @property
    def models_dir(self) -> Path:
        """The models every collection shares (the local LLM, a tuned embedder); the answerability gate is kept with its index."""
        return self.layout.shared_models_dir

    def _trained_dir(self, kind: str) -> Path:
        return self.layout.trained_dir(kind)

    @property
    def embedder_dir(self) -> Path:
        """Where `ragfunnel train embedder` puts a fine-tuned bi-encoder (`--encoder tuned`): `<home>/models/embedder`
        for friends, `<collection>/models/embedder` for any other collection (it learns from that collection's
        questions)."""
        return self._trained_dir("embedder")

    @property
    def reranker_dir(self) -> Path:
        """Where `ragfunnel train reranker` puts the collection's own trained reranker (it learns from its index):
        `<home>/models/reranker` for friends, `<collection>/models/reranker` for any other collection."""
        return self._trained_dir("reranker")

    @property
    def fusion_dir(self) -> Path:
        """Where `ragfunnel train fusion` puts the collection's learned fusion (it learns from its questions and lists):
        `<home>/models/fusion` for friends, `<collection>/models/fusion` for any other collection."""
        return self._trained_dir("fusion")

    @property
    def cache_path(self) -> Path:
        return self.layout.cache_path

    def corpus_data(self, corpus: str) -> Path:
        """Where the data of the corpus named `corpus` lives: `<data>/<corpus>`."""
        return self.data.expanduser() / corpus

    @property
    def corpus_dir(self) -> Path:
        """The data of the corpus this configuration indexes (`store.corpus`, default friends): `<data>/<corpus>`."""
        return self.corpus_data(self.store.corpus)

    @property
    def friends_dir(self) -> Path:
        """The Friends corpus's data (transcripts and question sets): `<data>/friends`."""
        return self.corpus_data(FriendsCorpus.name)

    def resolve_mode(self, mode: str | None) -> tuple[str, ModeSpec]:
        name = mode or self.default_mode
        name = self.aliases.get(name, name)
        if name not in self.modes:
            known = sorted([*self.modes, *self.aliases])
            raise ConfigError(f"unknown mode {mode!r}: choose one of {', '.join(known)}")
        return name, self.modes[name]

    @property
    def mode_names(self) -> list[str]:
        return sorted([*self.modes, *self.aliases])


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict) and key not in ("retrievers", "modes"):
            out[key] = _merge(out[key], value)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}  # named retrievers/modes: a file adds or replaces whole entries
        else:
            out[key] = value
    return out


def default_data_dir() -> Path:
    """`RAGFUNNEL_DATA`, else the first `shared/data` beside the working directory or this checkout."""
    if os.environ.get("RAGFUNNEL_DATA"):
        return Path(os.environ["RAGFUNNEL_DATA"]).expanduser()
    here = Path(__file__).resolve()
    for root in (Path.cwd(), *here.parents):
        candidate = root.parent / "shared" / "data"
        if candidate.is_dir():
            return candidate
    return Path("../shared/data")


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}); save the settings file as UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML ({exc})") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror})") from None


def load_settings(config: str | Path | None = None, **overrides: Any) -> Settings:
    """Defaults < config file (--config, RAGFUNNEL_CONFIG, or <home>/config.toml) < env < explicit overrides."""
    file_data: dict[str, Any] = {}
    home = Path(overrides.get("home") or os.environ.get("RAGFUNNEL_HOME") or "~/.ragfunnel").expanduser()
    if home.exists() and not home.is_dir():
        raise ConfigError(f"RAGFUNNEL_HOME {home} is a file, not a folder: point RAGFUNNEL_HOME at a folder "
                          "(it is made when missing)")
    path = Path(config or os.environ.get("RAGFUNNEL_CONFIG") or (home / "config.toml")).expanduser()
    if config is not None and not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    if path.is_file():
        file_data = _read_toml(path)
    store_file = file_data.get("store") if isinstance(file_data.get("store"), dict) else {}
    for key in ("backend", "dsn"):  # written under [store], kept beside it: they say where, not what, an index is
        if key in store_file:
            file_data = {**file_data, key: store_file[key], "store": {k: v for k, v in store_file.items() if k != key}}
            store_file = file_data["store"]
    data = _merge(Settings().model_dump(mode="python"), file_data)
    encoder_chosen = "encoder" in store_file
    collection = overrides.get("collection") or os.environ.get("RAGFUNNEL_COLLECTION") or file_data.get("collection")
    if collection:  # a collection's own settings come after the home's file
        own = CollectionLayout(home, str(collection)).settings_file
        if own.is_file():
            own_data = _read_toml(own)
            data = _merge(data, own_data)
            encoder_chosen = encoder_chosen or "encoder" in (own_data.get("store") or {})
        data["collection"] = str(collection)
    data["home"] = home
    if os.environ.get("RAGFUNNEL_DATA") or "data" not in file_data:
        data["data"] = default_data_dir()
    if os.environ.get("RAGFUNNEL_INDEX"):
        data["index"] = Path(os.environ["RAGFUNNEL_INDEX"])
    if os.environ.get("RAGFUNNEL_DSN"):
        data["dsn"] = os.environ["RAGFUNNEL_DSN"]
    if os.environ.get("RAGFUNNEL_BACKEND"):
        data["backend"] = os.environ["RAGFUNNEL_BACKEND"]
    data.update({k: v for k, v in overrides.items() if v is not None})
    if data.get("dsn") and "backend" not in file_data and not os.environ.get("RAGFUNNEL_BACKEND") \
            and not overrides.get("backend"):
        data["backend"] = "postgres"  # a DSN alone says which backend
    try:
        settings = Settings.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"invalid settings{f' in {path}' if path.is_file() else ''}: {exc}") from None
    settings._encoder_chosen = encoder_chosen
    for name, mode in settings.modes.items():
        missing = [r for r in mode.retrievers if r not in settings.retrievers]
        if missing:
            raise ConfigError(f"mode {name!r} uses unknown retrievers {missing}")
    return settings


def settings_from_options(config: Path | None = None, index: Path | None = None, data: Path | None = None,
                          collection: str | None = None) -> Settings:
    """The settings a command runs with: its --config, --index, --data and --collection options (None where not
    given) over what `load_settings` reads; what every command module (cli.py, generate/cli.py, serve/cli.py,
    evaluate/judged_cli.py) reads its options with."""
    return load_settings(config, index=index, data=data, collection=collection)
