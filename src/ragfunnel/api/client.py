"""The stable Python API: `ragfunnel.open(collection) -> Client`.

Every method returns the one result schema (`ragfunnel.schema`): `search` the `SearchResponse` that `ragfunnel
search --json` prints and `POST /search` returns, `ask` the `AnswerResponse` of `ragfunnel ask --json` and of the
`done` event of `POST /ask`, built by the same code (`present.search`, `Answerer`). Errors a caller can fix raise
`ragfunnel.errors.RagfunnelError` subclasses with a one-line message (QueryError: the question, the filter, k;
ConfigError: a mode, a reader, a missing extra; IndexUnusableError: no index yet).

The index, the encoder and the models load on first use and are shared by every call (and thread) of one client;
`a`-prefixed methods run the same work in a worker thread for asyncio code.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ragfunnel.api.conversation import Turn, rewrite
from ragfunnel.collections import SyncReport, index_collection, list_collections
from ragfunnel.config import Settings, load_settings
from ragfunnel.errors import ConfigError, QueryError
from ragfunnel.generate.answer import READERS, Answerer, AnswerSettings
from ragfunnel.generate.llm import LLM, make_llm
from ragfunnel.generate.stream import CitationLineFilter
from ragfunnel.pipeline import Pipeline, check_question
from ragfunnel.present import DEFAULT_LINES, scalar_metadata
from ragfunnel.present import search as present_search
from ragfunnel.schema import AnswerResponse, CollectionSummary, PassageResponse, QuestionRewrite, SearchResponse
from ragfunnel.store.filters import Filter
from ragfunnel.types import Chunk, Document

FilterLike = Filter | Mapping[str, Any] | str | Sequence[str] | None
History = Sequence[Turn | Mapping[str, Any] | tuple[str, str]] | None
MAX_K = 100


@dataclass(frozen=True)
class AskEvent:
    """One event of `Client.ask_stream`: `token` (answer text as `ask` prints it: citation lines held back),
    `retry` (the first reply had no valid citation; `text` says why; tokens of a second reply follow), `evidence`
    (the selected lines, before the LLM's answer, as an `AnswerResponse`), `done` (the final `AnswerResponse`)."""

    type: Literal["token", "retry", "evidence", "done"]
    text: str = ""
    result: AnswerResponse | None = None


def read_filter(where: FilterLike) -> Filter | None:
    """A filter from the API's JSON form ({"season": [8, 9], "year": {"gte": 2019}}), the CLI's expressions
    ("format=pdf", ["year>=2019", "path=reviews/*"]) or a `Filter`."""
    if where is None or isinstance(where, Filter):
        return where
    if isinstance(where, Mapping):
        return Filter.from_json(where)
    return Filter.parse(where)


def _k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise QueryError(f"k must be a whole number from 1 to {MAX_K}, not {k!r}")
    return k


class Client:
    """One collection, searched and answered from Python. Make it with `ragfunnel.open(...)`; close it (or use
    `with`) to release the index."""

    def __init__(self, settings: Settings, *, pipeline: Pipeline | None = None, llm: LLM | str | None = None,
                 reload: Any = None):
        self.settings = settings
        self._pipeline = pipeline
        self._owns_pipeline = pipeline is None
        self._llm: LLM | None = llm if llm is not None and not isinstance(llm, str) else None
        self._llm_name = llm if isinstance(llm, str) else None
        self._answerers: dict[str, Answerer] = {}
        self._lock = threading.Lock()
        self._llm_lock = threading.Lock()
        self._reload = reload  # settings again (after `index` wrote the collection's own settings)
        if pipeline is not None:
            pipeline.provide_llm(self._transform_llm)

    # ---- the collection ------------------------------------------------------------------------------------------

    @property
    def collection(self) -> str:
        return self.settings.collection

    @property
    def pipeline(self) -> Pipeline:
        """The funnel behind this client (opened on first use)."""
        if self._pipeline is None:
            with self._lock:
                if self._pipeline is None:
                    self._pipeline = Pipeline(self.settings, llm=self._transform_llm)
        return self._pipeline

    def modes(self) -> dict[str, str]:
        """Mode name -> what it does (aliases such as fast -> hybrid included)."""
        out = {name: spec.description for name, spec in self.settings.modes.items()}
        out.update({alias: f"= {target}" for alias, target in self.settings.aliases.items()})
        return dict(sorted(out.items()))

    def collections(self) -> list[CollectionSummary]:
        """Every collection under this client's home (as `ragfunnel collections --json` lists them)."""
        return [c.summary() for c in list_collections(self.settings)]

    def warm_up(self, modes: Sequence[str] | None = None) -> None:
        """Load now what the first question would load: the index, the encoder, the retrievers of `modes`."""
        self.pipeline.warm_up(list(modes) if modes else None)

    def close(self) -> None:
        if self._pipeline is not None and self._owns_pipeline:
            self._pipeline.close()
        self._pipeline = None
        self._answerers.clear()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<ragfunnel.Client collection={self.collection!r} index={str(self.settings.index_dir)!r}>"

    # ---- search ----------------------------------------------------------------------------------------------------

    def search(self, question: str, *, mode: str | None = None, k: int = 10, filter: FilterLike = None,
               lines: int = DEFAULT_LINES, route: str | None = None) -> SearchResponse:
        """The top-k documents (Friends: scenes) for `question`, each with its rank and score after fusion (and
        reranking), its rank and score in every retriever, its best-matching lines and passage; `filter` keeps
        only the documents whose metadata matches, inside the index. `route`: None searches unrouted; "auto",
        "lookup" or "aggregate" routes first (an aggregation question also gets `items` and `count`; docs/query.md)."""
        question = check_question(question)
        where = read_filter(filter)
        self.settings.resolve_mode(mode)
        return present_search(self.pipeline, question, mode, k=_k(k), lines=lines, where=where, route=route)

    # ---- answers ---------------------------------------------------------------------------------------------------

    def _transform_llm(self) -> LLM:
        """The client's LLM (made on first use), for modes that transform the question (deep)."""
        with self._llm_lock:
            if self._llm is None:
                self._llm = make_llm(self._llm_name, self.settings.home)
            return self._llm

    def answerer(self, reader: str | None = None) -> Answerer:
        """The answerer of `reader` ("llm", the default, or "evidence": the selected lines, no LLM)."""
        reader = reader or "llm"
        if reader not in READERS.names():
            raise ConfigError(f"unknown reader {reader!r}: choose one of {', '.join(READERS)}")
        pipeline = self.pipeline  # opened before taking the lock: `pipeline` takes it too (a first `ask` deadlocked)
        with self._lock:
            if reader not in self._answerers:
                llm = self._transform_llm() if reader == "llm" else None
                self._answerers[reader] = Answerer(pipeline, llm, settings=AnswerSettings(reader=reader))
            return self._answerers[reader]

    def _question(self, question: str, history: History, reader: str | None = None
                  ) -> tuple[str, str | None, QuestionRewrite | None]:
        """The question to answer (read with the history: by the LLM when the llm reader answers, else by rules), a
        note when the history changed it, and the rewrite (None without a history)."""
        question = check_question(question)
        if not history:
            return question, None, None
        llm = self.answerer(reader).llm if (reader or "llm") == "llm" else None
        found = rewrite(question, history, llm)
        searched = check_question(found.standalone)
        note = f"a follow-up: read with the conversation as {searched!r} (by {found.method})" if found.changed else None
        return searched, note, QuestionRewrite(asked=question, searched=searched, by=found.method)

    def ask(self, question: str, *, history: History = None, mode: str | None = None, k: int = 5,
            filter: FilterLike = None, reader: str | None = None, route: str | None = None) -> AnswerResponse:
        """A grounded answer with checked citations, or the refusal. `history`: the conversation so far (OpenAI
        chat turns, {"role", "content"}); a follow-up that refers back is searched with the names it carries.
        `route`: as for `search` (an aggregation question gets the exhaustive, cited list)."""
        searched, note, rewritten = self._question(question, history, reader)
        where = read_filter(filter)
        mode = self.settings.resolve_mode(mode)[0]
        result = self.answerer(reader).ask(searched, mode, _k(k), where, rewritten, route=route).to_schema()
        if note:
            result.notes.insert(0, note)
        return result

    def ask_stream(self, question: str, *, history: History = None, mode: str | None = None, k: int = 5,
                   filter: FilterLike = None, reader: str | None = None, route: str | None = None) -> Iterator[AskEvent]:
        """`ask`, as it happens: `token` events with the answer's text (citation lines held back, as `ragfunnel
        ask` prints it), `retry`, `evidence`, and one final `done` event holding the `AnswerResponse`."""
        searched, note, rewritten = self._question(question, history, reader)
        where = read_filter(filter)
        mode = self.settings.resolve_mode(mode)[0]
        events = self.answerer(reader).ask_stream(searched, mode, _k(k), where, rewritten, route=route)
        shown = CitationLineFilter()
        try:
            for event in events:
                kind = event["type"]
                if kind == "token":
                    text = shown.feed(event["text"])
                    if text:
                        yield AskEvent("token", text)
                    continue
                rest = shown.flush()
                if rest:
                    yield AskEvent("token", rest)
                if kind == "retry":
                    shown = CitationLineFilter()
                    yield AskEvent("retry", event.get("reason", ""))
                elif kind in ("evidence", "done"):
                    result = AnswerResponse.model_validate(event["result"])
                    if note and kind == "done":
                        result.notes.insert(0, note)
                    yield AskEvent(kind, result=result)
        finally:
            events.close()

    # ---- passages ----------------------------------------------------------------------------------------------------

    def document(self, doc_id: str) -> Document | None:
        """The document (Friends: scene) with this id, or None."""
        return self.pipeline.store.document(doc_id)

    def passage(self, id: str) -> PassageResponse:
        """The full text behind a cited id: a document id (a hit's `id`), a chunk id (`passage.chunk_id`,
        `<doc>#<view>/<n>`) or a unit id (a line's `id`, a citation's `unit_ids`), with its offsets in the
        document's text and its parent document."""
        from ragfunnel.chunking import document_text, passage_of

        if not isinstance(id, str) or not id.strip():
            raise QueryError("the id is empty: pass a document, chunk or line id from a search result or citation")
        id = id.strip()
        store = self.pipeline.store
        doc = store.document(id)
        if doc is not None:
            text, _ = document_text(doc)
            return self._passage(id, "document", doc, text, 0, len(text), list(doc.units))
        if "#" in id:
            chunks = store.chunks([id])
            doc = store.document(Chunk.parent_of(id))
            if chunks and doc is not None:
                p = passage_of(chunks[0], doc)
                return self._passage(id, "chunk", doc, p.text, p.char_start, p.char_end,
                                     list(doc.units[p.unit_start:p.unit_end]), list(chunks[0].section))
        for parent in _parents_of_unit(id):
            doc = store.document(parent)
            if doc is None:
                continue
            text, spans = document_text(doc)
            for i, unit in enumerate(doc.units):
                if unit.unit_id == id:
                    start, end = spans[i]
                    return self._passage(id, "unit", doc, text[start:end], start, end, [unit], list(unit.section))
        raise QueryError(f"no document, chunk or line with id {id!r} in the collection {self.collection!r}")

    @staticmethod
    def _passage(id: str, kind: str, doc: Document, text: str, start: int, end: int, units: list,
                 section: list[str] | None = None) -> PassageResponse:
        return PassageResponse(
            id=id, kind=kind, parent_id=doc.doc_id, label=doc.label, title=doc.title, text=text, char_start=start,
            char_end=end, unit_ids=[u.unit_id for u in units], section=section or [],
            page=next((u.page for u in units if u.page is not None), None), metadata=scalar_metadata(doc),
        )

    # ---- indexing and evaluation ---------------------------------------------------------------------------------

    def index(self, paths: Sequence[str | Path] | str | Path = (), *, include: Sequence[str] = (),
              exclude: Sequence[str] = (), rebuild: bool = False, progress: Any = None) -> SyncReport:
        """Index the files under `paths` as this collection (`ragfunnel index PATH --collection NAME`): the first
        time as a whole new index, after that as a sync. Without `paths`: the folders the collection was indexed
        from again, or the Friends corpus for the built-in collection (`ragfunnel index`). Returns what was added,
        updated, deleted, unchanged or skipped (`.to_dict()`: what `index --json` prints). The client searches the
        new index afterwards."""
        if isinstance(paths, (str, Path)):
            paths = [paths]
        report = index_collection(self.settings, list(paths), include, exclude, rebuild, progress)
        self.close()  # the next call opens the new index, with the collection's own settings
        if self._reload is not None:
            self.settings = self._reload()
        return report

    def eval_retrieval(self, question_set: str = "direct", *, mode: str | None = None, limit: int | None = None,
                       questions: str | Path | None = None, filter: FilterLike = None) -> dict[str, Any]:
        """Recall@k, MRR@10, nDCG@10 of one mode on a question set of the collection's corpus (Friends: direct,
        reworded, heavy, dev, holdout) or a JSONL file, plus the union ceiling of its retrievers: what
        `ragfunnel eval friends --json` prints."""
        from ragfunnel.corpus import question_set as corpus_questions
        from ragfunnel.evaluate.runner import ceilings, metrics_for, run_modes
        from ragfunnel.questions import load_questions

        where = read_filter(filter)
        mode_name, _ = self.settings.resolve_mode(mode)
        qs = load_questions(questions) if questions else corpus_questions(self.pipeline.corpus, question_set)
        qs = qs[:limit] if limit else qs
        run = run_modes(self.pipeline, qs, [mode_name], where=where)[mode_name]
        report = {"set": str(questions) if questions else question_set, "mode": mode_name,
                  **metrics_for(run, qs), **ceilings(run, qs)}
        if where is not None:
            report["filter"] = where.describe()
        return report

    # ---- asyncio ------------------------------------------------------------------------------------------------------

    async def asearch(self, question: str, **kw: Any) -> SearchResponse:
        """`search` in a worker thread."""
        return await asyncio.to_thread(lambda: self.search(question, **kw))

    async def aask(self, question: str, **kw: Any) -> AnswerResponse:
        """`ask` in a worker thread."""
        return await asyncio.to_thread(lambda: self.ask(question, **kw))

    async def aask_stream(self, question: str, **kw: Any) -> AsyncIterator[AskEvent]:
        """`ask_stream`, each event fetched in a worker thread."""
        events = self.ask_stream(question, **kw)
        end = object()
        try:
            while True:
                event = await asyncio.to_thread(next, events, end)
                if event is end:
                    return
                yield event
        finally:
            events.close()

    async def apassage(self, id: str) -> PassageResponse:
        return await asyncio.to_thread(self.passage, id)

    async def aindex(self, paths: Sequence[str | Path] | str | Path, **kw: Any) -> SyncReport:
        return await asyncio.to_thread(lambda: self.index(paths, **kw))


def _parents_of_unit(unit_id: str) -> list[str]:
    """The document ids a unit id may belong to: Friends `<scene>_u012`, files `<doc>:0003`."""
    out = []
    if ":" in unit_id:
        out.append(unit_id.rsplit(":", 1)[0])
    head, sep, tail = unit_id.rpartition("_u")
    if sep and tail.isdigit():
        out.append(head)
    return out


def open(collection: str | None = None, home: str | Path | None = None, dsn: str | None = None, *,
         index: str | Path | None = None, config: str | Path | None = None, llm: LLM | str | None = None) -> Client:
    """A client for one collection: "friends" (the default, `<home>/index`) or a folder collection indexed with
    `ragfunnel index PATH --collection NAME` (or this client's `index`). `home` defaults to $RAGFUNNEL_HOME, else
    ~/.ragfunnel; `index` points at an index directory directly; `config` is a settings file; `llm` the reader's
    LLM for `ask` (a name as `--llm` takes: local, fake, anthropic[:model], openai:<url>|<model>; or an LLM
    object). `dsn`: a PostgreSQL server (the postgres backend; its extra must be installed). Nothing is loaded until
    first use."""
    overrides: dict[str, Any] = {"collection": collection, "home": Path(home).expanduser() if home else None,
                                 "index": Path(index).expanduser() if index else None}
    if dsn is not None:
        overrides["dsn"] = dsn

    def reload() -> Settings:
        return load_settings(config, **overrides)

    return Client(reload(), llm=llm, reload=reload)
