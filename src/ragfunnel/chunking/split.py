"""Recursive splitting sized in the embedder's tokens: cut a span at the strongest separator that makes its pieces
fit (unit boundaries, blank lines, line breaks, sentence ends, spaces; at last, between tokens), then merge the
pieces back greedily up to the budget, each chunk starting with the tail of the one before (the overlap).

Spans never cross a hard break (a section change for the structure-aware chunker); all spans are character
offsets in `DocText.text`, stripped of surrounding whitespace.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from ragfunnel.chunking.base import DocText

Span = tuple[int, int]
Cuts = Callable[[DocText, int, int], list[int]]  # offsets strictly inside (start, end) where a piece may begin


def _pattern_cuts(pattern: re.Pattern[str]) -> Cuts:
    def cuts(dt: DocText, start: int, end: int) -> list[int]:
        return [m.end() for m in pattern.finditer(dt.text, start, end) if start < m.end() < end]

    return cuts


def unit_cuts(dt: DocText, start: int, end: int) -> list[int]:
    return [s for s, _ in dt.unit_spans if start < s < end]


def sentence_cuts(dt: DocText, start: int, end: int) -> list[int]:
    return [s for s, _ in dt.sentences if start < s < end]


BLANK_LINES = _pattern_cuts(re.compile(r"\n[ \t]*\n\s*"))
LINES = _pattern_cuts(re.compile(r"\n\s*"))
SPACES = _pattern_cuts(re.compile(r"\s+"))
PROSE: tuple[Cuts, ...] = (unit_cuts, BLANK_LINES, LINES, sentence_cuts, SPACES)
CODE: tuple[Cuts, ...] = (unit_cuts, BLANK_LINES, LINES, SPACES)


def split_recursive(dt: DocText, start: int, end: int, budget: int, levels: Sequence[Cuts]) -> list[Span]:
    """Pieces of [start, end), each of at most `budget` tokens, cut at the strongest separator that is needed."""
    if dt.tokens(start, end) <= budget:
        return [(start, end)]
    for depth, cuts_of in enumerate(levels):
        cuts = cuts_of(dt, start, end)
        if cuts:
            bounds = [start, *cuts, end]
            out: list[Span] = []
            for a, b in zip(bounds, bounds[1:]):
                out += split_recursive(dt, a, b, budget, levels[depth + 1 :])
            return out
    # one run without any separator (a long word list, a minified line): cut between tokens
    starts = [s for s in dt.token_starts if start <= s < end]
    bounds = [start, *starts[budget::budget], end]
    return list(zip(bounds, bounds[1:]))


def merge(dt: DocText, pieces: Sequence[Span], budget: int, overlap: int) -> list[Span]:
    """Consecutive pieces joined while the span stays within `budget` tokens; each new chunk begins with the last
    pieces of the one before that fit in `overlap` tokens (never all of them: chunks always move on), or with the
    last words of its last piece when no whole piece fits."""
    chunks: list[Span] = []
    current: list[Span] = []
    for piece in pieces:
        if current and dt.tokens(current[0][0], piece[1]) > budget:
            chunks.append((current[0][0], current[-1][1]))
            carried: list[Span] = []
            for prev in reversed(current[1:]):
                if dt.tokens(prev[0], current[-1][1]) > overlap:
                    break
                carried.insert(0, prev)
            if not carried and overlap > 0:  # no whole piece is that short: the last words of the last one
                tail = _tail(dt, current[-1], overlap)
                if tail is not None:
                    carried = [tail]
            while carried and dt.tokens(carried[0][0], piece[1]) > budget:
                carried.pop(0)
            current = carried
        current.append(piece)
    if current:
        chunks.append((current[0][0], current[-1][1]))
    return chunks


def _tail(dt: DocText, piece: Span, overlap: int) -> Span | None:
    """The longest end of `piece` that starts after a space and holds at most `overlap` tokens."""
    for cut in SPACES(dt, piece[0], piece[1]):
        if dt.tokens(cut, piece[1]) <= overlap:
            return cut, piece[1]
    return None


def token_chunks(
    dt: DocText, budget: int, overlap: int = 0, levels: Sequence[Cuts] = PROSE, hard_breaks: Sequence[int] = ()
) -> list[Span]:
    """Chunks of at most `budget` tokens over the whole document, never across a hard break; stripped spans."""
    bounds = [0, *sorted(b for b in set(hard_breaks) if 0 < b < len(dt.text)), len(dt.text)]
    out: list[Span] = []
    for a, b in zip(bounds, bounds[1:]):
        pieces = [p for p in (dt.strip(*s) for s in split_recursive(dt, a, b, budget, levels)) if p]
        out += [s for s in (dt.strip(*c) for c in merge(dt, pieces, budget, overlap)) if s]
    return out
