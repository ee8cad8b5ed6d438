"""Turn ranked parents into what a person reads, in the one result schema (`ragfunnel.schema`): label, title, the
best-matching lines with the query terms marked, the rank and score in every retriever.

`search(pipeline, question, mode, k, where=filter)` is the one path from a question to a `SearchResponse`: the CLI's
`search --json` and the HTTP API's `POST /search` both call it, so they give the same JSON. `search_hit` is what
the answerer reports for each retrieved parent.
"""

from __future__ import annotations

import re
import time
import weakref

from ragfunnel.chunking import passage_of
from ragfunnel.errors import ConfigError
from ragfunnel.pipeline import Pipeline
from ragfunnel.query.aggregate import list_items
from ragfunnel.schema import Line, MatchedPassage, RouteInfo, SearchHit, SearchResponse, SourceScore, TraceInfo
from ragfunnel.store.base import Store
from ragfunnel.store.filters import Filter
from ragfunnel.types import Candidate, Document

_WORD = re.compile(r"[A-Za-z0-9]+")
DEFAULT_LINES = 3


# word -> its analysed form, per store: a hit's lines repeat the same few thousand words, and analysing each word
# anew was a third of a search's time. Weak keys, so a replaced index generation's store can go.
_ANALYSED: weakref.WeakKeyDictionary[Store, dict[str, str | None]] = weakref.WeakKeyDictionary()
_ANALYSED_MAX = 200_000


def _analysed_words(store: Store) -> dict[str, str | None]:
    try:
        words = _ANALYSED.get(store)
        if words is None:
            words = _ANALYSED[store] = {}
    except TypeError:  # a store that cannot be weakly referenced: no cache
        return {}
    if len(words) > _ANALYSED_MAX:
        words.clear()
    return words


def match_spans(store: Store, text: str, terms: set[str]) -> list[tuple[int, int]]:
    """[start, end) spans of the words of `text` whose analysed form is one of `terms`."""
    if not terms:
        return []
    words = _analysed_words(store)
    spans = []
    for m in _WORD.finditer(text):
        word = m.group()
        if word in words:
            analysed = words[word]
        else:
            forms = store.analyze(word)
            analysed = words[word] = forms[0] if forms else None
        if analysed is not None and analysed in terms:
            spans.append((m.start(), m.end()))
    return spans


def best_lines(store: Store, doc: Document, cand: Candidate, question: str, n: int = DEFAULT_LINES) -> list[Line]:
    """Lines of the best matching chunk (windows/utterances), else the lines sharing most query terms."""
    terms = set(store.analyze(question))
    rendered = [u.render() for u in doc.units]
    # a chunk of another version of the document (changed since the search) does not pick its lines
    small = [c for c in store.chunks(list(cand.best_chunks[:3]))
             if c.end - c.start < len(doc.units) and c.end <= len(doc.units)]
    picked = list(range(small[0].start, small[0].end)) if small else []
    spans_of: dict[int, list[tuple[int, int]]] = {}
    if len(picked) < n:  # only then does every line's overlap matter
        spans_of = {i: match_spans(store, text, terms) for i, text in enumerate(rendered)}
        by_overlap = sorted(range(len(doc.units)), key=lambda i: (-len(spans_of[i]), i))
        picked += [i for i in by_overlap if spans_of[i] and i not in picked][: n - len(picked)]
    return [Line(id=doc.units[i].unit_id, text=rendered[i],
                 spans=spans_of[i] if i in spans_of else match_spans(store, rendered[i], terms))
            for i in sorted(picked)]


def matched_passage(store: Store, doc: Document, cand: Candidate) -> MatchedPassage | None:
    """The passage of the hit's best chunk: what its view hands a reader (small-to-big views: the section or the
    document around the small chunk that matched), with its place in the document's text."""
    for chunk in store.chunks(list(cand.best_chunks[:1])):
        try:
            p = passage_of(chunk, doc)
        except ConfigError:  # a view this version cannot cut (an index from a newer one): no passage
            return None
        units = doc.units[p.unit_start:p.unit_end]
        return MatchedPassage(chunk_id=chunk.chunk_id, char_start=p.char_start, char_end=p.char_end,
                              section=list(chunk.section), page=units[0].page if units else None,
                              unit_ids=[u.unit_id for u in units], text=p.text)
    return None


def scalar_metadata(doc: Document) -> dict[str, str | int | float | bool | None]:
    """The document's metadata that fits in JSON as is (its label is a field of its own)."""
    return {k: v for k, v in doc.metadata.items()
            if k != "label" and (v is None or isinstance(v, (str, int, float, bool)))}


def search_hit(
    store: Store, doc: Document, cand: Candidate, question: str, lines: int = DEFAULT_LINES, source_id: int | None = None
) -> SearchHit:
    return SearchHit(
        id=doc.doc_id, label=doc.label, title=doc.title, rank=cand.rank, score=cand.score,
        sources={name: SourceScore(rank=r, score=s) for name, (r, s) in cand.sources.items()},
        lines=best_lines(store, doc, cand, question, lines) if lines > 0 else [],
        metadata=scalar_metadata(doc), source_id=source_id,
        passage=matched_passage(store, doc, cand) if lines > 0 else None,
    )


def search_hits(store: Store, candidates: list[Candidate], question: str, lines: int = DEFAULT_LINES) -> list[SearchHit]:
    """One hit per candidate whose document the store holds, in the candidates' order."""
    out = []
    for c in candidates:
        with store.snapshot():  # the document and the chunks its lines come from, from one state of a syncing index
            doc = store.document(c.doc_id)
            if doc is not None:
                out.append(search_hit(store, doc, c, question, lines))
    return out


def search(pipeline: Pipeline, question: str, mode: str | None = None, k: int = 10, lines: int = DEFAULT_LINES,
           where: Filter | None = None, route: str | None = None) -> SearchResponse:
    """Search and present: the `SearchResponse` that `search --json` prints and `POST /search` returns. `route`:
    None searches without routing; auto / lookup / aggregate routes first (an aggregation question also gets
    `items` and `count`)."""
    t0 = time.perf_counter()
    result = pipeline.search(question, mode, k=k, where=where, route=route)
    hits = search_hits(pipeline.store, result.candidates, result.question, lines)
    took = (time.perf_counter() - t0) * 1000
    return SearchResponse(
        question=result.question, mode=result.mode, requested_mode=mode or pipeline.settings.default_mode, k=k,
        took_ms=round(took, 3), results=hits, notes=list(result.trace.notes), trace=TraceInfo.from_trace(result.trace),
        route=result.route.name if result.route else "lookup",
        route_info=RouteInfo(**result.route.to_dict()) if result.route else None,
        items=list_items(result.aggregate) if result.aggregate is not None else None,
        count=result.aggregate.count if result.aggregate is not None else None,
        exhaustive=result.aggregate.exhaustive if result.aggregate is not None else None,
    )
