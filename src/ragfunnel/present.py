"""Turn ranked parents into what a person reads: label, title, and the best-matching lines with the query
terms marked. Shared by the CLI and the HTTP API."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragfunnel.store.base import Store
from ragfunnel.types import Candidate, Document

_WORD = re.compile(r"[A-Za-z0-9]+")


@dataclass
class MatchedLine:
    unit_id: str
    text: str  # rendered line (speaker: words)
    spans: list[tuple[int, int]]  # character spans of query-term matches in `text`


@dataclass
class SceneView:
    doc_id: str
    label: str
    title: str
    rank: int
    score: float
    sources: dict[str, tuple[int, float]]
    lines: list[MatchedLine]

    def to_dict(self) -> dict:
        return {
            "id": self.doc_id,
            "label": self.label,
            "title": self.title,
            "rank": self.rank,
            "score": self.score,
            "sources": {k: {"rank": r, "score": s} for k, (r, s) in self.sources.items()},
            "lines": [{"id": ln.unit_id, "text": ln.text, "spans": ln.spans} for ln in self.lines],
        }


def match_spans(store: Store, text: str, terms: set[str]) -> list[tuple[int, int]]:
    spans = []
    for m in _WORD.finditer(text):
        analysed = store.analyze(m.group())
        if analysed and analysed[0] in terms:
            spans.append((m.start(), m.end()))
    return spans


def best_lines(store: Store, doc: Document, cand: Candidate, question: str, n: int = 3) -> list[MatchedLine]:
    """Lines of the best matching chunk (windows/utterances), else the lines sharing most query terms."""
    terms = set(store.analyze(question))
    spans_of = [match_spans(store, u.render(), terms) for u in doc.units]
    small = [c for c in store.chunks(list(cand.best_chunks[:3])) if c.end - c.start < len(doc.units)]
    picked = list(range(small[0].start, small[0].end)) if small else []
    if len(picked) < n:
        by_overlap = sorted(range(len(doc.units)), key=lambda i: (-len(spans_of[i]), i))
        picked += [i for i in by_overlap if spans_of[i] and i not in picked][: n - len(picked)]
    return [MatchedLine(doc.units[i].unit_id, doc.units[i].render(), spans_of[i]) for i in sorted(picked)]


def scene_views(store: Store, candidates: list[Candidate], question: str, lines: int = 3) -> list[SceneView]:
    out = []
    for c in candidates:
        doc = store.document(c.doc_id)
        if doc is None:
            continue
        out.append(
            SceneView(c.doc_id, doc.label, doc.title, c.rank, c.score, c.sources, best_lines(store, doc, c, question, lines))
        )
    return out
