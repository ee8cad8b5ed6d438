"""What every chunker shares: the document's text with each unit's place in it, the embedder's tokens and
sentences of that text, and the `Chunker` protocol.

A document's text is the file's text for folder collections (units carry their character offsets from the
loader; the gaps between blocks are the loader's blank lines) and the rendered lines joined by newlines otherwise
(Friends). Chunk offsets (`Chunk.char_start`/`char_end`) and passages (`TextSpan`) are spans of that text.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol

import numpy as np

from ragfunnel.embedding import DEFAULT_MODEL, EmbeddingCache, embed_with_cache, shared_encoder
from ragfunnel.types import Chunk, Document, Unit

_WORD_TOKEN = re.compile(r"\w+|[^\w\s]")
# a sentence ends at . ! ? (closing quotes/brackets kept) before whitespace and a non-lowercase start
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+(?=[^\s a-z])")
_LINE_BREAK = re.compile(r"\n\s*")


@dataclass(frozen=True)
class TextSpan:
    """A span of a document's text and the units it touches ([unit_start, unit_end))."""

    char_start: int
    char_end: int
    unit_start: int
    unit_end: int
    text: str


class DocText:
    """A document's text, each unit's [start, end) in it, and (lazily) its tokens and sentences."""

    def __init__(self, doc: Document, context: ChunkContext | None = None):
        self.doc = doc
        self.context = context
        self.text, self.unit_spans = document_text(doc)
        self._unit_starts = [s for s, _ in self.unit_spans]
        self._unit_ends = [e for _, e in self.unit_spans]

    @cached_property
    def token_starts(self) -> list[int]:
        """Start offsets of the embedder's tokens, ascending (sizes are counted in these)."""
        spans = (self.context or ChunkContext()).token_spans(self.text)
        return [s for s, _ in spans]

    def tokens(self, start: int, end: int) -> int:
        """How many of the embedder's tokens begin in [start, end)."""
        return bisect_left(self.token_starts, end) - bisect_left(self.token_starts, start)

    @cached_property
    def sentences(self) -> list[tuple[int, int]]:
        """Sentence spans: every unit split at line breaks and sentence ends, stripped, in order."""
        out = []
        for start, end in self.unit_spans:
            cuts = [start]
            for pattern in (_LINE_BREAK, _SENTENCE_END):
                cuts += [start + m.end() for m in pattern.finditer(self.text, start, end)]
            cuts = sorted(set(cuts)) + [end]
            for a, b in zip(cuts, cuts[1:]):
                span = self.strip(a, b)
                if span:
                    out.append(span)
        return out

    def strip(self, start: int, end: int) -> tuple[int, int] | None:
        """[start, end) without surrounding whitespace; None when nothing is left."""
        piece = self.text[start:end]
        lead = len(piece) - len(piece.lstrip())
        trail = len(piece) - len(piece.rstrip())
        if lead == len(piece):
            return None
        return start + lead, end - trail

    def units_of(self, start: int, end: int) -> tuple[int, int]:
        """[first, last + 1) of the units that overlap [start, end) (at least one unit)."""
        first = bisect_right(self._unit_ends, start)
        last = bisect_left(self._unit_starts, end)
        first = min(first, len(self.unit_spans) - 1)
        return first, max(last, first + 1)

    def section_of(self, unit_start: int, unit_end: int) -> tuple[str, ...]:
        return shared_section(self.doc.units[unit_start:unit_end])

    def header(self, section: tuple[str, ...]) -> str:
        """`Title › Section › Subsection`: the context line a chunk's text starts with (no repeated title)."""
        parts = [self.doc.title.strip()] if self.doc.title.strip() else []
        for s in section:
            if s and (not parts or s != parts[-1]):
                parts.append(s)
        return " › ".join(parts)

    def make_chunk(self, view: str, n: int, start: int, end: int, header: bool) -> Chunk:
        first, last = self.units_of(start, end)
        section = self.section_of(first, last)
        body = self.text[start:end]
        line = self.header(section) if header else ""
        text = f"{line}\n{body}" if line else body
        return Chunk(Chunk.make_id(self.doc.doc_id, view, n), self.doc.doc_id, view, text, first, last, start, end, section)

    def passage(self, start: int, end: int) -> TextSpan:
        first, last = self.units_of(start, end)
        return TextSpan(start, end, first, last, self.text[start:end])


def shared_section(units: Sequence[Unit]) -> tuple[str, ...]:
    """The section path `units` share: the common prefix of theirs."""
    if not units:
        return ()
    common = tuple(units[0].section)
    for u in units[1:]:
        n = 0
        while n < min(len(common), len(u.section)) and common[n] == u.section[n]:
            n += 1
        common = common[:n]
    return common


def document_text(doc: Document) -> tuple[str, list[tuple[int, int]]]:
    """The document's text and each unit's span in it: the loader's offsets when every unit has them (in order, the
    right length), else the rendered units joined by newlines."""
    units = doc.units
    if units and all(u.end - u.start == len(u.text) > 0 for u in units) and all(
        a.end <= b.start for a, b in zip(units, units[1:])
    ):
        parts, at = [], 0
        for u in units:
            parts.append("\n" * (u.start - at) if u.start - at <= 2 else "\n\n" + " " * (u.start - at - 2))
            parts.append(u.text)
            at = u.end
        return "".join(parts), [(u.start, u.end) for u in units]
    spans, at = [], 0
    rendered = [u.render() for u in units]
    for r in rendered:
        spans.append((at, at + len(r)))
        at += len(r) + 1
    return "\n".join(rendered), spans


@dataclass
class ChunkContext:
    """What chunkers may need beyond the document: the embedder's tokenizer (sizes in its tokens) and its vectors
    (semantic breakpoints; through the embedding cache when one is given). Built from the store's settings."""

    encoder: str = DEFAULT_MODEL
    max_length: int = 256
    cache: EmbeddingCache | None = None
    _docs: dict[str, DocText] = field(default_factory=dict, repr=False)

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        spans = getattr(shared_encoder(self.encoder, self.max_length), "token_spans", None)
        if spans is None:  # an encoder that cannot say: words and punctuation marks
            return [m.span() for m in _WORD_TOKEN.finditer(text)]
        return spans(text)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        encoder = shared_encoder(self.encoder, self.max_length)
        if self.cache is not None:
            return embed_with_cache(encoder, list(texts), self.cache)
        return encoder.encode(list(texts))

    def doc_text(self, doc: Document) -> DocText:
        """The DocText of `doc`, kept while chunkers cut the same document (one tokenization for every view)."""
        found = self._docs.get(doc.doc_id)
        if found is None or found.doc is not doc:
            self._docs.clear()
            found = self._docs[doc.doc_id] = DocText(doc, self)
        return found


class Chunker(Protocol):
    """Cuts one document into chunks of one view; says what passage a chunk of it stands for (small-to-big)."""

    name: str  # the view name: part of every chunk id

    def chunks(self, doc: Document, context: ChunkContext | None = None) -> list[Chunk]: ...

    def passage(self, chunk: Chunk, doc: Document) -> TextSpan:
        """What a reader gets for `chunk`: its own span, or its sentence window, section or document."""
