"""Request and response models of the HTTP API (they are also what /docs shows).

The results themselves (`SearchResponse`, `SearchHit`, `AnswerResponse`, ...) are the one result schema of
`ragfunnel.schema`, re-exported here: the CLI's `--json` and the Python API give the same models."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ragfunnel.api.conversation import MAX_TURNS, Turn
from ragfunnel.pipeline import MAX_QUESTION_CHARS
from ragfunnel.schema import (
    AnswerResponse,
    Citation,
    GateVerdict,
    Line,
    SearchHit,
    SearchResponse,
    SourceScore,
    StageTrace,
    TraceInfo,
)
from ragfunnel.store.filters import Filter, FilterError

__all__ = [
    "AnswerResponse", "Citation", "ErrorBody", "ErrorField", "GateVerdict", "HealthResponse", "Line", "QueryBody",
    "SceneLine", "SceneResponse", "SearchHit", "SearchResponse", "SourceScore", "StageTrace", "TraceInfo",
]

MAX_K = 50
MAIN_MODES = ("fast", "accurate", "bm25", "vector", "hybrid")
EXAMPLE_QUESTION = "Who did Rachel dump at the altar?"


class QueryBody(BaseModel):
    """One question for /search and /ask."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"question": EXAMPLE_QUESTION, "mode": "fast", "k": 5}]})

    question: str = Field(
        ..., min_length=1, max_length=MAX_QUESTION_CHARS,
        description=f"the question (1 to {MAX_QUESTION_CHARS} characters; runs of whitespace count as one space)",
    )
    mode: str = Field(
        "fast",
        description="retrieval mode: fast (= hybrid), accurate (hybrid + the trained reranker), bm25, vector, hybrid, "
        "or any other mode listed by GET /health",
        examples=list(MAIN_MODES),
    )
    k: int = Field(10, ge=1, le=MAX_K, description=f"how many scenes to return (1 to {MAX_K})")
    filter: dict[str, Any] | None = Field(
        None,
        description="only documents whose metadata matches, applied inside the index (every field must match): "
        "field -> a value (equal; a glob when it has * ? [), a list (one of them) or {operator: value} with "
        "operators eq, ne, in, nin, gt, gte, lt, lte, glob. Fields: metadata keys (path, format, title, "
        "front-matter and JSONL fields, season, episode; a.b for nested ones), id, section, page. See docs/filters.md",
        examples=[{"format": "pdf", "year": {"gte": 2019}, "path": {"glob": "reviews/*"}}, {"season": [8, 9]}],
    )

    route: Literal["auto", "lookup", "aggregate"] = Field(
        "auto", description="auto: the router picks lookup, scoped, aggregate (every matching scene or episode, each "
        "cited: `items`, `count`) or out of scope; lookup / aggregate: force that path",
    )

    @property
    def where(self) -> Filter | None:
        """The filter, read (it was checked when the body was)."""
        return Filter.from_json(self.filter)

    @field_validator("question", mode="before")
    @classmethod
    def _normalise_question(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value  # the str type check reports it
        question = " ".join(value.split())
        if not question:
            raise ValueError(f'the question is empty: type a question, e.g. "{EXAMPLE_QUESTION}"')
        if len(question) > MAX_QUESTION_CHARS:
            raise ValueError(f"the question is {len(question)} characters long; the limit is {MAX_QUESTION_CHARS}")
        return question

    @field_validator("filter")
    @classmethod
    def _readable_filter(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        try:
            Filter.from_json(value)
        except FilterError as exc:
            raise ValueError(str(exc)) from None
        return value

    @field_validator("mode", mode="before")
    @classmethod
    def _strip_mode(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value


class AskBody(QueryBody):
    """One question for /ask, and which reader answers it."""

    reader: Literal["auto", "llm", "extractive", "evidence"] | None = Field(
        None, description="auto (default): the LLM when the server has one, else 'evidence'; 'extractive': a short "
        "answer copied from a cited line by the span reader (an `extractive` event, then the LLM's phrasing when the "
        "server was started to phrase its candidates, then `done`), no LLM needed; 'evidence': the selected lines as the answer (an `evidence` event, then `done`), no LLM; "
        "'llm': the LLM's checked answer (503 without one)",
    )
    stream: Literal["drafts", "validated"] = Field(
        "drafts", description="'drafts' (default): the LLM's tokens as they come (a reply the check withdraws or "
        "retries is marked by `retry` / the done event's `refused`); 'validated': no tokens until the answer passed its "
        "check, then the answer as one token event. Measured in docs/results/answers/ttft_flicker.md: with the local "
        "LLM, waiting adds 2.9 s at the median and ~22 s at p90, and drafts are withdrawn or retried in 20-28% of answers",
    )
    history: list[Turn] | None = Field(
        None, max_length=MAX_TURNS,
        description="earlier turns of the conversation, oldest first ({role: user | assistant, content}); a follow-up "
        "that refers back is rewritten into a standalone question (by the LLM for the llm reader, else by rules), "
        "shown in the result's `rewrite` and the trace's `rewrite` stage",
    )


class ErrorField(BaseModel):
    field: str
    message: str


class ErrorDetail(BaseModel):
    code: str = Field(..., description="bad_request, unauthorized, forbidden, not_found, too_large, invalid_request, "
                      "rate_limited, unavailable, busy or internal")
    message: str = Field(..., description="what went wrong, in one readable sentence (no filesystem paths)")
    fields: list[ErrorField] | None = Field(None, description="one entry per invalid field (422 only)")


class ErrorBody(BaseModel):
    """Every error of the API: `{"error": {"code", "message"}}`."""

    error: ErrorDetail


class SceneLine(BaseModel):
    id: str
    speakers: list[str]
    text: str
    direction: bool = Field(..., description="a stage direction, not dialogue")
    rendered: str = Field(..., description="the line as search shows it ('Speaker: words', directions in brackets)")
    spans: list[tuple[int, int]] = Field(default_factory=list, description="matches of the terms of `q` in `rendered`")


class SceneResponse(BaseModel):
    id: str
    label: str
    title: str
    metadata: dict[str, Any]
    lines: list[SceneLine]


class HealthResponse(BaseModel):
    status: str = Field(..., description="ok, or degraded when the index or the LLM could not be loaded")
    version: str
    index_loaded: bool
    index_error: str | None
    documents: int
    chunks: dict[str, int]
    modes: list[str]
    default_mode: str
    llm: str | None
    llm_error: str | None
    auth_required: bool
    generation: str | None = Field(None, description="the index generation served (set when it was built)")
    built_at: str | None = Field(None, description="when that generation was built")
    reloads: int = Field(0, description="new index generations this process has switched to since it started")
