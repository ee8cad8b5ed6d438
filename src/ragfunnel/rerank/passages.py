"""What text a reranker reads for a candidate scene: the matched window, the window with context, or the
whole scene (truncated)."""

from __future__ import annotations

from typing import Literal

from ragfunnel.chunking import passage_of
from ragfunnel.store.base import Store
from ragfunnel.types import Candidate, Document

PassageKind = Literal["window", "context", "scene"]


def matched_span(store: Store, doc: Document, cand: Candidate) -> tuple[int, int]:
    """Unit span of the passage of the best matching small chunk (window, line, or the section of a small-to-big
    view); the scene start if only scenes matched."""
    for chunk in store.chunks(list(cand.best_chunks[:4])):
        passage = passage_of(chunk, doc)  # the chunk's own units, or its section for small-to-big views
        if passage.unit_end - passage.unit_start < len(doc.units):
            return passage.unit_start, passage.unit_end
    return 0, min(3, len(doc.units))


def passage_text(
    store: Store, doc: Document, cand: Candidate, kind: PassageKind = "context", context: int = 1,
    max_chars: int = 1200,
) -> str:
    if kind == "scene":
        text = doc.render()
    else:
        start, end = matched_span(store, doc, cand)
        if kind == "context":
            start, end = max(0, start - context), min(len(doc.units), end + context)
        text = "\n".join(u.render() for u in doc.units[start:end])
    return text[:max_chars]
