"""Chunk views over unit-structured documents: the whole document, sliding windows, single units.

A view is named by a short string that is also part of every chunk id: `doc` (the whole document), `unit` (one
unit), `w{N}s{S}` (windows of N units, stride S). Indexes and chunk ids spell the first two `scene` and `utt`, as
they always have (Friends: a scene, an utterance), so `doc` and `unit` are aliases of those: they resolve to the
same view, the same chunks and the same ids (`<doc_id>#scene/0000`), and every existing index, config and table
keeps working.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ragfunnel.errors import ConfigError
from ragfunnel.types import Chunk, Document

_WINDOW = re.compile(r"^w(\d+)s(\d+)$")
VIEW_ALIASES = {"doc": "scene", "unit": "utt"}  # generic name -> the name indexes and chunk ids use


def canonical_view(name: str) -> str:
    """The name an index and its chunk ids use for view `name` (`doc` -> `scene`, `unit` -> `utt`)."""
    return VIEW_ALIASES.get(name, name)


@dataclass(frozen=True)
class ChunkView:
    name: str
    size: int | None  # units per chunk; None = the whole document
    stride: int

    def chunks(self, doc: Document) -> Iterator[Chunk]:
        units = doc.units
        if not units:
            return
        size = len(units) if self.size is None else self.size
        starts = list(range(0, max(len(units) - size, 0) + 1, self.stride))
        if starts[-1] + size < len(units):  # the tail a stride can skip
            starts.append(len(units) - size)
        for n, start in enumerate(starts):
            end = min(start + size, len(units))
            text = "\n".join(u.render() for u in units[start:end])
            yield Chunk(Chunk.make_id(doc.doc_id, self.name, n), doc.doc_id, self.name, text, start, end)


def parse_view(name: str) -> ChunkView:
    name = canonical_view(name)
    if name == "scene":
        return ChunkView("scene", None, 1)
    if name == "utt":
        return ChunkView("utt", 1, 1)
    match = _WINDOW.match(name)
    if match:
        size, stride = int(match.group(1)), int(match.group(2))
        if size >= 1 and 1 <= stride <= size:
            return ChunkView(name, size, stride)
    raise ConfigError(
        f"unknown chunk view {name!r}: use 'doc' (= 'scene'), 'unit' (= 'utt') or 'w<N>s<S>' with 1 <= S <= N (e.g. w3s1)"
    )


def chunk_documents(docs: Iterable[Document], views: Iterable[str]) -> list[Chunk]:
    parsed = list(dict.fromkeys(parse_view(v) for v in views))  # an alias and its name are one view
    return [chunk for doc in docs for view in parsed for chunk in view.chunks(doc)]
