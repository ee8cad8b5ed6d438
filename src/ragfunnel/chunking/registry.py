"""The chunker registry: a view name -> the chunker that makes its chunks (patterns, not an if-chain).

A view is `BASE[.MODIFIER…]`. Bases are registered below in `CHUNKERS` (a `ragfunnel.registry.Registry`): each
entry's factory makes the chunker of the bases its pattern matches, or None; modifiers: `.bare` (no
`Title › Section` header line in the chunk text; text chunkers only), `.sec` / `.doc` (parent-child: the passage
of a chunk is its section / its document). The view name is part of every chunk id (`<doc>#<view>/<n>`) and of the
index's folders, so it is kept exactly as written (aliases resolved: `doc` -> `scene`, `unit` -> `utt`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import lru_cache

from ragfunnel.chunking.base import ChunkContext, Chunker, TextSpan
from ragfunnel.chunking.chunkers import (
    CodeChunker, ParentChild, SectionChunker, SemanticChunker, SentenceWindowChunker, TokenChunker,
)
from ragfunnel.chunking.views import ChunkView, canonical_view
from ragfunnel.errors import ConfigError
from ragfunnel.registry import Registry
from ragfunnel.types import Chunk, Document

Make = Callable[[str, re.Match[str], bool], Chunker | None]  # (view name, match, header) -> chunker or None
# an entry's factory: (view name, its base, header) -> the chunker, or None when the base is not this entry's
ChunkerFactory = Callable[[str, str, bool], Chunker | None]

MODIFIERS_USAGE = "optionally followed by .sec or .doc (small-to-big) and .bare (no title line)"


def _matching(pattern: str, make: Make, text: bool = True) -> ChunkerFactory:
    """A factory for the bases `pattern` matches; `text`: sized in tokens with a header line (takes `.bare`)."""
    compiled = re.compile(f"^(?:{pattern})$")

    def factory(name: str, base: str, header: bool) -> Chunker | None:
        match = compiled.match(base)
        return make(name, match, header) if match and (text or header) else None

    return factory


def resolve_view(view: str) -> Chunker:
    """The chunker of view `view`: the first entry of `CHUNKERS` whose factory makes one for its base, wrapped for
    `.sec` / `.doc`; a ConfigError naming the choices when none does."""
    name = canonical_view(view)
    base, *modifiers = name.split(".")
    parents = [m for m in modifiers if m in ("sec", "doc")]
    unknown = [m for m in modifiers if m not in ("sec", "doc", "bare")]
    if not unknown and len(parents) <= 1 and len(set(modifiers)) == len(modifiers):
        for entry in CHUNKERS.entries():
            chunker = entry.factory(name, base, "bare" not in modifiers)
            if chunker is not None:
                return ParentChild(chunker, parents[0]) if parents else chunker
    raise ConfigError(f"unknown chunk view {view!r}: use {'; '.join(e.usage for e in CHUNKERS.entries())}; "
                      + MODIFIERS_USAGE)


def _window(name: str, m: re.Match[str], header: bool) -> Chunker | None:
    size, stride = int(m.group(1)), int(m.group(2))
    return ChunkView(name, size, stride) if size >= 1 and 1 <= stride <= size else None


def _tokens(name: str, m: re.Match[str], header: bool) -> Chunker | None:
    size, overlap = int(m.group(1)), int(m.group(2))
    return TokenChunker(name, header, size=size, overlap=overlap) if 16 <= size <= 8192 and 0 <= overlap < size else None


def _sized(cls: type) -> Make:
    def make(name: str, m: re.Match[str], header: bool) -> Chunker | None:
        size = int(m.group(1))
        return cls(name, header, size=size) if 16 <= size <= 8192 else None

    return make


def _sentences(name: str, m: re.Match[str], header: bool) -> Chunker | None:
    return SentenceWindowChunker(name, header, window=int(m.group(1)))


def _semantic(name: str, m: re.Match[str], header: bool) -> Chunker | None:
    p = int(m.group(1))
    return SemanticChunker(name, header, percentile=float(p)) if 1 <= p <= 99 else None


CHUNKERS = Registry("chunker")
CHUNKERS.register("scene", _matching("scene", lambda name, m, h: ChunkView(name, None, 1), text=False),
                  usage="'doc' (= 'scene', the whole document)", description="the whole document as one chunk")
CHUNKERS.register("utt", _matching("utt", lambda name, m, h: ChunkView(name, 1, 1), text=False),
                  usage="'unit' (= 'utt', one unit)", description="one unit (a line, a paragraph) per chunk")
CHUNKERS.register("window", _matching(r"w(\d+)s(\d+)", _window, text=False),
                  usage="'w<N>s<S>' (N units, stride S, 1 <= S <= N: w3s1)",
                  description="windows of N units moved S units at a time")
CHUNKERS.register("tokens", _matching(r"tok(\d+)o(\d+)", _tokens),
                  usage="'tok<N>o<O>' (recursive, N tokens, O overlap: tok256o32)",
                  description="recursive splits of at most N tokens, O tokens of overlap")
CHUNKERS.register("sentences", _matching(r"sent(\d)", _sentences),
                  usage="'sent<W>' (one sentence, passage W sentences each side: sent2)",
                  description="one sentence per chunk; its passage is W sentences each side")
CHUNKERS.register("semantic", _matching(r"sem(\d+)", _semantic),
                  usage="'sem<P>' (semantic breaks above the P-th percentile: sem95)",
                  description="breaks where consecutive sentences' embeddings differ above the P-th percentile")
CHUNKERS.register("sections", _matching(r"sec(\d+)", _sized(SectionChunker)),
                  usage="'sec<N>' (sections and pages, N tokens: sec256)",
                  description="sections and pages of the loaded file, cut to N tokens")
CHUNKERS.register("code", _matching(r"code(\d+)", _sized(CodeChunker)),
                  usage="'code<N>' (functions and classes, N tokens: code256)",
                  description="functions and classes of source code, cut to N tokens")


@lru_cache(maxsize=256)
def parse_view(name: str) -> Chunker:
    """The chunker of view `name` (a `ConfigError` naming the choices when there is none)."""
    return resolve_view(name)


def chunk_documents(docs: Iterable[Document], views: Iterable[str], context: ChunkContext | None = None) -> list[Chunk]:
    """Every chunk of every view of `docs` (document by document; an alias beside its name is one view)."""
    chunkers = list(dict.fromkeys(parse_view(v) for v in views))
    context = context or ChunkContext()
    return [chunk for doc in docs for chunker in chunkers for chunk in chunker.chunks(doc, context)]


def passage_of(chunk: Chunk, doc: Document) -> TextSpan:
    """What a reader gets for `chunk` of `doc`: its own span, or (by its view) its sentence window, section or doc."""
    return parse_view(chunk.view).passage(chunk, doc)

