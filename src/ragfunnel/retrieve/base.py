"""The Retriever protocol and the collapse of chunk hits to their parents."""

from __future__ import annotations

from typing import Protocol

from ragfunnel.store.filters import Filter
from ragfunnel.types import Candidate, Hit


class Retriever(Protocol):
    name: str
    kind: str  # "sparse" | "dense": query-aware fusion weighs the kinds against each other

    def retrieve(self, query: str, limit: int | None = None, where: Filter | None = None) -> list[Hit]:
        """Chunk hits, best first; with `where`, only chunks the filter admits (applied inside the index)."""

    def warm_up(self) -> None:
        """Load now what the first query would load (models, index pages)."""


def collapse_to_parents(hits: list[Hit]) -> list[Candidate]:
    """Window/utterance hits -> one entry per parent document: max score, at its first (best) occurrence."""
    in_order = all(a.rank <= b.rank for a, b in zip(hits, hits[1:]))  # as retrievers return them
    order: dict[str, list[Hit]] = {}
    for hit in hits if in_order else sorted(hits, key=lambda h: h.rank):
        group = order.get(hit.doc_id)
        if group is None:
            order[hit.doc_id] = [hit]
        else:
            group.append(hit)
    return [
        Candidate(doc_id=doc_id, score=group[0].score, rank=rank, sources={group[0].retriever: (rank, group[0].score)},
                  best_chunks=tuple([h.chunk_id for h in group]))
        for rank, (doc_id, group) in enumerate(order.items(), 1)
    ]
