"""Chunk views over unit-structured documents: the whole document, sliding windows, single units.

A view is named by a short string that is also part of every chunk id: `doc` (the whole document), `unit` (one
unit), `w{N}s{S}` (windows of N units, stride S). Indexes and chunk ids spell the first two `scene` and `utt`, as
they always have (Friends: a scene, an utterance), so `doc` and `unit` are aliases of those: they resolve to the
same view, the same chunks and the same ids (`<doc_id>#scene/0000`), and every existing index, config and table
keeps working.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ragfunnel.chunking.base import ChunkContext, DocText, TextSpan, shared_section
from ragfunnel.types import Chunk, Document

VIEW_ALIASES = {"doc": "scene", "unit": "utt"}  # generic name -> the name indexes and chunk ids use


def canonical_view(name: str) -> str:
    """The name an index and its chunk ids use for view `name` (`doc` -> `scene`, `unit` -> `utt`)."""
    return VIEW_ALIASES.get(name, name)


@dataclass(frozen=True)
class ChunkView:
    name: str
    size: int | None  # units per chunk; None = the whole document
    stride: int

    def chunks(self, doc: Document, context: ChunkContext | None = None) -> Iterator[Chunk]:
        units = doc.units
        if not units:
            return
        spans = (context.doc_text(doc) if context is not None else DocText(doc)).unit_spans
        size = len(units) if self.size is None else self.size
        starts = list(range(0, max(len(units) - size, 0) + 1, self.stride))
        if starts[-1] + size < len(units):  # the tail a stride can skip
            starts.append(len(units) - size)
        for n, start in enumerate(starts):
            end = min(start + size, len(units))
            text = "\n".join(u.render() for u in units[start:end])
            yield Chunk(Chunk.make_id(doc.doc_id, self.name, n), doc.doc_id, self.name, text, start, end,
                        spans[start][0], spans[end - 1][1], shared_section(units[start:end]))

    def passage(self, chunk: Chunk, doc: Document) -> TextSpan:
        dt = DocText(doc)
        return TextSpan(dt.unit_spans[chunk.start][0], dt.unit_spans[chunk.end - 1][1], chunk.start, chunk.end,
                       dt.text[dt.unit_spans[chunk.start][0]:dt.unit_spans[chunk.end - 1][1]])

