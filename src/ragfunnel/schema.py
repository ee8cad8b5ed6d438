"""One shape for every result: what `ragfunnel search --json` / `ask --json` print, what the Python API gives
(`present.search(...)`, `AnswerResult.to_schema()`) and what the HTTP API returns (`POST /search`, the `done` event
of `POST /ask`). Pydantic models, so the HTTP API's OpenAPI schema documents them too.

- `SearchResponse`: the question as searched, the mode that ran, `results` (one `SearchHit` per retrieved parent,
  best first), the notes and the `TraceInfo` of every stage.
- `AnswerResponse`: the answer (or the refusal), its validated `Citation`s, the retrieved parents (`scenes`, the
  same `SearchHit`s with their `source_id` in the prompt), the gate's verdict, timings, notes and the trace.

A hit is a parent document ("scene" for Friends, a file for a folder corpus): its id, label and title, its rank
and score after fusion (and reranking), its rank and score in every retriever's list (`sources`), the lines that
match the question best with the query terms' character spans, and its scalar metadata. JSON field names are the
HTTP API's and the web page's (`id`, `label`, `lines`, `sources`, `results`, `scenes`): keep them stable.

This module sits low in the layers (it imports only `ragfunnel.types`), so every layer can speak it.
"""

from __future__ import annotations

import warnings
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ragfunnel.types import Trace

Scalar = str | int | float | bool | None


class SourceScore(BaseModel):
    """A parent's rank (1-based) and score in one retriever's list."""

    rank: int
    score: float


class Line(BaseModel):
    """One line (unit) of a parent, as search shows it, with the query terms' matches."""

    id: str = Field(..., description="the unit id, e.g. s01_e04_c04_u012")
    text: str = Field(..., description="the line as rendered: 'Speaker: words'")
    spans: list[tuple[int, int]] = Field(
        default_factory=list, description="[start, end) character spans of query-term matches in text"
    )


class MatchedPassage(BaseModel):
    """The passage behind a hit: its best-matching chunk, expanded as its view says (a sentence window; the
    section or whole document for parent-child views), located in the document's text so it can be highlighted."""

    chunk_id: str = Field(..., description="the chunk that matched: <document id>#<view>/<n>")
    char_start: int = Field(..., description="[char_start, char_end) of the passage in the document's text")
    char_end: int
    section: list[str] = Field(default_factory=list, description="the heading path of the chunk")
    page: int | None = Field(None, description="the PDF page the passage starts on")
    unit_ids: list[str] = Field(default_factory=list, description="the units (blocks, lines) the passage spans")
    text: str = Field(..., description="the passage's text")


class SearchHit(BaseModel):
    """One retrieved parent (a scene of Friends, a document of another corpus)."""

    id: str
    label: str
    title: str
    rank: int = Field(..., description="1-based, after fusion (and reranking)")
    score: float
    sources: dict[str, SourceScore] = Field(
        default_factory=dict, description="retriever name -> the parent's rank and score in that list"
    )
    lines: list[Line] = Field(default_factory=list, description="the best-matching lines, in document order")
    metadata: dict[str, Scalar] = Field(default_factory=dict, description="the document's scalar metadata")
    source_id: int | None = Field(
        None, description="answers only: its [n] in the prompt; null when not in the prompt (and in search results)"
    )
    passage: MatchedPassage | None = Field(None, description="the best-matching chunk's passage (search results)")


class RouteInfo(BaseModel):
    """The path the router chose for a question (query/router.py) and why."""

    route: str = Field(..., description="lookup | scoped | aggregate | out_of_scope")
    source: str = Field(..., description="rule | classifier | override (--route)")
    reason: str = Field(..., description="the rule that fired or the classifier's probability")
    count: bool = Field(False, description="aggregate: a number is asked for, not only a list")
    scores: dict[str, float] = Field(default_factory=dict, description="the classifier's probability per route, when it ran")
    filter: dict[str, Scalar] | None = Field(None, description="what the question names (scoped: season, episode)")


class ItemCitation(BaseModel):
    """One line that supports a list item: the parent it is in and the line itself."""

    id: str = Field(..., description="the parent (scene) id")
    label: str
    quote: str = Field(..., description="the line, rendered: 'Speaker: words'")
    unit_ids: list[str] = Field(default_factory=list, description="the line's id")
    how: str = Field("phrase", description="phrase | speaker | heading | dense: how the line was found; ranked: the "
                     "best-matching line of a parent in a ranked (not exhaustive) list")


class ListItem(BaseModel):
    """One item of an aggregation answer (a scene or an episode), with its own citations."""

    id: str = Field(..., description="the scene id, or the episode (s01_e05) when the question lists episodes")
    text: str = Field(..., description="the item: label and title")
    matches: int = Field(..., description="matching lines in it (citations holds at most a dozen)")
    citations: list[ItemCitation]
    score: float | None = Field(None, description="a ranked list (exhaustive false): the parent's fused score")


class StageTrace(BaseModel):
    """One stage of the funnel: its name, its time, and what it recorded (candidates, top ids, fallbacks...)."""

    model_config = ConfigDict(extra="allow")

    name: str
    ms: float


class TraceInfo(BaseModel):
    """Every stage a question went through (`ragfunnel.types.Trace`, serialised)."""

    question: str
    mode: str
    notes: list[str] = Field(default_factory=list)
    stages: list[StageTrace] = Field(default_factory=list)

    @classmethod
    def from_trace(cls, trace: Trace) -> TraceInfo:
        return cls.model_validate(trace.to_dict())


class SearchResponse(BaseModel):
    question: str = Field(..., description="the question as searched (whitespace normalised)")
    mode: str = Field(..., description="the mode that ran (aliases resolved: fast -> hybrid)")
    requested_mode: str = Field(..., description="the mode asked for")
    k: int
    took_ms: float = Field(..., description="search and presentation, in milliseconds")
    results: list[SearchHit]
    notes: list[str] = Field(default_factory=list)
    trace: TraceInfo = Field(..., description="every stage: name, ms, candidates, top ids with ranks and scores")
    route: str = Field("lookup", description="the path taken: lookup | scoped | aggregate | out_of_scope")
    route_info: RouteInfo | None = Field(None, description="the router's choice and why (absent: not routed)")
    items: list[ListItem] | None = Field(None, description="aggregate: every matching scene or episode, each cited")
    count: int | None = Field(None, description="aggregate: the number asked for (lines, scenes or episodes)")
    exhaustive: bool | None = Field(None, description="aggregate: true when items are every match; false when nothing "
                                    "matched exactly, or the exact list was too broad for the question (the notes say "
                                    "why), and items are the ranked list instead (no count)")


class Citation(BaseModel):
    """A citation of the answer that checked out: the quote is in the cited parent."""

    source_id: int = Field(..., description="the [n] of the prompt (and of the answer's text)")
    id: str = Field(..., description="the cited parent's id")
    label: str
    title: str
    quote: str = Field(..., description="as the model wrote it (outer quote marks removed)")
    unit_ids: list[str] = Field(..., description="the lines that hold the quote")
    lines: list[str] = Field(..., description="those lines, rendered")
    context: list[str] = Field(default_factory=list, description="lines shown around them (the evidence reader: the line before and after)")
    span: list[int] | None = Field(None, description="the extractive reader: character offsets of the answer in the cited line (lines[0])")


class AnswerCandidate(BaseModel):
    """One of the extractive reader's candidate answers: a span copied from a line, with its evidence."""

    text: str
    score: float = Field(..., description="the answer score (higher is better; the answer is the best)")
    probability: float = Field(..., description="the span reader's probability, pooled over every window and parent it occurs in")
    occurrences: int = Field(..., description="spans of this answer among the windows read")
    citation: Citation = Field(..., description="the line of its best occurrence")


class GateVerdict(BaseModel):
    """The answerability gate's verdict: which gate, the question's score and the threshold."""

    gate: str
    score: float
    threshold: float


class QuestionRewrite(BaseModel):
    """A follow-up read with the conversation before it (api/conversation.py)."""

    asked: str = Field(..., description="the question as the user wrote it")
    searched: str = Field(..., description="the standalone question that was searched and answered")
    by: Literal["none", "rules", "llm"] = Field(..., description="what rewrote it ('none': it stood alone)")


class AnswerResponse(BaseModel):
    question: str
    mode: str
    llm: str
    answer: str = Field(..., description="the reply without its citation lines; the refusal when refused; '' when the LLM failed")
    refused: bool
    citations: list[Citation]
    scenes: list[SearchHit] = Field(..., description="the retrieved parents, best first; source_id is their [n] in the prompt")
    timings: dict[str, float] = Field(
        ..., description="milliseconds: retrieval, prompt, llm_first_token, llm_total, validation, total"
    )
    notes: list[str] = Field(default_factory=list)
    attempts: int = Field(0, description="LLM calls made (2 after a retry)")
    drafts: list[str] = Field(default_factory=list, description="every raw reply, citation lines included")
    gate: GateVerdict | None = None
    reader: str = Field("llm", description="'llm': an LLM's checked answer; 'extractive': a span copied from a cited line, "
                        "no LLM; 'evidence': the selected lines, no LLM; 'aggregate': the exhaustive list of matching "
                        "lines, no LLM")
    trace: TraceInfo | None = None
    route: str = Field("lookup", description="the path taken: lookup | scoped | aggregate | out_of_scope")
    route_info: RouteInfo | None = Field(None, description="the router's choice and why (absent: not routed)")
    items: list[ListItem] | None = Field(None, description="aggregate: every matching scene or episode, each with its own citations")
    count: int | None = Field(None, description="aggregate: the number asked for (lines, scenes or episodes); null for a list")
    exhaustive: bool | None = Field(None, description="aggregate: true when items are every match; false when nothing "
                                    "matched exactly, or the exact list was too broad for the question (the notes say "
                                    "why), and items are the ranked list instead (no count)")
    rewrite: QuestionRewrite | None = Field(None, description="set when a history was given: the follow-up as asked and as searched")
    candidates: list[AnswerCandidate] | None = Field(None, description="extractive reader: its best candidate answers, the answer first")
    short_answer: str | None = Field(None, description="the span the answer rests on (the extractive reader's answer, or the candidate the LLM phrased)")


def to_json(model: BaseModel, indent: int | None = 2) -> str:
    """The model as JSON text, as the CLI prints it (non-ASCII kept)."""
    return model.model_dump_json(indent=indent)


def to_data(model: BaseModel) -> dict[str, Any]:
    """The model as plain JSON-able data (what the HTTP API sends)."""
    return model.model_dump(mode="json")


class CollectionSummary(BaseModel):
    """One collection under the home, as `ragfunnel collections --json` lists it and `Client.collections()` returns."""

    name: str
    index: str = Field(..., description="the index directory")
    built: bool
    documents: int = 0
    chunks: dict[str, int] = Field(default_factory=dict, description="view -> chunks")
    settings: dict[str, Any] | None = Field(None, description="the index's store settings (views, encoder, corpus)")
    sources: list[str] | None = Field(None, description="the PATHs a folder collection was indexed from")


class PassageResponse(BaseModel):
    """The full text behind a cited id (a document, a chunk `<doc>#<view>/<n>`, or a line/unit id), where it sits in
    its document's text, and its parent document, so a client can quote and locate it."""

    id: str = Field(..., description="the id asked for")
    kind: str = Field(..., description="document | chunk | unit")
    parent_id: str = Field(..., description="the document it belongs to")
    label: str = Field(..., description="the parent's citation label (Friends: S01E04 scene 4; a file's path)")
    title: str
    text: str = Field(..., description="the full text of the document, chunk or unit")
    char_start: int = Field(..., description="[char_start, char_end) of `text` in the document's text")
    char_end: int
    unit_ids: list[str] = Field(default_factory=list, description="the units (lines, blocks) it spans")
    section: list[str] = Field(default_factory=list, description="its heading path")
    page: int | None = Field(None, description="the PDF page it starts on")
    metadata: dict[str, Scalar] = Field(default_factory=dict, description="the parent document's scalar metadata")


_DEPRECATED = {"SceneHit": "SearchHit"}  # former name -> the name now (SceneHit: every corpus's hit, not only scenes)


def __getattr__(name: str) -> Any:
    """The former names, still importable, with a DeprecationWarning."""
    new = _DEPRECATED.get(name)
    if new is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(f"ragfunnel.schema.{name} is deprecated: use {new}", DeprecationWarning, stacklevel=2)
    return globals()[new]
