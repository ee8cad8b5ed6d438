"""The funnel assembled from settings: retrievers -> collapse to parents -> fusion (-> rerank -> generate).

`Pipeline.search` runs one question through a named mode and returns the ranked parents with a Trace of every
stage. Stages are built lazily and shared, so one Pipeline serves many questions (and threads).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ragfunnel.config import ModeSpec, RerankSpec, RetrieverSpec, Settings, TransformSpec
from ragfunnel.corpus import Corpus, make_corpus
from ragfunnel.embedding import EmbeddingCache
from ragfunnel.embedding import shared_encoder
from ragfunnel.errors import ConfigError, QueryError
from ragfunnel.query.aggregate import (AggregateItem, AggregateQuery, AggregateResult, Aggregator, Match, episode_key,
                                       episode_label, unit_view)
from ragfunnel.query.list_question import (DESCRIBED_SCENES, ListQuestionReader, RelationModel, described_speaker,
                                           is_main_speaker, unread_words)
from ragfunnel.query.router import Route, Router
from ragfunnel.query.transforms import QueryTransformer, ReplyCache, TransformLLM, TransformOutput, applicable
from ragfunnel.query.vocabulary import SameWord, Vocabulary
from ragfunnel.rerank.base import Passage, Reranker
from ragfunnel.rerank.passages import passage_text
from ragfunnel.rerank.registry import RerankerContext
from ragfunnel.rerank.registry import make_reranker as registry_make_reranker
from ragfunnel.retrieve.base import Retriever, collapse_to_parents
from ragfunnel.retrieve.fusion import make_fuser
from ragfunnel.retrieve.learned import MODEL_FILE as FUSION_MODEL_FILE
from ragfunnel.retrieve.learned import LearnedFusion
from ragfunnel.retrieve.registry import make_retriever
from ragfunnel.retrieve.sparse import BM25Retriever
from ragfunnel.store import Store, open_store
from ragfunnel.store.filters import Filter
from ragfunnel.types import Candidate, Document, StageRecord, Trace

MAX_QUESTION_CHARS = 2000
RANKED_FALLBACK_K = 20  # parents a list question gets when nothing matches it exactly: the ranked list instead
BROAD_LIST_SHARE = 1 / 6  # an exact list of more of the collection than this, with words left unread, is a misreading


@dataclass
class SearchResult:
    question: str
    mode: str
    candidates: list[Candidate]
    trace: Trace
    lists: dict[str, list[Candidate]] = field(default_factory=dict)  # per retriever, collapsed
    route: Route | None = None  # the router's choice, when the search was routed
    aggregate: AggregateResult | None = None  # the answer of an aggregation question (exhaustive, or ranked: .exhaustive)


def is_text(value: str) -> bool:
    """Whether `value` can be written as UTF-8: no lone surrogates (what undecodable bytes of a command line or a
    JSON `\\udcff` escape become)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_question(question: str) -> str:
    if not isinstance(question, str) or not question.strip():
        raise QueryError("the question is empty: type a question, e.g. ragfunnel search \"Who did Rachel dump at the altar?\"")
    question = " ".join(question.split())
    if not is_text(question):
        raise QueryError("the question is not valid text (it holds bytes that are not UTF-8, or a lone surrogate "
                         "code point): type it again or check its encoding")
    if len(question) > MAX_QUESTION_CHARS:
        raise QueryError(f"the question is {len(question)} characters long; the limit is {MAX_QUESTION_CHARS}")
    return question


class Pipeline:
    """`llm`: makes the LLM of a mode's query transforms, called once when a mode first needs it (the commands
    that take `--llm` pass theirs); without it such a mode is a `ConfigError`."""

    def __init__(self, settings: Settings, store: Store | None = None, corpus: Corpus | None = None,
                 llm: Callable[[], TransformLLM] | None = None):
        self.settings = settings
        self._store = store
        self._corpus = corpus
        self._llm_factory = llm
        self._transformer: QueryTransformer | None = None
        self._retrievers: dict[str, Retriever] = {}
        self._rerankers: dict[str, Reranker] = {}
        self._router: Router | None = None
        self._list_reader: ListQuestionReader | None = None
        self._same_word: SameWord | None = None
        self._fusions: dict[Path, tuple[float, LearnedFusion]] = {}  # model directory -> (mtime, model)
        self._lock = threading.RLock()  # re-entrant: a lazily built part (the list reader) opens the store under it

    @property
    def store(self) -> Store:
        if self._store is None:
            with self._lock:
                if self._store is None:
                    self._store = open_store(self.settings.index_location, EmbeddingCache(self.settings.cache_path),
                                             backend_name=self.settings.backend)
        return self._store

    @property
    def corpus(self) -> Corpus:
        """The corpus the index was built from (`StoreSettings.corpus`): its query filters, prompt domain and
        question sets (read from `<data>/<name>`)."""
        if self._corpus is None:
            name = self.store.settings.corpus
            self._corpus = make_corpus(name, self.settings.corpus_data(name))
        return self._corpus

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
        if self._transformer is not None:
            self._transformer.cache.close()

    def provide_llm(self, llm: Callable[[], TransformLLM]) -> None:
        """Give the transforms an LLM when the pipeline was built without one (a server given a pipeline)."""
        if self._llm_factory is None:
            self._llm_factory = llm

    def transformer(self, mode: str) -> QueryTransformer:
        """The query transformer of modes with `transforms`: the LLM `llm` makes, the reply cache under the home."""
        if self._transformer is None:
            with self._lock:
                if self._transformer is None:
                    if self._llm_factory is None:
                        raise ConfigError(f"mode {mode!r} transforms the question with an LLM, and this command has "
                                          "none: use ragfunnel search / ask / eval with --llm (or RAGFUNNEL_LLM), "
                                          "or a mode without transforms")
                    self._transformer = QueryTransformer(
                        self._llm_factory(), ReplyCache(self.settings.cache_path.parent / "llm_replies.sqlite"),
                        self.corpus.domain)
        return self._transformer

    def transform(self, question: str, mode: str, spec: ModeSpec, trace: Trace) -> list[tuple[TransformSpec, TransformOutput]]:
        """Each transform of the mode run on `question` (replies cached), recorded in `trace` with its cost."""
        out = []
        transformer = self.transformer(mode)
        for t in spec.transforms:
            with trace.stage(f"transform:{t.kind}") as record:
                result = transformer.run(t.kind, question, n=t.n, max_tokens=t.max_tokens)
                record.detail.update(result.to_dict(), llm=transformer.llm.name)
                if result.error:
                    trace.notes.append(f"query transform {t.kind} failed ({result.error}); searched without it")
            out.append((t, result))
        return out

    def retriever(self, name: str) -> Retriever:
        if name not in self._retrievers:
            spec: RetrieverSpec = self.settings.retrievers[name]
            self._retrievers[name] = make_retriever(spec.kind, self.store, spec.model_dump(), name)
        return self._retrievers[name]

    def reranker(self, spec: RerankSpec) -> Reranker:
        key = spec.model_dump_json()
        if key not in self._rerankers:
            self._rerankers[key] = make_reranker(spec, self.store, self.settings)
        return self._rerankers[key]

    def warm_up(self, modes: list[str] | None = None) -> None:
        """Load now what the first question would otherwise load: the index, the encoder and every retriever and
        reranker of `modes` (default: the default mode). A server calls it at start."""
        for name in modes or [self.settings.default_mode]:
            _, spec = self.settings.resolve_mode(name)
            for retriever_name in self.searchable(spec.retrievers):
                self.retriever(retriever_name).warm_up()
            if spec.rerank is not None:  # warm_up is optional for rerankers (API clients have nothing to load)
                warm = getattr(self.reranker(spec.rerank), "warm_up", None)
                if warm is not None:
                    warm()

    def fusion_model(self, directory: Path) -> LearnedFusion | None:
        """The learned fusion in `directory` (`ragfunnel train fusion`), or None when none is trained there; read
        again when its file changes, so a server picks up a fusion trained after it started."""
        path = directory / FUSION_MODEL_FILE
        try:
            mtime = path.stat().st_mtime
        except OSError:
            self._fusions.pop(directory, None)
            return None
        cached = self._fusions.get(directory)
        if cached is None or cached[0] != mtime:
            cached = (mtime, LearnedFusion.load(directory))
            self._fusions[directory] = cached
        return cached[1]

    def learned_fusion(self, mode_name: str, spec: ModeSpec, trace: Trace | None = None) -> LearnedFusion | None:
        """The trained fusion `mode_name` fuses with: the collection's (or `fusion.model`'s), when it was trained for
        this mode (`learned` unset) or the mode requires one (`learned = true`); None otherwise, and for modes with
        query transforms. A model trained on another encoder's index, or naming retrievers this configuration lacks,
        is not used (a trace note says why; an error when the mode requires it)."""
        learned = spec.fusion.learned
        if learned is False or spec.transforms or (learned is None and spec.fusion.method == "none"):
            return None
        directory = Path(spec.fusion.model).expanduser() if spec.fusion.model else self.settings.fusion_dir
        model = self.fusion_model(directory)
        if model is None:
            if learned:
                raise ConfigError(f"mode {mode_name!r} fuses with a trained fusion and there is none in {directory}: "
                                  f"train one with `ragfunnel train fusion`")
            return None
        if learned is None and mode_name not in model.modes:
            return None
        problem = model.mismatch(self.settings.retrievers, self.store.settings.encoder)
        if problem is not None:
            if learned:
                raise ConfigError(f"the trained fusion in {directory} cannot serve mode {mode_name!r}: {problem}")
            if trace is not None:
                trace.notes.append(f"the trained fusion in {directory} was not used: {problem}; fused with "
                                   f"{spec.fusion.method}")
            return None
        return model

    def searchable(self, names: list[str], trace: Trace | None = None) -> list[str]:
        """`names` without the dense retrievers of views whose vectors a first build is still embedding (BM25
        serves until they are in); the `bm25` mode's retrievers when none is left. The fallback is said once in
        `trace`'s notes ("vectors: 41% embedded; bm25 until then")."""
        pending = self.store.pending_vectors()
        if pending is None:
            return names
        kept = [n for n in names if not (self.retriever(n).kind == "dense"
                                         and self.settings.retrievers[n].view in pending.views)]
        if len(kept) == len(names):
            return names
        if not kept:
            fallback = self.settings.modes.get("bm25")
            kept = list(fallback.retrievers) if fallback is not None else [
                n for n, r in self.settings.retrievers.items() if r.kind == "bm25"
                and r.view in self.store.settings.sparse_views][:1]
        if trace is not None:
            trace.notes.append(pending.line())
        return kept

    def mean_idf(self, question: str, mode: ModeSpec) -> float | None:
        for name in mode.retrievers:
            r = self.retriever(name)
            if isinstance(r, BM25Retriever):
                return r.mean_idf(question)
        return None

    @property
    def router(self) -> Router:
        """The question router, trained on the corpus's labelled questions (rules only when it has none)."""
        if self._router is None:
            self._router = Router(self.corpus.route_examples, cache_dir=self.settings.cache_path.parent)
        return self._router

    def route(self, question: str, override: str = "auto", trace: Trace | None = None) -> Route:
        """The path `question` takes (query/router.py); `override`: auto, lookup or aggregate. Recorded in `trace`."""
        named = self.named_filter(question)
        if trace is None:
            return self.router.route(question, override, named)
        with trace.stage("route") as record:
            route = self.router.route(question, override, named)
            record.detail.update(route.to_dict())
        return route

    @property
    def list_reader(self) -> ListQuestionReader:
        """Reads list questions against this index's own words and speakers (query/list_question.py); its speaker
        list and relation classifier are kept under the home's cache."""
        if self._list_reader is None:
            with self._lock:
                if self._list_reader is None:
                    cache = self.settings.cache_path.parent
                    vocabulary = Vocabulary(self.store, unit_view(self.store) or "scene", cache=cache)
                    self._list_reader = ListQuestionReader(vocabulary, RelationModel(cache_dir=cache))
        return self._list_reader

    @property
    def same_word(self) -> SameWord:
        """Whether a line's word is a list question's word in another form (golf ~ golfing), by the bundled encoder
        (loaded when a stem first needs it); one per pipeline, so that its answers are remembered."""
        if self._same_word is None:
            self._same_word = SameWord(self.store, shared_encoder)
        return self._same_word

    def aggregate(self, question: str, where: Filter | None = None, trace: Trace | None = None) -> AggregateResult:
        """Every line an aggregation question asks about, grouped by scene or episode (query/aggregate.py), among
        the documents `where` and the question's own season/episode admit."""
        trace = trace if trace is not None else Trace(question, "aggregate")
        where = self.resolve_filter(question, where, trace)
        with trace.stage("aggregate") as record:
            query = self.list_reader.read(question)
            query = self._described(question, query, where, trace)
            encoder = (shared_encoder(self.store.settings.encoder, self.store.settings.max_length)
                       if self.settings.aggregate_min_similarity is not None else None)
            result = Aggregator(self.store, encoder, dense_min_similarity=self.settings.aggregate_min_similarity,
                                same_word=self.same_word).run(query, where)
            trace.notes.extend(result.notes)
            record.detail.update(query=query.to_dict(), enumerated=result.enumerated, lines=result.lines,
                                 scenes=result.scenes, episodes=result.episodes, items=len(result.items),
                                 count=result.count)
        return result

    def _described(self, question: str, query: AggregateQuery, where: Filter | None, trace: Trace) -> AggregateQuery:
        """A "speaks" question whose speaker the reader took as the first person named while a pronoun speaks ("the
        adoption lady who does monica and chandler's home study - how many lines does she get"): when that person is
        one of the collection's main people, the one the question describes is asked of the scenes the question
        retrieves (their rarer speakers, the people it names aside; list_question.described_speaker)."""
        reading = query.reading
        if query.relation != "speaks" or reading is None or reading.speaker_from not in ("first named", "described"):
            return query
        counts = self.list_reader.vocabulary.speakers()
        if query.speakers and not all(is_main_speaker(s, counts) for s in query.speakers):
            return query  # "Bonnie, the girlfriend ...: which scenes does she speak in": she is named
        mode_name, spec = self.settings.resolve_mode(None)
        fused, _ = self._rank(question, mode_name, spec, DESCRIBED_SCENES, where, trace, None)
        scenes = [self.store.document(c.doc_id) for c in fused[:DESCRIBED_SCENES]]
        named = {s for speakers in reading.people.values() for s in speakers}
        found = described_speaker([[sp for u in d.units for sp in u.speakers] for d in scenes if d is not None],
                                  counts, named)
        if found is None:
            return query
        trace.notes.append(f"the question describes its speaker: {found}, the rarest speaker of the scenes it retrieves")
        return replace(query, speakers=(found,))

    def _too_broad(self, question: str, result: AggregateResult) -> str | None:
        """Why an exhaustive list is no answer to `question`: it holds more than `BROAD_LIST_SHARE` of the
        collection's parents while its reading leaves words of the question unread ("ross: interesting" read as every
        scene Ross speaks in). No list question of the 2,717 the list path was measured on asks for that many
        (docs/query.md); those read so were misreadings. None when the list answers it."""
        if not result.items:
            return None
        parents = len(self.store.doc_ids())
        if result.scenes <= BROAD_LIST_SHARE * parents:
            return None
        unread = unread_words(question, result.query, self.list_reader.vocabulary)
        if not unread:
            return None
        return (f"reading it as {result.query.describe()} lists {result.scenes} of the {parents} "
                f"{result.parents}s and leaves {', '.join(repr(w) for w in unread[:3])} unread")

    def ranked_list(self, result: AggregateResult, candidates: list[Candidate], trace: Trace,
                    broad: str | None = None) -> AggregateResult:
        """The answer of a list question nothing matched exactly (or whose exact list is too broad: `broad` says
        why): the ranked parents as its items (each with its best-matching line and its score), grouped as the
        question asks, `exhaustive` false and no count."""
        query = result.query
        items: dict[str, AggregateItem] = {}
        scenes: set[str] = set()
        episodes: set[str] = set()
        with trace.stage("aggregate:ranked") as record:
            for c in candidates:
                doc = self.store.document(c.doc_id)
                if doc is None:
                    continue
                scenes.add(doc.doc_id)
                episodes.add(episode_key(doc))
                unit = _best_unit(self.store, doc, c)
                if query.group == "episode":
                    key, label, title = episode_key(doc), episode_label(doc), str(doc.metadata.get("episode_title") or doc.title)
                else:
                    key, label, title = doc.doc_id, doc.label, doc.title
                item = items.setdefault(key, AggregateItem(key, label, title, score=c.score))
                if unit is not None:
                    item.matches.append(Match(doc.doc_id, doc.label, unit.unit_id, unit.render(), "ranked", c.score))
            record.detail.update(items=len(items), parents=len(candidates))
        why = broad or f"nothing matched exactly ({query.describe()})"
        note = f"{why}: the answer is the ranked list of the {len(candidates)} best-matching parents, not an exhaustive one"
        trace.notes.append(note)
        return AggregateResult(query, list(items.values()), 0, len(scenes), len(episodes), [*result.notes, note],
                               result.enumerated, exhaustive=False, parents=result.parents, why=broad)

    def search(
        self, question: str, mode: str | None = None, k: int = 10, list_cache: dict[str, list[Candidate]] | None = None,
        where: Filter | None = None, route: str | None = None,
    ) -> SearchResult:
        """Rank parents for `question`, among the documents `where` admits (applied inside the index, so k results
        come back whenever k documents match). `list_cache` (key -> collapsed list) lets callers that run one
        question through several modes reuse each retriever's list. `route`: None runs the lookup path without
        routing (evaluations); auto / lookup / aggregate routes the question first (the CLI, the HTTP API): an
        aggregation question gets every matching scene (`aggregate`), its candidates ranked by matching lines."""
        question = check_question(question)
        if k < 1:
            raise QueryError("k must be at least 1")
        mode_name, spec = self.settings.resolve_mode(mode)
        trace = Trace(question, mode_name)
        chosen = self.route(question, route, trace) if route is not None else None
        if chosen is not None and chosen.path == "aggregate":
            result = self.aggregate(question, where, trace)
            broad = self._too_broad(question, result)
            if result.items and broad is None:
                return SearchResult(question, mode_name, aggregate_candidates(result)[:k], trace, route=chosen,
                                    aggregate=result)
            # nothing matched exactly (or the question named nothing the index holds), or the reading lists much of
            # the collection while leaving words of the question unread: the ranked list, said to be one
            fused, lists = self._rank(question, mode_name, spec, max(k, RANKED_FALLBACK_K), where, trace, list_cache)
            return SearchResult(question, mode_name, fused[:k], trace, lists, route=chosen,
                                aggregate=self.ranked_list(result, fused[:max(k, RANKED_FALLBACK_K)], trace, broad))
        if chosen is not None and chosen.path == "out_of_scope":
            trace.notes.append(f"the router reads this question as out of scope ({chosen.reason})")
        fused, lists = self._rank(question, mode_name, spec, k, where, trace, list_cache)
        return SearchResult(question, mode_name, fused[:k], trace, lists, route=chosen)

    def _rank(self, question: str, mode_name: str, spec: ModeSpec, k: int, where: Filter | None, trace: Trace,
              list_cache: dict[str, list[Candidate]] | None) -> tuple[list[Candidate], dict[str, list[Candidate]]]:
        """The lookup path: the mode's retrievers (and transforms), fused, reranked when the mode says so."""
        where = self.resolve_filter(question, where, trace)
        lists: dict[str, list[Candidate]] = {}
        kinds: dict[str, str] = {}
        learned = self.learned_fusion(mode_name, spec, trace)
        retrievers = self.searchable(list(learned.retrievers) if learned is not None else spec.retrievers, trace)
        if learned is not None and len(retrievers) < len(learned.retrievers):
            learned = None  # vectors still embedding: the fixed fusion over what is searchable
        for name in retrievers:
            kinds[name] = self.retriever(name).kind  # built (on first use) outside the stage's timing
            with trace.stage(f"retrieve:{name}") as record:
                lists[name] = self._retrieve_list(name, question, name, where, list_cache, record)
                record.detail.update(parents=len(lists[name]), top=[_brief(c) for c in lists[name][:10]])
        weights = dict(spec.fusion.weights)
        if spec.transforms:
            self._search_transformed(question, mode_name, spec, where, kinds, lists, weights, trace, list_cache)
        fuser = make_fuser(spec.fusion.method, {**spec.fusion.model_dump(), "weights": weights})
        with trace.stage("fuse") as record:
            if learned is not None:
                wanted = k if spec.rerank is None else max(k, spec.rerank.candidates)
                idfs = self.store.term_idfs(learned.idf_view, question) if learned.idf_view else {}
                phi = learned.phi(question, idfs, lists, kinds)
                fused = learned.fuse(lists, kinds, phi, limit=wanted)
                record.detail.update(method="learned", instead_of=spec.fusion.method, model=str(learned.path),
                                     **learned.explain(phi))
            elif fuser is None:
                fused = lists[retrievers[0]]
            else:
                idf = self.mean_idf(question, spec) if spec.fusion.method == "query_aware" else None
                wanted = k if spec.rerank is None else max(k, spec.rerank.candidates)
                fused = fuser.fuse(lists, kinds, idf, limit=wanted)
                record.detail["mean_idf"] = idf
            record.detail.setdefault("method", spec.fusion.method)
            record.detail.update(candidates=len(fused), top=[_brief(c) for c in fused[:10]])
        if spec.rerank is not None:
            fused = self.rerank(question, fused, spec.rerank, trace)
        return fused, lists

    def _search_transformed(self, question: str, mode: str, spec: ModeSpec, where: Filter | None,
                            kinds: dict[str, str], lists: dict[str, list[Candidate]], weights: dict[str, float],
                            trace: Trace, list_cache: dict[str, list[Candidate]] | None) -> None:
        """Search each transformed query with the retrievers its transform names; the lists join `lists` (and
        `kinds`, `weights`) as `<retriever>~<kind><i>`, weighted transform weight x retriever weight."""
        base_kinds = dict(kinds)
        for t, result in self.transform(question, mode, spec, trace):
            for i, query in enumerate(result.queries, 1):
                for name in applicable(t.kind, base_kinds, t.retrievers):
                    label = f"{name}~{t.kind}{i}"
                    with trace.stage(f"retrieve:{label}") as record:
                        lists[label] = self._retrieve_list(name, query, f"{name}|{query}", where, list_cache, record)
                        record.detail.update(query=query, parents=len(lists[label]), top=[_brief(c) for c in lists[label][:10]])
                    kinds[label] = base_kinds[name]
                    weights[label] = t.weight * weights.get(name, 1.0)

    def _retrieve_list(self, name: str, query: str, key: str, where: Filter | None,
                       list_cache: dict[str, list[Candidate]] | None, record: StageRecord) -> list[Candidate]:
        """Retriever `name`'s hits for `query` collapsed to parents, or the list `list_cache` holds under `key` (and
        the filter): callers that run one question through several modes reuse it."""
        if where is not None:
            key = f"{key} where {where.describe()}"
        if list_cache is not None and key in list_cache:
            return list_cache[key]
        hits = self.retriever(name).retrieve(query, where=where)
        record.detail["chunks"] = len(hits)
        found = collapse_to_parents(hits)
        if list_cache is not None:
            list_cache[key] = found
        return found

    def named_filter(self, question: str) -> dict[str, Any] | None:
        """The metadata values `question` names: the corpus's `query_filter` (Friends: "season 8", "S08E16"), else
        an episode named by its title ("in The One with the Stoned Guy", query/vocabulary.py); None when it names
        none or `query_filters` is off."""
        if not self.settings.query_filters:
            return None
        named = self.corpus.query_filter(question)
        if named:
            return named
        title = self.list_reader.vocabulary.title_in(question)
        return dict(title[2]) if title is not None else None

    def resolve_filter(self, question: str, where: Filter | None, trace: Trace) -> Filter | None:
        """The filter to search with: `where` (the user's) and what the question names (`named_filter`). What the
        question names is a guess: when no document matches it, the search goes on without it and says so; the
        user's filter always holds."""
        named = Filter.equal(self.named_filter(question))
        if where is None and named is None:
            return None
        with trace.stage("filter") as record:
            combined = Filter.combine(where, named)
            assert combined is not None
            documents = self.store.count_matching(combined)
            if documents == 0 and named is not None:
                trace.notes.append(f"no document matches {named.describe()} (read from the question); searched without it")
                record.detail.update(dropped=named.describe())
                combined = where
                documents = self.store.count_matching(where) if where is not None else None
            elif documents == 0:
                trace.notes.append(f"no document matches the filter {where.describe()}")
            record.detail.update(filter=combined.describe() if combined else None, documents=documents,
                                 from_question=named.describe() if named else None)
        return combined

    def rerank(self, question: str, fused: list[Candidate], spec: RerankSpec, trace: Trace) -> list[Candidate]:
        """Rerank the top `spec.candidates` of a fused list; the rest follows in fused order."""
        reranker = self.reranker(spec)
        head, tail = fused[: spec.candidates], fused[spec.candidates :]
        with trace.stage(f"rerank:{reranker.name}") as record:
            docs = [self.store.document(c.doc_id) for c in head]
            passages = [Passage(c, passage_text(self.store, d, c, spec.passage), d) for c, d in zip(head, docs) if d]
            try:
                result = reranker.rerank(question, passages)
            except ConfigError:
                raise  # a missing or incompatible model: the user must act (the message says how)
            except Exception as exc:  # noqa: BLE001 - an optional stage never breaks the request
                trace.notes.append(f"reranker {reranker.name} failed ({type(exc).__name__}); kept the fused order")
                record.detail["degraded"] = True
                return fused
            trace.notes.extend(result.notes)
            record.detail.update(
                candidates=len(passages), passage=spec.passage, degraded=result.degraded,
                top=[_brief(c) for c in result.candidates[:10]],
            )
        tail = [Candidate(c.doc_id, c.score, len(result.candidates) + i, c.sources, c.best_chunks) for i, c in enumerate(tail, 1)]
        return result.candidates + tail

    def document(self, doc_id: str) -> Document | None:
        return self.store.document(doc_id)


def reranker_model_dir(spec: RerankSpec, settings: Settings) -> Path:
    """Where a trained reranker lives: the spec's model directory, else `ragfunnel train reranker`'s default."""
    return Path(spec.model).expanduser() if spec.model else settings.reranker_dir


def make_reranker(spec: RerankSpec, store: Store, settings: Settings) -> Reranker:
    """The reranker a mode's `rerank` settings name (rerank/registry.py lists them and the extras they need)."""
    context = RerankerContext(store, reranker_model_dir(spec, settings), spec.model, settings.models_dir)
    return registry_make_reranker(spec.method, context)


def aggregate_candidates(result: AggregateResult) -> list[Candidate]:
    """The scenes of an aggregation answer as ranked parents: most matching lines first, then in story order."""
    lines: dict[str, list[str]] = {}
    for item in result.items:
        for m in item.matches:
            lines.setdefault(m.doc_id, []).append(m.unit_id)
    order = sorted(lines, key=lambda d: (-len(lines[d]), d))
    return [Candidate(d, float(len(lines[d])), rank, {"aggregate": (rank, float(len(lines[d])))}, ())
            for rank, d in enumerate(order, 1)]


def _best_unit(store: Store, doc: Document, candidate: Candidate):
    """The line of a ranked parent to cite: the first line of its best-matching chunk, else its first line."""
    chunks = store.chunks(list(candidate.best_chunks[:1]))
    if chunks and chunks[0].start < len(doc.units):
        return doc.units[chunks[0].start]
    return doc.units[0] if doc.units else None


def _brief(c: Candidate) -> dict[str, Any]:
    return {"id": c.doc_id, "rank": c.rank, "score": round(c.score, 6)}
