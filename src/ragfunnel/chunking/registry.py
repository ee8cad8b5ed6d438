"""The chunker registry: a view name -> the chunker that makes its chunks (patterns, not an if-chain).

A view is `BASE[.MODIFIER…]`. Bases are registered below with a pattern and a factory; modifiers: `.bare` (no
`Title › Section` header line in the chunk text; text chunkers only), `.sec` / `.doc` (parent-child: the passage
of a chunk is its section / its document). The view name is part of every chunk id (`<doc>#<view>/<n>`) and of the
index's folders, so it is kept exactly as written (aliases resolved: `doc` -> `scene`, `unit` -> `utt`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache

from ragfunnel.chunking.base import ChunkContext, Chunker, Passage
from ragfunnel.chunking.chunkers import (
    CodeChunker, ParentChild, SectionChunker, SemanticChunker, SentenceWindowChunker, TokenChunker,
)
from ragfunnel.chunking.views import ChunkView, canonical_view
from ragfunnel.errors import ConfigError
from ragfunnel.types import Chunk, Document

Factory = Callable[[str, re.Match[str], bool], Chunker | None]  # (view name, match, header) -> chunker or None


@dataclass(frozen=True)
class ChunkerEntry:
    pattern: re.Pattern[str]
    factory: Factory
    usage: str
    text: bool  # sized in tokens with a header line (takes `.bare`)


class ChunkerRegistry:
    def __init__(self) -> None:
        self._entries: list[ChunkerEntry] = []

    def register(self, pattern: str, factory: Factory, usage: str, text: bool = True) -> None:
        self._entries.append(ChunkerEntry(re.compile(f"^(?:{pattern})$"), factory, usage, text))

    def usages(self) -> list[str]:
        return [e.usage for e in self._entries]

    def resolve(self, view: str) -> Chunker:
        name = canonical_view(view)
        base, *modifiers = name.split(".")
        parents = [m for m in modifiers if m in ("sec", "doc")]
        unknown = [m for m in modifiers if m not in ("sec", "doc", "bare")]
        if not unknown and len(parents) <= 1 and len(set(modifiers)) == len(modifiers):
            for entry in self._entries:
                match = entry.pattern.match(base)
                if match and (entry.text or "bare" not in modifiers):
                    chunker = entry.factory(name, match, "bare" not in modifiers)
                    if chunker is not None:
                        return ParentChild(chunker, parents[0]) if parents else chunker
        raise ConfigError(
            f"unknown chunk view {view!r}: use {'; '.join(self.usages())}; "
            "optionally followed by .sec or .doc (small-to-big) and .bare (no title line)"
        )


def _window(name: str, m: re.Match[str], header: bool) -> Chunker | None:
    size, stride = int(m.group(1)), int(m.group(2))
    return ChunkView(name, size, stride) if size >= 1 and 1 <= stride <= size else None


def _tokens(name: str, m: re.Match[str], header: bool) -> Chunker | None:
    size, overlap = int(m.group(1)), int(m.group(2))
    return TokenChunker(name, header, size=size, overlap=overlap) if 16 <= size <= 8192 and 0 <= overlap < size else None


def _sized(cls: type) -> Factory:
    def make(name: str, m: re.Match[str], header: bool) -> Chunker | None:
        size = int(m.group(1))
        return cls(name, header, size=size) if 16 <= size <= 8192 else None

    return make


def _sentences(name: str, m: re.Match[str], header: bool) -> Chunker | None:
    return SentenceWindowChunker(name, header, window=int(m.group(1)))


def _semantic(name: str, m: re.Match[str], header: bool) -> Chunker | None:
    p = int(m.group(1))
    return SemanticChunker(name, header, percentile=float(p)) if 1 <= p <= 99 else None


CHUNKERS = ChunkerRegistry()
CHUNKERS.register("scene", lambda name, m, h: ChunkView(name, None, 1), "'doc' (= 'scene', the whole document)", text=False)
CHUNKERS.register("utt", lambda name, m, h: ChunkView(name, 1, 1), "'unit' (= 'utt', one unit)", text=False)
CHUNKERS.register(r"w(\d+)s(\d+)", _window, "'w<N>s<S>' (N units, stride S, 1 <= S <= N: w3s1)", text=False)
CHUNKERS.register(r"tok(\d+)o(\d+)", _tokens, "'tok<N>o<O>' (recursive, N tokens, O overlap: tok256o32)")
CHUNKERS.register(r"sent(\d)", _sentences, "'sent<W>' (one sentence, passage W sentences each side: sent2)")
CHUNKERS.register(r"sem(\d+)", _semantic, "'sem<P>' (semantic breaks above the P-th percentile: sem95)")
CHUNKERS.register(r"sec(\d+)", _sized(SectionChunker), "'sec<N>' (sections and pages, N tokens: sec256)")
CHUNKERS.register(r"code(\d+)", _sized(CodeChunker), "'code<N>' (functions and classes, N tokens: code256)")


@lru_cache(maxsize=256)
def parse_view(name: str) -> Chunker:
    """The chunker of view `name` (a `ConfigError` naming the choices when there is none)."""
    return CHUNKERS.resolve(name)


def chunk_documents(docs: Iterable[Document], views: Iterable[str], context: ChunkContext | None = None) -> list[Chunk]:
    """Every chunk of every view of `docs` (document by document; an alias beside its name is one view)."""
    chunkers = list(dict.fromkeys(parse_view(v) for v in views))
    context = context or ChunkContext()
    return [chunk for doc in docs for chunker in chunkers for chunk in chunker.chunks(doc, context)]


def passage_of(chunk: Chunk, doc: Document) -> Passage:
    """What a reader gets for `chunk` of `doc`: its own span, or (by its view) its sentence window, section or doc."""
    return parse_view(chunk.view).passage(chunk, doc)

