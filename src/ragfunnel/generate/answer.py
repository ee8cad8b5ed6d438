"""Grounded answers: retrieve scenes, prompt an LLM with them, keep only citations the scenes support.

Flow of `Answerer.ask_stream(question, mode, k)`, in stages (`Answerer._events`, `_llm_events`) the way
`Pipeline.search` runs its own; the knobs are one `AnswerSettings`:

1. retrieve, `pipeline.search(question, mode, k)`: the top-k parent scenes (user errors such as an empty question
   or a missing index raise, as in `search`); a routed aggregation or out-of-scope question, and the readers
   without an LLM, take their own paths from here;
2. prompt, `prompt.build_prompt`: the full scenes, best first, within the token budget;
3. gate, before any LLM call, the answerability gate (`gate.py`): the index's learned gate when
   `ragfunnel train gate` made one, else the best dense cosine between the question and any retrieved chunk against
   `min_similarity`. A question it judges unanswerable gets the refusal without an LLM call (a note says why). Both
   were tuned on FriendsQA dev questions outside the answer-eval sample against off-topic questions that are not in
   `out_of_scope.txt` (docs/results/answers/answers_gate.md);
4. generate: the LLM streams its reply (a `token` event per delta);
5. check, `citations.parse_answer` + `citations.validate`: citations whose id and quote check out, then
   `citations.is_grounded`: every word the answer adds to the question must be in the cited lines or the shown
   lines right beside them (`cited_text`), not merely somewhere in the scene,
   and the relevance check: the cited lines must be about the question (cosine of their embedding with the
   question's at least `min_quote_similarity`; tuned like the gate, see docs/answers.md). A small model asked
   something off-topic tends to pick a character's name from an unrelated line ("Peter Becker discovered
   penicillin", quoting "Peter Becker: Hey, can I ask you something?"): grounded, but not about the question;
6. retry / fallback: a reply that is neither the refusal nor backed by a valid, grounded citation is asked again
   once with a stricter system prompt (a `retry` event, then the new tokens); if it still has none, the result is
   the evidence answer (`fallback="evidence"`, the default: the selected lines, each cited, when they pass the
   relevance check) or else the refusal. (Before the retry, `Answerer._rescue` may keep the reply: nothing does
   here; citation repair, which re-anchored a failed citation to the shown line holding the answer, turned
   refusals into wrong answers and lives in bench/answers/answer_variants.py with the quote-first reply format.)

It ends with one `done` event holding `AnswerResult.to_dict()`. An LLM failure (an exception, a stream error, a
timeout) never raises: the result has `answer=""`, `refused=False`, the retrieved scenes and a note saying what
failed. A `ConfigError` from the LLM (runtime or model not installed, no API key) is raised: the user must act.
Every stage is also appended to the search Trace.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from ragfunnel.embedding import Encoder, shared_encoder
from ragfunnel.errors import ConfigError
from ragfunnel.registry import Registry
from ragfunnel.generate.citations import (
    CheckedCitation,
    grounding_gap,
    is_grounded,
    is_refusal,
    normalise,
    parse_answer,
    validate,
)
from ragfunnel.generate.evidence import EvidenceSelector, evidence_model_dirs, trained_scorer
from ragfunnel.generate.reader import ExtractiveReader, Reading, SpanAnswer, find_reader, line_text
from ragfunnel.generate.gate import AUTO, Gate, GateDecision, load_gate
from ragfunnel.generate.llm import LLM
from ragfunnel.pipeline import Pipeline, SearchResult
from ragfunnel.retrieve.dense import embed_query
from ragfunnel.generate.prompt import (
    DEFAULT_SOURCE_TOKENS, DEFAULT_SOURCES, CandidateInput, EvidenceInput, Prompt, SceneInput, build_candidates_prompt,
    build_evidence_prompt, build_prompt,
)
from ragfunnel import schema
from ragfunnel.present import best_lines, scalar_metadata
from ragfunnel.query.aggregate import AggregateResult, list_items
from ragfunnel.query.router import Route
from ragfunnel.schema import (
    AnswerCandidate, AnswerResponse, GateVerdict, Line, QuestionRewrite, RouteInfo, SearchHit, SourceScore, TraceInfo,
)
from ragfunnel.store.filters import Filter
from ragfunnel.types import Candidate, StageRecord, Trace

def _llm_reader(arg: str, answerer: Answerer) -> LLM:
    if answerer.llm is None:
        raise ConfigError("the llm reader needs an LLM (--llm), or choose --reader evidence")
    return answerer.llm


# What reads the retrieved passages into an answer: each factory gives an answerer's component that does
# (`Answerer(reader=...)` picks one by name).
READERS = Registry("reader")
READERS.register("llm", _llm_reader, description="an LLM writes the answer from the retrieved passages, citing their lines")
READERS.register("extractive", lambda arg, answerer: answerer.extractive, extra="reader", modules=("onnx", "lightgbm"),
                 description="the trained span reader copies the answer from one line (`ragfunnel train reader`)")
READERS.register("evidence", lambda arg, answerer: answerer.evidence,
                 description="the evidence selector's best lines, no LLM")
SHOWN_CANDIDATES = 5  # the extractive reader's candidates a result lists (the answer first)
FALLBACKS = ("evidence", "refusal")  # what replaces an LLM reply that fails validation
LLM_INPUTS = ("candidates", "scenes", "evidence")  # what the LLM reads: the extractive reader's best candidates with
# their lines (it phrases one of them), the retrieved scenes (cut to a budget), or the selected evidence lines
PHRASED_CANDIDATES = 3  # candidates the LLM chooses from when it phrases the extractive answer
DEFAULT_MAX_TOKENS = 320
DEFAULT_MIN_QUOTE_SIMILARITY: float | None = 0.13  # cosine(question, cited lines) below which the citation is off-topic


@dataclass(frozen=True)
class AnswerSettings:
    """How an `Answerer` answers: the reader, what the LLM reads, its budgets and the checks' thresholds. Checked once,
    when made: an unknown reader, fallback or LLM input is a ConfigError."""

    reader: str = "llm"  # "extractive": a span the span reader copies from a line; "evidence": the selected lines;
    # neither calls an LLM
    llm_input: str = "scenes"  # "evidence": the LLM reads only the selected lines (+ `evidence_context` around each);
    # "candidates": the extractive reader's best answers, one of which it phrases
    evidence_context: int = 1
    evidence_first: bool = False  # the llm reader also sends the evidence answer (an `evidence` event) first
    fallback: str = "evidence"  # what replaces an LLM reply that fails validation: the evidence answer or the refusal
    retry: bool = True  # a reply that fails validation is asked again once, with a stricter prompt
    max_sources: int | None = None  # None: the LLM's preferred number (`max_sources` attribute) or 5
    source_tokens: int | None = None  # None: the LLM's preferred budget (`source_tokens` attribute) or 2,400
    max_tokens: int = DEFAULT_MAX_TOKENS
    max_seconds: float | None = None  # for all LLM calls of one question, checked between tokens
    min_similarity: float | str | None = AUTO  # the similarity gate's; None: no answerability gate; AUTO: fits the
    # index's vectors
    min_quote_similarity: float | None = DEFAULT_MIN_QUOTE_SIMILARITY  # None: no relevance check of the cited lines

    def __post_init__(self) -> None:
        if self.reader not in READERS.names():
            raise ConfigError(f"unknown reader {self.reader!r}: choose one of {', '.join(READERS)}")
        if self.fallback not in FALLBACKS:
            raise ConfigError(f"unknown fallback {self.fallback!r}: choose one of {', '.join(FALLBACKS)}")
        if self.llm_input not in LLM_INPUTS:
            raise ConfigError(f"unknown LLM input {self.llm_input!r}: choose one of {', '.join(LLM_INPUTS)}")

    def for_llm(self, llm: LLM | None) -> AnswerSettings:
        """These settings with the source budget `llm` prefers wherever they leave it open (None); a None LLM has
        neither attribute: the defaults."""
        return replace(
            self,
            max_sources=self.max_sources if self.max_sources is not None
            else int(getattr(llm, "max_sources", DEFAULT_SOURCES)),
            source_tokens=self.source_tokens if self.source_tokens is not None
            else int(getattr(llm, "source_tokens", DEFAULT_SOURCE_TOKENS)),
        )


@dataclass(frozen=True)
class RetrievedScene:
    doc_id: str
    label: str
    title: str
    rank: int
    score: float
    source_id: int | None  # its [n] in the prompt; None when the budget left it out
    sources: dict[str, tuple[int, float]] = field(default_factory=dict, hash=False, compare=False)  # retriever -> (rank, score)
    lines: tuple[Line, ...] = ()  # the best-matching lines, as search shows them
    metadata: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)  # the document's scalar metadata

    def to_schema(self) -> SearchHit:
        return SearchHit(
            id=self.doc_id, label=self.label, title=self.title, rank=self.rank, score=self.score,
            sources={name: SourceScore(rank=r, score=s) for name, (r, s) in self.sources.items()},
            lines=list(self.lines), metadata=dict(self.metadata), source_id=self.source_id,
        )

    def to_dict(self) -> dict[str, Any]:
        return self.to_schema().model_dump(mode="json")


def citation_schema(c: CheckedCitation) -> schema.Citation:
    return schema.Citation(source_id=c.source_id, id=c.doc_id, label=c.label, title=c.title, quote=c.quote,
                           unit_ids=list(c.unit_ids), lines=list(c.lines), context=list(c.context),
                           span=list(c.span) if c.span else None)


@dataclass
class AnswerResult:
    question: str
    mode: str
    llm: str
    answer: str  # the reply without its citation lines; the corpus's refusal sentence when refused; "" when the LLM failed
    citations: list[CheckedCitation]
    refused: bool
    scenes: list[RetrievedScene]
    timings: dict[str, float]  # milliseconds: retrieval, prompt, llm_first_token, llm_total, validation, total
    notes: list[str] = field(default_factory=list)
    attempts: int = 0  # LLM calls made (2 after a retry)
    drafts: list[str] = field(default_factory=list)  # every raw reply, citation lines included
    trace: Trace | None = None
    gate: dict[str, Any] | None = None  # the answerability gate's verdict: which gate, its score and threshold
    reader: str = "llm"  # "evidence": the answer is the selected lines (generate/evidence.py); "aggregate": the list
    route: Route | None = None  # the router's choice, when the question was routed
    aggregate: AggregateResult | None = None  # the list of an aggregation question (exhaustive, or the ranked fallback)
    rewrite: dict[str, str] | None = None  # a follow-up read with the conversation: asked, searched, by
    candidates: list[AnswerCandidate] | None = None  # the extractive reader's best answers, the answer first
    short_answer: str | None = None  # the span the answer rests on (extractive, or the candidate the LLM phrased)

    @property
    def failed(self) -> bool:
        return not self.refused and not self.answer

    def to_schema(self) -> AnswerResponse:
        """The result in the one result schema: what `ask --json` prints and the `done` event of `POST /ask` holds."""
        return AnswerResponse(
            question=self.question, mode=self.mode, llm=self.llm, answer=self.answer, refused=self.refused,
            citations=[citation_schema(c) for c in self.citations], scenes=[s.to_schema() for s in self.scenes],
            timings={k: round(v, 3) for k, v in self.timings.items()}, notes=list(self.notes), attempts=self.attempts,
            drafts=list(self.drafts), gate=GateVerdict(**self.gate) if self.gate else None, reader=self.reader,
            trace=TraceInfo.from_trace(self.trace) if self.trace else None,
            route=self.route.name if self.route else "lookup",
            route_info=RouteInfo(**self.route.to_dict()) if self.route else None,
            items=list_items(self.aggregate) if self.aggregate is not None else None,
            count=self.aggregate.count if self.aggregate is not None else None,
            exhaustive=self.aggregate.exhaustive if self.aggregate is not None else None,
            rewrite=QuestionRewrite(**self.rewrite) if self.rewrite else None,
            candidates=list(self.candidates) if self.candidates is not None else None,
            short_answer=self.short_answer,
        )

    def to_dict(self) -> dict[str, Any]:
        return self.to_schema().model_dump(mode="json")


class _Timeout(Exception):
    pass


@dataclass
class _Attempts:
    """What the generate, check and retry stages of one question hand on."""

    prompt: Prompt  # the prompt of the current attempt (the stricter one after a retry)
    shown_lines: dict[int, Any]  # source id -> the lines its block shows (a retry shows the same)
    t_llm: float = field(default_factory=time.perf_counter)  # when the first LLM call started
    validation_s: float = 0.0
    failed: str | None = None  # why the last LLM call failed
    body: str = ""  # the last reply without its citation lines


class Answerer:
    """Answers a question from what `pipeline` retrieves, in stages the way `Pipeline.search` runs its own:
    retrieve, then the path the question takes (`_events`); on the LLM path prompt -> gate -> generate -> check ->
    retry / fallback (`_llm_events`). Each stage records its own timings and trace entries (`prompt`, `gate`,
    `generate`, `validate`; the gate's verdict also goes into `result.gate`)."""

    def __init__(self, pipeline: Pipeline, llm: LLM | None, *, settings: AnswerSettings = AnswerSettings(),
                 gate: Gate | None = None, extractive: ExtractiveReader | None = None,
                 evidence: EvidenceSelector | None = None):
        """The collaborators, when given, replace what the collection has: `gate` (None: the index's learned gate
        if trained, else the similarity gate of `settings.min_similarity`), `extractive` (None: the trained reader
        of <home>/models/reader), `evidence` (None: the trained selector of <home>/models/evidence, else
        unsupervised)."""
        if settings.reader == "llm" and llm is None:
            raise ConfigError("the llm reader needs an LLM (--llm), or choose --reader evidence")
        self.pipeline, self.llm, self.settings = pipeline, llm, settings.for_llm(llm)
        self._evidence, self._extractive = evidence, extractive
        self.gate, self._gate_resolved = gate, gate is not None  # resolved after the first search opened the index

    def ask(self, question: str, mode: str = "fast", k: int = 5, where: Filter | None = None,
            rewrite: QuestionRewrite | None = None, route: str | None = None) -> AnswerResult:
        """`where`: answer only from the documents the metadata filter admits (store/filters.py). `rewrite`: the
        question is a follow-up rewritten from `rewrite.asked` (api/conversation.py); it goes into the result and
        its trace (a `rewrite` stage). `route`: None answers from the top k (no routing); auto / lookup / aggregate
        routes the question first (query/router.py): an aggregation question gets the exhaustive list, each item
        cited, with no LLM; an out-of-scope one the refusal."""
        for event in self._rewritten(self._events(question, mode, k, where, route), rewrite):
            if isinstance(event, AnswerResult):
                return event
        raise AssertionError("unreachable")  # pragma: no cover

    def ask_stream(self, question: str, mode: str = "fast", k: int = 5, where: Filter | None = None,
                   rewrite: QuestionRewrite | None = None, route: str | None = None) -> Iterator[dict[str, Any]]:
        """Events (plain JSON-able dicts): {"type": "token", "text"}..., after a reply without a valid citation
        {"type": "retry", "reason"} and the second reply's tokens, then one {"type": "done", "result": {...}}
        with `AnswerResult.to_dict()`."""
        for event in self._rewritten(self._events(question, mode, k, where, route), rewrite):
            yield {"type": "done", "result": event.to_dict()} if isinstance(event, AnswerResult) else event

    @staticmethod
    def _rewritten(events: Iterator[Any], rewrite: QuestionRewrite | None) -> Iterator[Any]:
        """The events, with the follow-up's rewrite in every result and, once, as the first stage of its trace."""
        if rewrite is None:
            yield from events
            return
        data = rewrite.model_dump()
        staged: set[int] = set()
        for event in events:
            if isinstance(event, AnswerResult):
                event.rewrite = data
                if event.trace is not None and id(event.trace) not in staged:
                    event.trace.stages.insert(0, StageRecord("rewrite", 0.0, dict(data)))
                    staged.add(id(event.trace))
            elif isinstance(event, dict) and isinstance(event.get("result"), dict):
                event["result"]["rewrite"] = data
            yield event

    @property
    def evidence(self) -> EvidenceSelector:
        """The evidence selector: the collection's trained one, else the one its corpus ships, else unsupervised."""
        if self._evidence is None:
            scorer = trained_scorer(*evidence_model_dirs(self.pipeline.settings.models_dir, self.pipeline.corpus))
            self._evidence = EvidenceSelector(self.pipeline.store, scorer)
        return self._evidence

    @property
    def extractive(self) -> ExtractiveReader:
        """The span reader of `<home>/models/reader` (`ragfunnel train reader`), over the evidence selector's lines."""
        if self._extractive is None:
            found = find_reader(self.pipeline.settings.models_dir, self.pipeline.corpus)
            if found is None:
                raise ConfigError("this collection has no extractive reader: train one with `ragfunnel train reader` "
                                  "(or ask with --reader evidence)")
            self._extractive = ExtractiveReader(self.evidence, found)
        return self._extractive

    def span_citation(self, n: int, answer: SpanAnswer, reading: Reading) -> CheckedCitation:
        """The line of an answer's best occurrence as citation [n], the answer's offsets in it, the lines around it."""
        span = answer.spans[0]
        doc = reading.windows[span.window].doc
        unit = doc.units[span.unit]
        context = tuple(doc.units[i].render() for i in (span.unit - 1, span.unit + 1) if 0 <= i < len(doc.units))
        return CheckedCitation(n, doc.doc_id, self.pipeline.corpus.citation_label(doc, [unit]), doc.title,
                        line_text(doc, span.unit), (unit.unit_id,), (unit.render(),), context, (span.start, span.end))

    def extractive_result(self, question: str, mode: str, candidates: list, k: int, t0: float,
                          trace: Trace | None = None) -> AnswerResult:
        """The extractive answer: the best candidate span, citing its line; its runner-ups in `candidates`; the
        refusal when the reader finds no answer (the no-answer mass wins)."""
        t = time.perf_counter()
        reading = self.extractive.read(question, candidates)
        shown = reading.candidates[:SHOWN_CANDIDATES]
        cited = [self.span_citation(n, a, reading) for n, a in enumerate(shown, 1)]
        options = [AnswerCandidate(text=a.text, score=round(a.score, 4), probability=round(a.prob, 4),
                                   occurrences=len(a.spans), citation=citation_schema(c)) for a, c in zip(shown, cited)]
        timings = {"retrieval": (t - t0) * 1000, "reader": reading.timings["total"],
                   "reader_windows": reading.timings.get("windows", 0.0), "reader_spans": reading.timings["spans"]}
        scenes = self._retrieved(question, candidates[:k], self._scenes(question, candidates[:k]), {})
        result = AnswerResult(question, mode, "none", "", [], False, scenes, timings, trace=trace,
                              reader="extractive", candidates=options)
        if reading.answerable:
            result.answer, result.citations, result.short_answer = shown[0].text, [cited[0]], shown[0].text
        else:
            result.answer, result.refused = self.pipeline.corpus.domain.refusal, True
            result.notes.append("the reader found no answer in the retrieved passages" if reading.windows
                                else "nothing was retrieved; no passage to read")
        if trace is not None:
            trace.stages.append(StageRecord("read", reading.timings["total"] / 1000, {
                "reader": "extractive", "windows": [f"{w.doc.doc_id}:{w.start}-{w.end}" for w in reading.windows],
                "no_answer": round(reading.no_answer, 4), "answerable": reading.answerable,
                "candidates": [{"text": a.text, "score": round(a.score, 4), "probability": round(a.prob, 4)}
                               for a in shown],
            }))
        return result

    def evidence_result(self, question: str, mode: str, candidates: list, k: int, t0: float,
                        trace: Trace | None = None) -> AnswerResult:
        """The evidence answer: the selected lines (best first, each `Speaker: words [n]`) and one citation per line,
        labelled by the corpus, with the line before and after it as context."""
        t = time.perf_counter()
        corpus = self.pipeline.corpus
        found = self.evidence.select(question, candidates)
        citations, lines = [], []
        for n, line in enumerate(found.lines, 1):
            unit, doc = line.unit, line.doc
            text = " ".join(unit.render().split())
            lines.append(f"{text} [{n}]")
            citations.append(CheckedCitation(n, doc.doc_id, corpus.citation_label(doc, [unit]), doc.title, text,
                                      (unit.unit_id,), (unit.render(),),
                                      tuple(doc.units[i].render() for i in line.context if i != line.index)))
        timings = {"retrieval": (t - t0) * 1000, "evidence": (time.perf_counter() - t) * 1000}
        scenes = self._retrieved(question, candidates[:k], self._scenes(question, candidates[:k]), {})
        result = AnswerResult(question, mode, "none", "\n".join(lines), citations, not lines, scenes, timings,
                              trace=trace, reader="evidence")
        if not lines:
            result.answer = corpus.domain.refusal
            result.notes.append("nothing was retrieved; no evidence to answer from")
        if trace is not None:
            trace.stages.append(StageRecord("evidence", timings["evidence"] / 1000, {
                "scorer": found.scorer, "parents": found.parents, "units": found.pool,
                "lines": [{"id": ln.unit.unit_id, "score": round(ln.score, 4), "parent_rank": ln.parent_rank} for ln in found.lines],
            }))
        return result

    def _evidence_fallback(self, question: str, mode: str, pool: list, k: int, t0: float) -> AnswerResult | None:
        """The evidence answer in place of an LLM reply that failed validation, when the fallback is on and the
        selected lines are about the question (the relevance check of cited lines); None means: refuse."""
        if self.settings.fallback != "evidence" or not pool:
            return None
        found = self.evidence_result(question, mode, pool, k, t0)
        if not found.citations:
            return None
        relevance = self._quote_similarity(question, found.citations)
        if relevance is not None and relevance < self.settings.min_quote_similarity:
            return None
        return found

    def _scenes(self, question: str, candidates: list) -> list[SceneInput]:
        if not candidates:
            return []
        store = self.pipeline.store
        qvec, view = self._question_vector(question)
        out = []
        for c in candidates:
            doc = store.document(c.doc_id)
            if doc is None:
                continue
            out.append(SceneInput(doc, c.rank, c.score, self._focus(doc, c, qvec, view)))
        return out

    def _retrieved(self, question: str, candidates: list, scenes: list[SceneInput], ids: dict[str, int]) -> list[RetrievedScene]:
        """The retrieved scenes as search shows them (best lines, every retriever's rank and score), with their [n]."""
        by_id = {c.doc_id: c for c in candidates}
        store = self.pipeline.store
        out = []
        for s in scenes:
            cand = by_id[s.doc.doc_id]
            out.append(RetrievedScene(s.doc.doc_id, s.doc.label, s.doc.title, s.rank, s.score, ids.get(s.doc.doc_id),
                                      dict(cand.sources), tuple(best_lines(store, s.doc, cand, question)),
                                      scalar_metadata(s.doc)))
        return out

    def _encoder(self) -> Encoder:
        """The index's encoder (shared, loaded once)."""
        settings = self.pipeline.store.settings
        return shared_encoder(settings.encoder, settings.max_length)

    def _question_vector(self, question: str) -> tuple[Any, str | None]:
        """The question's embedding and the smallest dense view below the scene (where a cut scene is centred);
        (None, None) for an index without such a view."""
        views = [v for v in self.pipeline.store.settings.dense_views if v != "scene"]
        if not views:
            return None, None
        view = next((v for v in views if v.startswith("w")), views[0])
        return embed_query(self._encoder(), question), view  # cached: retrieval already embedded this question

    def _line_similarities(self, question: str, citations: list[CheckedCitation]) -> Any:
        """Cosine between the question and the lines each citation quotes; None when the relevance check is off (or
        there is no encoder or no citation)."""
        if self.settings.min_quote_similarity is None or not citations:
            return None
        encoder = self._encoder()
        return encoder.encode([" ".join(c.lines) for c in citations]) @ embed_query(encoder, question)

    def _quote_similarity(self, question: str, citations: list[CheckedCitation]) -> float | None:
        """The best cosine between the question and the lines a citation quotes (None when the check is off)."""
        similarity = self._line_similarities(question, citations)
        return None if similarity is None else float(similarity.max())

    def _focus(self, doc: Any, cand: Any, qvec: Any, view: str | None) -> tuple[int, int] | None:
        """The lines a cut scene keeps: the chunk of the scene closest to the question (cosine over every chunk of
        `view`, not only the retrieved ones: the answer is often a few lines from what matched the words), else the
        best retrieved chunk smaller than the scene."""
        store = self.pipeline.store
        if qvec is not None:
            chunks = store.doc_chunks(view, doc.doc_id)
            vectors = store.doc_vectors(view, doc.doc_id)
            if chunks and len(chunks) == len(vectors):
                best = chunks[int((vectors @ qvec).argmax())]
                return (best.start, best.end)
        for chunk in store.chunks(list(cand.best_chunks[:4])):
            if chunk.end - chunk.start < len(doc.units):
                return (chunk.start, chunk.end)
        return None

    def _generate(self, prompt: Prompt, t_start: float, timings: dict[str, float]) -> Iterator[str]:
        """Stream one reply; records the first-token time of the first attempt; enforces `max_seconds`."""
        stream = self.llm.stream(prompt.system, prompt.user, self.settings.max_tokens)
        try:
            for text in stream:
                if "llm_first_token" not in timings:
                    timings["llm_first_token"] = (time.perf_counter() - t_start) * 1000
                yield text
                if self.settings.max_seconds is not None and time.perf_counter() - t_start > self.settings.max_seconds:
                    raise _Timeout()
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()  # ends the backend's generator now (its HTTP reply, the llama.cpp lock)


    def _streamed(self, prompt: Prompt, t_start: float, timings: dict[str, float],
                  parts: list[str]) -> Generator[dict[str, Any], None, str | None]:
        """The LLM's reply as `token` events (each text also appended to `parts`); returns why it failed, or None.
        A failed call degrades the answer, never the request; a ConfigError (no usable LLM) is raised."""
        try:
            for text in self._generate(prompt, t_start, timings):
                parts.append(text)
                yield {"type": "token", "text": text}
        except ConfigError:
            raise
        except _Timeout:
            return f"the LLM ({self.llm.name}) took longer than {self.settings.max_seconds:g}s"
        except Exception as exc:  # noqa: BLE001 - reported as the answer's failure, not the request's
            return f"the LLM ({self.llm.name}) failed: {type(exc).__name__}: {_short(exc)}"
        return None
    # ---- the stages ---------------------------------------------------------------------------------------------

    def _events(self, question: str, mode: str, k: int, where: Filter | None = None,
                route: str | None = None) -> Iterator[dict[str, Any] | AnswerResult]:
        """Retrieve, then the path the question takes: the routed answer (an aggregation's list, or the refusal of an
        out-of-scope question), a reader without an LLM, the LLM phrasing the extractive answer, or the LLM reading
        the retrieved scenes (`_llm_events`)."""
        t0 = time.perf_counter()
        search, pool = self._retrieve(question, mode, k, where, route)
        timings: dict[str, float] = {"retrieval": (time.perf_counter() - t0) * 1000}
        if search.aggregate is not None or (search.route is not None and search.route.path == "out_of_scope"):
            yield from self._routed(search, k, timings, t0)
        elif self.settings.reader in ("evidence", "extractive"):
            yield from self._reader_events(search, pool, k, t0)
        elif self.settings.llm_input == "candidates":
            yield from self._phrased_events(search, pool, k, t0)
        else:
            yield from self._llm_events(search, pool, k, t0, timings)

    def _retrieve(self, question: str, mode: str, k: int, where: Filter | None,
                  route: str | None) -> tuple[SearchResult, list[Candidate]]:
        """The search (its stages open the trace) and the pool the evidence selector reads: the top k, or more when
        the evidence selector may be asked (it reads `evidence.parents`); the result keeps the same top k as a
        search for k."""
        s = self.settings
        wants_evidence = s.reader in ("evidence", "extractive") or s.evidence_first or s.fallback == "evidence"
        search = self.pipeline.search(question, mode, k=max(k, self.evidence.parents) if wants_evidence else k,
                                      where=where, route=route)
        pool, search.candidates = search.candidates, search.candidates[:k]
        return search, pool

    def _llm_events(self, search: SearchResult, pool: list[Candidate], k: int, t0: float,
                    timings: dict[str, float]) -> Iterator[dict[str, Any] | AnswerResult]:
        """The LLM path: prompt -> gate -> (the evidence answer first) -> generate -> check -> retry / fallback, then
        `done`. The notes the answer stages add go into the search trace too."""
        scenes, make_prompt, prompt = self._prompt_stage(search, pool, k, timings)
        result = self._llm_result(search, scenes, prompt, timings)
        noted = len(result.notes)  # the search's notes, already in its trace
        if prompt.dropped:
            result.notes.append(f"{len(prompt.dropped)} retrieved scene(s) left out of the prompt by the token budget")
        if not self._gate_stage(search, scenes, prompt, result):
            if self.settings.evidence_first:
                yield self._evidence_first(search, pool, k, t0, timings)
            attempts = yield from self._attempts(search, pool, k, t0, make_prompt, prompt, result)
            self._record_llm(search, attempts, result)
        search.trace.notes.extend(result.notes[noted:])
        yield from self._done(result, t0)

    def _prompt_stage(self, search: SearchResult, pool: list[Candidate], k: int,
                      timings: dict[str, float]) -> tuple[list[SceneInput], Callable[[bool], Prompt], Prompt]:
        """The retrieved scenes (or the selected evidence lines) and the first prompt built from them; `make_prompt`
        builds it again, strict, for the retry. Timings `prompt` (and `evidence`); trace: `prompt`."""
        t = time.perf_counter()
        scenes = self._scenes(search.question, search.candidates)
        lines = self._evidence_lines(search.question, pool, timings) if self.settings.llm_input == "evidence" else []
        make_prompt = functools.partial(self._build_prompt, search.question, scenes, lines, k)
        prompt = make_prompt(False)
        timings["prompt"] = (time.perf_counter() - t) * 1000
        search.trace.stages.append(StageRecord("prompt", timings["prompt"] / 1000, {
            "input": self.settings.llm_input, "sources": [s.doc.doc_id for s in prompt.sources],
            "truncated": [s.doc.doc_id for s in prompt.sources if s.truncated],
            "dropped": list(prompt.dropped), "approx_tokens": prompt.approx_tokens,
        }))
        return scenes, make_prompt, prompt

    def _evidence_lines(self, question: str, pool: list[Candidate], timings: dict[str, float]) -> list[EvidenceInput]:
        """The evidence selector's lines, what the LLM reads when `llm_input` is "evidence"; timing `evidence`."""
        t = time.perf_counter()
        found = self.evidence.select(question, pool)
        timings["evidence"] = (time.perf_counter() - t) * 1000
        return [EvidenceInput(ln.doc, ln.index, ln.parent_rank, ln.score) for ln in found.lines]

    def _build_prompt(self, question: str, scenes: list[SceneInput], lines: list[EvidenceInput], k: int,
                      strict: bool, **style: Any) -> Prompt:
        """The prompt of the configured LLM input. `style`: more options of the prompt builders, for a variant that
        overrides this (bench/answers/answer_variants.py); none here."""
        s, domain = self.settings, self.pipeline.corpus.domain
        if s.llm_input == "evidence":
            return build_evidence_prompt(question, lines, context=s.evidence_context, strict=strict, domain=domain,
                                         **style)
        return build_prompt(question, scenes, max_sources=min(k, s.max_sources), source_tokens=s.source_tokens,
                            strict=strict, domain=domain, **style)

    def _llm_result(self, search: SearchResult, scenes: list[SceneInput], prompt: Prompt,
                    timings: dict[str, float]) -> AnswerResult:
        """The result the LLM stages fill in: no answer yet, the retrieved scenes with their [n] in the prompt."""
        ids = {s.doc.doc_id: s.sid for s in prompt.sources}
        return AnswerResult(
            search.question, search.mode, self.llm.name, "", [], False,
            self._retrieved(search.question, search.candidates, scenes, ids), timings, notes=list(search.trace.notes),
            trace=search.trace, route=search.route,
        )

    def _gate_stage(self, search: SearchResult, scenes: list[SceneInput], prompt: Prompt, result: AnswerResult) -> bool:
        """The answerability gate, before any LLM call (its verdict goes into `result.gate`; trace: `gate`): True when the result is
        already the refusal, because the gate judged the question off-topic or nothing fits in the prompt (a note
        says which)."""
        verdict = self._traced_judge(search, bool(prompt.sources))
        if verdict is not None:
            result.gate = self._gate_record(verdict)
        if prompt.sources and (verdict is None or verdict.answerable):
            return False
        result.answer, result.refused = self.pipeline.corpus.domain.refusal, True
        if prompt.sources:
            result.notes.append(verdict.reason)
        else:
            result.notes.append("no scenes were retrieved; nothing to answer from" if not scenes
                                else "no retrieved scene fits in the prompt's token budget; nothing to answer from")
        return True

    def _judge(self, question: str, candidates: list[Candidate], ask: bool) -> GateDecision | None:
        """The answerability gate's verdict; None without a gate, or when `ask` is false (nothing to judge). The gate
        is resolved on first use either way (after the first search opened the index)."""
        if not self._gate_resolved:
            self.gate, self._gate_resolved = load_gate(self.pipeline, self.settings.min_similarity), True
        return self.gate.judge(question, candidates) if self.gate is not None and ask else None

    def _traced_judge(self, search: SearchResult, ask: bool) -> GateDecision | None:
        """`_judge` as a stage of the search's trace (`gate`: which gate, its score, threshold and verdict)."""
        t = time.perf_counter()
        verdict = self._judge(search.question, search.candidates, ask)
        if verdict is not None:
            search.trace.stages.append(StageRecord("gate", time.perf_counter() - t, {
                **self._gate_record(verdict), "answerable": verdict.answerable}))
        return verdict

    def _gate_record(self, verdict: GateDecision) -> dict[str, Any]:
        """The verdict as the result holds it: which gate, its score and threshold."""
        return {"gate": self.gate.name, "score": round(verdict.score, 4), "threshold": round(verdict.threshold, 4)}

    def _evidence_first(self, search: SearchResult, pool: list[Candidate], k: int, t0: float,
                        timings: dict[str, float]) -> dict[str, Any]:
        """The `evidence` event the llm reader sends before the LLM's tokens when `evidence_first` is on."""
        early = self.evidence_result(search.question, search.mode, pool, k, t0)
        timings["evidence"] = early.timings["evidence"]
        return {"type": "evidence", "result": early.to_dict()}

    def _attempts(self, search: SearchResult, pool: list[Candidate], k: int, t0: float,
                  make_prompt: Callable[[bool], Prompt], prompt: Prompt,
                  result: AnswerResult) -> Generator[dict[str, Any], None, _Attempts]:
        """generate -> check, at most twice: a reply that fails the check is rescued (`_rescue`), else asked again
        once with the stricter prompt (a `retry` event) when `retry` is on, else replaced by the fallback."""
        attempts = _Attempts(prompt, {src.sid: src.lines for src in prompt.sources})
        retry_reason = "no valid citation"
        for attempt in (1, 2):
            if attempt == 2:
                attempts.prompt = make_prompt(True)
                yield {"type": "retry", "reason": retry_reason}
            result.attempts = attempt
            reply = yield from self._generate_stage(attempts, result)
            if reply is None:
                break
            problem = self._check_stage(search.question, reply, attempts, result)
            if problem is None or self._rescue_stage(search.question, problem, attempts, result):
                break
            if attempt == 1 and self.settings.retry:
                retry_reason = problem
                result.notes.append(f"the reply had {problem}; asked again with a stricter prompt")
                continue
            self._fallback_stage(search, pool, k, t0, problem, result)
            break
        return attempts

    def _generate_stage(self, attempts: _Attempts, result: AnswerResult) -> Generator[dict[str, Any], None, str | None]:
        """One LLM reply as `token` events, kept in `drafts`; None when the call failed (`attempts.failed` says
        why)."""
        parts: list[str] = []
        attempts.failed = yield from self._streamed(attempts.prompt, attempts.t_llm, result.timings, parts)
        reply = "".join(parts)
        result.drafts.append(reply)
        return None if attempts.failed else reply

    def _check_stage(self, question: str, reply: str, attempts: _Attempts, result: AnswerResult) -> str | None:
        """Check one reply: None when it settles the result (the model's refusal, or an answer whose citations are
        valid, hold every word it adds to the question, and are about the question), else what is wrong with it (a
        note says more). Parsing and citation validation count as `validation` time."""
        t_v = time.perf_counter()
        parsed = parse_answer(reply)
        refused = is_refusal(reply)
        corpus = self.pipeline.corpus
        checked = None if refused else validate(parsed.citations, attempts.prompt.by_id, corpus.citation_label,
                                                attempts.shown_lines)
        attempts.validation_s += time.perf_counter() - t_v
        attempts.body = parsed.body
        if refused:
            result.answer, result.refused = corpus.domain.refusal, True
            return None
        result.notes.extend(f"dropped citation {d}" for d in checked.dropped)
        if not checked.valid:
            return "no valid citation"
        shown = cited_text(checked.valid, attempts.prompt)
        relevance = self._quote_similarity(question, checked.valid)
        if is_grounded(parsed.body, question, shown):
            if relevance is None or relevance >= self.settings.min_quote_similarity:
                result.answer, result.citations = parsed.body, checked.valid
                return None
            result.notes.append(f"the cited lines are not about the question (similarity {relevance:.2f} < "
                                f"{self.settings.min_quote_similarity:.2f})")
            return "a cited line unrelated to the question"
        added, missing = grounding_gap(parsed.body, question, shown)
        if not added:
            result.notes.append("the answer adds no word to the question: it restates it")
            return "an answer that only restates the question"
        result.notes.append(f"the answer's words {', '.join(sorted(missing))} are not in the cited sources")
        return "an answer that its cited sources do not contain"

    def _rescue_stage(self, question: str, problem: str, attempts: _Attempts, result: AnswerResult) -> bool:
        """True when `_rescue` keeps the reply that failed the check (its time counts as `validation`)."""
        t_v = time.perf_counter()
        rescued = self._rescue(question, attempts.body, attempts.prompt, problem)
        attempts.validation_s += time.perf_counter() - t_v
        if rescued is None:
            return False
        result.answer, (result.citations, note) = attempts.body, rescued
        result.notes.append(note)
        return True

    def _rescue(self, question: str, answer: str, prompt: Prompt,
                problem: str) -> tuple[list[CheckedCitation], str] | None:
        """Citations that keep the answer of a reply that failed the check, with a note saying how; None: the reply
        is retried or replaced. None here: a hook for the variants measured in bench/ (citation repair,
        bench/answers/answer_variants.py, lost: docs/results/answers/answers_repair.md)."""
        return None

    def _fallback_stage(self, search: SearchResult, pool: list[Candidate], k: int, t0: float, problem: str,
                        result: AnswerResult) -> None:
        """In place of a reply that failed the check and is not asked again: the evidence answer (`fallback`
        "evidence", when its lines are about the question), else the refusal."""
        fallback = self._evidence_fallback(search.question, search.mode, pool, k, t0)
        if fallback is not None:
            result.answer, result.citations, result.reader = fallback.answer, fallback.citations, "evidence"
            result.notes.append(f"the reply had {problem}, so the answer is the evidence lines instead")
        else:
            result.answer, result.refused = self.pipeline.corpus.domain.refusal, True
            result.notes.append(f"the reply had {problem}, so it was replaced by the refusal")

    def _record_llm(self, search: SearchResult, attempts: _Attempts, result: AnswerResult) -> None:
        """The LLM calls' timings (`llm_total` without the validation), the note of a failed call, and the trace
        entries `generate` and `validate`."""
        timings = result.timings
        timings["llm_total"] = (time.perf_counter() - attempts.t_llm) * 1000 - attempts.validation_s * 1000
        timings["validation"] = attempts.validation_s * 1000
        if attempts.failed:
            result.answer, result.refused, result.citations = "", False, []
            result.notes.append(f"{attempts.failed}; no answer, see the retrieved scenes")
        search.trace.stages.append(StageRecord("generate", timings["llm_total"] / 1000, {
            "llm": self.llm.name, "attempts": result.attempts, "first_token_ms": timings.get("llm_first_token"),
            "failed": bool(attempts.failed),
        }))
        search.trace.stages.append(StageRecord("validate", attempts.validation_s, {
            "citations": len(result.citations), "refused": result.refused,
        }))

    def _reader_events(self, search: Any, pool: list, k: int, t0: float,
                       reader: str | None = None) -> Iterator[dict[str, Any] | AnswerResult]:
        """A reader without an LLM: the gate, then the extractive answer (an `extractive` event) or the selected lines
        (an `evidence` event), then `done`."""
        reader = reader or self.settings.reader
        trace: Trace = search.trace
        verdict = self._traced_judge(search, bool(search.candidates))
        read = self.extractive_result if reader == "extractive" else self.evidence_result
        result = read(search.question, search.mode, pool, k, t0, trace)
        result.notes = list(trace.notes) + result.notes
        result.route = search.route
        if verdict is not None:
            result.gate = self._gate_record(verdict)
            if not verdict.answerable:
                result.answer, result.refused, result.citations = self.pipeline.corpus.domain.refusal, True, []
                result.notes.append(verdict.reason)
        result.timings["total"] = (time.perf_counter() - t0) * 1000
        yield {"type": reader, "result": result.to_dict()}
        yield result

    def _phrased_events(self, search: Any, pool: list, k: int, t0: float) -> Iterator[dict[str, Any] | AnswerResult]:
        """The LLM phrases the extractive answer: the reader's answer goes out first (an `extractive` event), then
        the LLM reads only the question and the reader's best candidates with their lines (`build_candidates_prompt`,
        ~150 tokens), streams `Answer: <one candidate, verbatim> <a few words> [n]`, and that answer replaces the
        reader's when it names a candidate and every word it adds is in the candidate's line or the lines beside
        it (`is_grounded`); otherwise, or when the LLM fails or declines, the reader's answer stands (a note says
        why)."""
        events = self._reader_events(search, pool, k, t0, reader="extractive")
        first = next(events)
        first["result"]["llm"] = self.llm.name  # the phrasing follows
        yield first
        result: AnswerResult = next(events)
        result.llm = self.llm.name
        shown = (result.candidates or [])[:PHRASED_CANDIDATES]
        if result.refused or not shown:
            yield result
            return
        timings = result.timings
        prompt = build_candidates_prompt(search.question, [CandidateInput(c.text, c.citation.quote) for c in shown],
                                         self.pipeline.corpus.domain)
        search.trace.stages.append(StageRecord("prompt", 0.0, {"input": "candidates", "candidates": len(shown),
                                                                "approx_tokens": prompt.approx_tokens}))
        t_llm = time.perf_counter()
        parts: list[str] = []
        failed = yield from self._streamed(prompt, t_llm, timings, parts)  # on failure the reader's answer stays
        reply = "".join(parts)
        result.drafts.append(reply)
        result.attempts = 1
        timings["llm_total"] = (time.perf_counter() - t_llm) * 1000
        chosen = None if failed else phrased_answer(reply, [c.text for c in shown])
        if failed:
            result.notes.append(f"{failed}; the reader's answer stands")
        elif is_refusal(reply):
            result.notes.append("the LLM found none of the reader's candidates an answer; the reader's answer stands")
        elif chosen is None:
            result.notes.append("the LLM's reply did not begin with a candidate; the reader's answer stands")
        else:
            n, body = chosen
            citation = schema_citation(shown[n - 1].citation)
            cited = "\n".join((*citation.lines, *citation.context))
            if is_grounded(body, search.question, cited):
                result.answer, result.citations, result.short_answer = body, [citation], shown[n - 1].text
                result.reader = "llm"
            else:
                added, missing = grounding_gap(body, search.question, cited)
                result.notes.append("the LLM's phrasing only restates the question; the reader's answer stands" if not added
                                    else f"the LLM's phrasing adds words its line does not hold ({', '.join(sorted(missing))}); "
                                    "the reader's answer stands")
        search.trace.stages.append(StageRecord("generate", timings["llm_total"] / 1000, {
            "llm": self.llm.name, "first_token_ms": timings.get("llm_first_token"), "failed": bool(failed),
            "phrased": result.reader == "llm"}))
        yield from self._done(result, t0)

    def _routed(self, search: Any, k: int, timings: dict[str, float], t0: float) -> Iterator[AnswerResult]:
        """The answers that take no LLM: an aggregation question's exhaustive list (every item cited by its own
        lines), or the refusal of a question the router reads as out of scope."""
        trace: Trace = search.trace
        scenes = self._retrieved(search.question, search.candidates, self._scenes(search.question, search.candidates), {})
        result = AnswerResult(search.question, search.mode, "none", "", [], False, scenes, timings,
                              notes=list(trace.notes), trace=trace, route=search.route, aggregate=search.aggregate)
        if search.aggregate is not None:
            agg = search.aggregate
            result.reader = "aggregate"
            listed = [f"- {item.label}" + (f" — {item.title}" if item.title else "") + (
                f" (score {item.score:.4f})" if item.score is not None
                else f" ({len(item.matches)} line{'s' * (len(item.matches) != 1)})") for item in agg.items]
            result.answer = "\n".join([agg.answer(), *listed])
            if not agg.items:
                result.refused = False  # an empty list is an answer ("no line matches"), not a refusal
        else:
            result.answer, result.refused = self.pipeline.corpus.domain.refusal, True  # the note says why
        yield from self._done(result, t0)

    @staticmethod
    def _done(result: AnswerResult, t0: float) -> Iterator[AnswerResult]:
        result.timings["total"] = (time.perf_counter() - t0) * 1000
        yield result


_PHRASED = re.compile(r"^\s*(?:answer\s*:\s*)?(.*?)\s*\[\s*(\d+)\s*\]\s*[.!]?\s*$", re.IGNORECASE | re.DOTALL)


def phrased_answer(reply: str, candidates: list[str]) -> tuple[int, str] | None:
    """(the candidate's number, the answer without its marker) of a phrasing reply whose answer begins with that
    candidate (normalised) and ends with its number; None for any other reply."""
    match = _PHRASED.match(reply.strip())
    if not match:
        return None
    body, n = " ".join(match.group(1).split()), int(match.group(2))
    if not 1 <= n <= len(candidates) or not body:
        return None
    wanted = normalise(candidates[n - 1])
    return (n, body) if wanted and normalise(body).startswith(wanted) else None


def schema_citation(c: schema.Citation) -> CheckedCitation:
    """A citation of the result schema back as the checked `CheckedCitation` it was made from."""
    return CheckedCitation(c.source_id, c.id, c.label, c.title, c.quote, tuple(c.unit_ids), tuple(c.lines), tuple(c.context),
                    tuple(c.span) if c.span else None)


def cited_text(citations: list[CheckedCitation], prompt: Prompt) -> str:
    """The cited lines and the shown lines right before and after each: what an answer's words must come from."""
    sources = {src.sid: src for src in prompt.sources}
    out: list[str] = []
    for citation in citations:
        src = sources[citation.source_id]
        at = {u.unit_id: i for i, u in enumerate(src.doc.units)}
        shown = set(src.lines)
        for i in sorted({j for uid in citation.unit_ids for j in (at[uid] - 1, at[uid], at[uid] + 1)} & shown):
            out.append(src.doc.units[i].render())
    return "\n".join(out)


def _short(exc: BaseException, limit: int = 160) -> str:
    text = " ".join(str(exc).split())
    return text[:limit] + ("…" if len(text) > limit else "") if text else "no message"
