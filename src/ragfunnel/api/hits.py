"""A search hit as a framework document: the text a reader gets and flat metadata (ids, scores, ranks, place)."""

from __future__ import annotations

from typing import Any

from ragfunnel.schema import SearchHit


def hit_text(hit: SearchHit) -> str:
    """The hit's passage (its best-matching chunk as its view expands it), else its best lines."""
    if hit.passage is not None:
        return hit.passage.text
    return "\n".join(line.text for line in hit.lines)


def hit_metadata(hit: SearchHit, collection: str) -> dict[str, Any]:
    """The document's own scalar metadata, then ragfunnel's: id, label, title, rank and score after fusion (and
    reranking), `sources` (retriever -> its rank and score there), the line ids, and the passage's chunk id,
    character offsets, section and page."""
    out: dict[str, Any] = dict(hit.metadata)
    out.update(
        id=hit.id, label=hit.label, title=hit.title, rank=hit.rank, score=hit.score, collection=collection,
        sources={name: {"rank": s.rank, "score": s.score} for name, s in hit.sources.items()},
        line_ids=[line.id for line in hit.lines],
    )
    if hit.passage is not None:
        out.update(chunk_id=hit.passage.chunk_id, char_start=hit.passage.char_start, char_end=hit.passage.char_end,
                   section=list(hit.passage.section), page=hit.passage.page)
    return out
