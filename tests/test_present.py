"""present.match_spans: the per-store cache of analysed words gives the spans a fresh analysis gives, follows each
store's own analyzer, and does not keep a store alive."""

from __future__ import annotations

import gc
import weakref

from ragfunnel.analysis import AnalyzerSettings, build_analyzer
from ragfunnel.present import _ANALYSED, match_spans


class AnalyzerStore:
    def __init__(self, stem: bool):
        self._analyzer = build_analyzer(AnalyzerSettings(stem=stem, stopwords="extended"))
        self.calls = 0

    def analyze(self, text: str) -> list[str]:
        self.calls += 1
        return self._analyzer.analyze(text)


def test_spans_are_those_of_the_analysed_words_and_words_are_analysed_once():
    store = AnalyzerStore(stem=True)
    text = "Ross was running; Rachel runs, and the runner ran."
    terms = set(store.analyze("run"))
    first = match_spans(store, text, terms)
    calls = store.calls
    assert [text[a:b] for a, b in first] == ["running", "runs"]
    assert match_spans(store, text, terms) == first and store.calls == calls  # the second pass analyses nothing


def test_each_store_keeps_its_own_analysis():
    stemmed, plain = AnalyzerStore(stem=True), AnalyzerStore(stem=False)
    text = "She keeps running"
    assert match_spans(stemmed, text, set(stemmed.analyze("run"))) == [(10, 17)]
    assert match_spans(plain, text, set(plain.analyze("run"))) == []


def test_the_cache_lets_a_closed_store_go():
    store = AnalyzerStore(stem=True)
    match_spans(store, "pivot pivot", {"pivot"})
    ref = weakref.ref(store)
    del store
    gc.collect()
    assert ref() is None and all(s is not None for s in _ANALYSED.keys())


def test_lines_of_a_document_changed_since_the_search_come_from_its_current_text(session_cache):
    """A sync between a search and its presentation: the hit's best chunk (of the old, longer document) no longer
    fits the document read now. Its lines come from the current text, never an index past its end."""
    from ragfunnel.present import best_lines
    from ragfunnel.store.base import StoreSettings
    from ragfunnel.store.memory import MemoryStore
    from ragfunnel.types import Candidate, Document, Unit

    def scene(n: int) -> Document:
        return Document("s01_e01_c01", "", tuple(Unit(f"s01_e01_c01:{i}", f"line {i} about the coffee house")
                                                 for i in range(n)), {})

    store = MemoryStore(StoreSettings(sparse_views=["w3s1"], dense_views=[]), session_cache)
    store.upsert([scene(8)])
    last = [c.chunk_id for c in store.doc_chunks("w3s1", "s01_e01_c01")][-1]
    cand = Candidate("s01_e01_c01", 1.0, 1, best_chunks=(last,))
    assert [line.id for line in best_lines(store, scene(8), cand, "coffee", 3)] == [
        f"s01_e01_c01:{i}" for i in (5, 6, 7)]
    lines = best_lines(store, scene(5), cand, "coffee", 3)  # the document as a sync left it: five lines
    assert [line.id for line in lines] == ["s01_e01_c01:0", "s01_e01_c01:1", "s01_e01_c01:2"]
