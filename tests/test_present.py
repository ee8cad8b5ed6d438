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
