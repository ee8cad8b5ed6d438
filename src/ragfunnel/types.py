"""The data that flows through the funnel. Frozen dataclasses: stages never mutate what they receive."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Unit:
    """The smallest piece of a document: one utterance of a scene, one paragraph of a text."""

    unit_id: str
    text: str
    speakers: tuple[str, ...] = ()
    is_direction: bool = False  # stage directions / non-dialogue notes
    section: tuple[str, ...] = ()  # the headings above it, outermost first (general documents)
    page: int | None = None  # 1-based page of a PDF
    start: int = 0  # character offsets of `text` in the source file's text (general documents)
    end: int = 0

    def to_row(self) -> list[Any]:
        """A JSON-able row; the fields of general documents only when set, so Friends rows stay as they were."""
        row: list[Any] = [self.unit_id, self.text, list(self.speakers), self.is_direction]
        if self.section or self.page is not None or self.end:
            row += [list(self.section), self.page, self.start, self.end]
        return row

    @classmethod
    def from_row(cls, row: list[Any]) -> Unit:
        if len(row) > 4:
            return cls(row[0], row[1], tuple(row[2]), bool(row[3]), tuple(row[4]), row[5], int(row[6]), int(row[7]))
        return cls(row[0], row[1], tuple(row[2]), bool(row[3]))

    def render(self) -> str:
        """Text as chunks and prompts see it: speaker names kept, stage directions bracketed."""
        if self.is_direction:
            body = self.text.strip()
            return body if body.startswith(("(", "[")) else f"({body})"
        if self.speakers:
            return f"{' & '.join(self.speakers)}: {self.text}"
        return self.text


@dataclass(frozen=True, slots=True)
class Document:
    """A retrievable parent: a scene of Friends, a file of a general collection."""

    doc_id: str
    title: str
    units: tuple[Unit, ...]
    metadata: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @property
    def label(self) -> str:
        return str(self.metadata.get("label") or self.doc_id)

    def render(self) -> str:
        return "\n".join(u.render() for u in self.units)


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of a document that is indexed. `chunk_id` encodes the parent: `<doc_id>#<view>/<n>`.

    `char_start`/`char_end` locate it in the document's text (a file's text for folder collections, the rendered
    lines otherwise: `chunking.document_text`), so an answer can cite and highlight the exact passage; `section` is
    the heading path its units share. The text may begin with a header line (title › section) that is not part
    of that span: what is embedded and matched, not what is cited."""

    chunk_id: str
    doc_id: str
    view: str
    text: str
    start: int  # index of the first unit (inclusive)
    end: int  # index past the last unit (exclusive)
    char_start: int = 0
    char_end: int = 0
    section: tuple[str, ...] = ()

    @staticmethod
    def make_id(doc_id: str, view: str, n: int) -> str:
        return f"{doc_id}#{view}/{n:04d}"

    @staticmethod
    def parent_of(chunk_id: str) -> str:
        return chunk_id.rsplit("#", 1)[0]  # the last '#': a document id may hold one (a JSONL record: `a.jsonl#7`)


@dataclass(frozen=True, slots=True)
class Hit:
    """One retriever's result for one chunk."""

    chunk_id: str
    doc_id: str
    score: float
    rank: int  # 1-based within the retriever's list
    retriever: str


@dataclass(frozen=True, slots=True)
class Candidate:
    """A parent document after collapse/fusion, with the evidence that put it there."""

    doc_id: str
    score: float
    rank: int
    sources: dict[str, tuple[int, float]] = field(default_factory=dict, hash=False, compare=False)
    # retriever name -> (rank, score) of the parent in that retriever's collapsed list
    best_chunks: tuple[str, ...] = ()  # chunk ids that matched, best first


@dataclass(slots=True)
class StageRecord:
    name: str
    seconds: float
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Trace:
    """One record of every stage a query went through: inputs, outputs, ranks, scores, timings, fallbacks."""

    question: str
    mode: str
    stages: list[StageRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def stage(self, name: str) -> _StageTimer:
        return _StageTimer(self, name)

    @property
    def total_seconds(self) -> float:
        return sum(s.seconds for s in self.stages)

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "mode": self.mode,
            "notes": list(self.notes),
            "stages": [{"name": s.name, "ms": round(s.seconds * 1000, 3), **s.detail} for s in self.stages],
        }


class _StageTimer:
    def __init__(self, trace: Trace, name: str) -> None:
        self.trace, self.record = trace, StageRecord(name, 0.0)

    def __enter__(self) -> StageRecord:
        self._t0 = time.perf_counter()
        return self.record

    def __exit__(self, *exc: object) -> None:
        self.record.seconds = time.perf_counter() - self._t0
        self.trace.stages.append(self.record)
