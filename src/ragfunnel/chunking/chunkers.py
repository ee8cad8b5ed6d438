"""Chunkers over a document's text, sized in the embedder's own tokens (registered in `chunking/registry.py`):

- `tok{N}o{O}`  recursive splitting: at most N tokens, O tokens of overlap (unit, paragraph, line, sentence, word)
- `sent{W}`     sentence window: one chunk per sentence; its passage is the sentence with W sentences each side
- `sem{P}`      semantic: a new chunk where adjacent sentences' similarity drops below the document's P-th
                percentile of drops (cosine of the embedder's vectors, each sentence smoothed with its neighbours);
                pieces over the embedder's max length are split recursively
- `sec{N}`      structure-aware: never across a section (heading path) or a PDF page; sections over N tokens split
- `code{N}`     code-aware: functions and classes (the code loader's blocks) whole up to N tokens, small ones merged
                within their class, longer ones cut at blank lines, then lines (never inside a line)

Every chunk's text begins with a header line, `Title › Section`, unless the view ends in `.bare`; parent-child
(small-to-big) views end in `.sec` or `.doc`: the small chunks are indexed, the passage a reader gets is their
section or the whole document.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from ragfunnel.chunking.base import ChunkContext, Chunker, DocText, TextSpan
from ragfunnel.chunking.split import CODE, PROSE, Span, split_recursive, token_chunks
from ragfunnel.types import Chunk, Document

@dataclass(frozen=True)
class TextChunker:
    """The shared frame: spans from `spans()`, one chunk per span, the passage by `parent`."""

    name: str
    header: bool = True

    def spans(self, dt: DocText) -> list[Span]:
        raise NotImplementedError

    def budget(self, dt: DocText, size: int) -> int:
        """`size` less the header's tokens (the header is embedded with the chunk), never below half of it."""
        if not self.header:
            return size
        line = dt.header(())
        return max(size - len((dt.context or ChunkContext()).token_spans(line)) - 8, size // 2) if line else size

    def chunks(self, doc: Document, context: ChunkContext | None = None) -> list[Chunk]:
        if not doc.units:
            return []
        dt = (context or ChunkContext()).doc_text(doc)
        return [dt.make_chunk(self.name, n, s, e, self.header) for n, (s, e) in enumerate(self.spans(dt))]

    def passage(self, chunk: Chunk, doc: Document) -> TextSpan:
        return self.own_passage(DocText(doc), chunk)

    def own_passage(self, dt: DocText, chunk: Chunk) -> TextSpan:
        return dt.passage(chunk.char_start, chunk.char_end)


@dataclass(frozen=True)
class ParentChild:
    """Small-to-big: the chunks of `child` are indexed; the passage of a chunk is its section or its document."""

    child: Chunker
    parent: Literal["sec", "doc"]

    @property
    def name(self) -> str:
        return self.child.name

    def chunks(self, doc: Document, context: ChunkContext | None = None) -> list[Chunk]:
        return list(self.child.chunks(doc, context))

    def passage(self, chunk: Chunk, doc: Document) -> TextSpan:
        dt = DocText(doc)
        if self.parent == "doc":
            return dt.passage(0, len(dt.text))
        middle = (chunk.char_start + chunk.char_end) // 2  # a chunk across two sections: the one holding most of it
        return section_passage(dt, dt.units_of(middle, middle + 1)[0])


def section_passage(dt: DocText, unit: int) -> TextSpan:
    """The run of units around `unit` with its section path and page: its section (a page of a PDF)."""
    units = dt.doc.units
    key = (units[unit].section, units[unit].page)
    first = unit
    while first > 0 and (units[first - 1].section, units[first - 1].page) == key:
        first -= 1
    last = unit + 1
    while last < len(units) and (units[last].section, units[last].page) == key:
        last += 1
    return dt.passage(dt.unit_spans[first][0], dt.unit_spans[last - 1][1])


def section_breaks(dt: DocText, depth: int | None = None) -> list[int]:
    """Offsets where a unit starts a new section (its first `depth` headings, all when None) or a new page."""
    units = dt.doc.units
    key = [(u.section[:depth] if depth is not None else u.section, u.page) for u in units]
    return [dt.unit_spans[i][0] for i in range(1, len(units)) if key[i] != key[i - 1]]


@dataclass(frozen=True)
class TokenChunker(TextChunker):
    size: int = 256
    overlap: int = 32

    def spans(self, dt: DocText) -> list[Span]:
        budget = self.budget(dt, self.size)
        return token_chunks(dt, budget, min(self.overlap, budget // 2), PROSE)


@dataclass(frozen=True)
class SectionChunker(TextChunker):
    size: int = 256

    def spans(self, dt: DocText) -> list[Span]:
        return token_chunks(dt, self.budget(dt, self.size), 0, PROSE, section_breaks(dt))


@dataclass(frozen=True)
class CodeChunker(TextChunker):
    size: int = 256

    def spans(self, dt: DocText) -> list[Span]:
        return token_chunks(dt, self.budget(dt, self.size), 0, CODE, section_breaks(dt, depth=1))


@dataclass(frozen=True)
class SentenceWindowChunker(TextChunker):
    window: int = 2

    def spans(self, dt: DocText) -> list[Span]:
        out: list[Span] = []
        for s, e in dt.sentences:  # a sentence over the budget (a table row, a run-on list) is cut
            out += [p for p in (dt.strip(*x) for x in split_recursive(dt, s, e, self.budget(dt, 128), PROSE[2:])) if p]
        return out

    def own_passage(self, dt: DocText, chunk: Chunk) -> TextSpan:
        sentences = dt.sentences
        starts = [s for s, _ in sentences]
        i = max(0, min(len(sentences) - 1, _floor_index(starts, chunk.char_start)))
        lo, hi = max(0, i - self.window), min(len(sentences) - 1, i + self.window)
        return dt.passage(sentences[lo][0], max(sentences[hi][1], chunk.char_end))


@dataclass(frozen=True)
class SemanticChunker(TextChunker):
    percentile: float = 95.0

    def spans(self, dt: DocText) -> list[Span]:
        budget = self.budget(dt, (dt.context or ChunkContext()).max_length)
        sentences = dt.sentences
        if len(sentences) < 3:
            return token_chunks(dt, budget, 0, PROSE)
        vectors = (dt.context or ChunkContext()).embed([dt.text[s:e] for s, e in sentences])
        padded = np.vstack([vectors[:1] * 0, vectors, vectors[:1] * 0])
        smooth = padded[:-2] + padded[1:-1] + padded[2:]  # each sentence with its neighbours
        smooth /= np.clip(np.linalg.norm(smooth, axis=1, keepdims=True), 1e-12, None)
        drops = 1.0 - np.sum(smooth[:-1] * smooth[1:], axis=1)
        threshold = float(np.percentile(drops, self.percentile))
        breaks = [sentences[i + 1][0] for i, d in enumerate(drops) if d > threshold]
        return token_chunks(dt, budget, 0, PROSE, hard_breaks=breaks)


def _floor_index(starts: list[int], at: int) -> int:
    from bisect import bisect_right

    return bisect_right(starts, at) - 1
