"""The BM25 analyzer: lower-casing always, optional stopword lists and stemming."""

from __future__ import annotations

import pytest

from ragfunnel.errors import ConfigError
from ragfunnel.analysis import EXTENDED_STOPWORDS, build_analyzer
from ragfunnel.store.base import AnalyzerSettings

TEXT = "Who did Rachel dump at the altar? The running dogs were RUNNING."


def analyze(stem: bool, stopwords: str, text: str = TEXT) -> list[str]:
    return build_analyzer(AnalyzerSettings(stem=stem, stopwords=stopwords)).analyze(text)


def test_plain_analyzer_lowercases_and_splits():
    assert analyze(False, "none") == [
        "who", "did", "rachel", "dump", "at", "the", "altar", "the", "running", "dogs", "were", "running"
    ]


def test_stemming():
    terms = analyze(True, "none")
    assert terms.count("run") == 2 and "dog" in terms and "running" not in terms


def test_stopword_lists():
    lucene = analyze(False, "lucene")
    assert "the" not in lucene and "at" not in lucene and "who" in lucene and "rachel" in lucene
    extended = analyze(False, "extended")
    assert not {"who", "did", "the", "at", "were"} & set(extended)
    assert {"rachel", "dump", "altar", "running", "dogs"} <= set(extended)
    assert set(extended) <= set(lucene)
    assert EXTENDED_STOPWORDS == sorted(set(EXTENDED_STOPWORDS))


def test_very_long_tokens_are_dropped():
    assert analyze(False, "none", "a " + "x" * 60 + " b") == ["a", "b"]


def test_analyzer_names_differ_per_setting():
    names = {AnalyzerSettings(stem=s, stopwords=w).name for s in (True, False) for w in ("none", "lucene", "extended")}
    assert len(names) == 6


def test_unknown_stopword_list_is_a_config_error():
    with pytest.raises(ConfigError, match="stopword"):
        build_analyzer(AnalyzerSettings(stopwords="french"))


def test_module_imports_on_its_own():
    """Importing the analyzer before the store must work (it once failed with a circular import)."""
    import subprocess
    import sys

    for module in ("ragfunnel.analysis", "ragfunnel.store.base", "ragfunnel.store"):
        proc = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
