"""BM25 text analysis (tokenise, lower-case, stopwords, stemming) as a tantivy analyzer.

The same analyzer runs at index and at query time, and in every store backend, so query terms always match
indexed terms and BM25 statistics agree between backends.
"""

from __future__ import annotations

from pydantic import BaseModel

from ragfunnel.errors import ConfigError


class AnalyzerSettings(BaseModel):
    """How text becomes BM25 terms (lower-casing is always on)."""

    stem: bool = True
    stopwords: str = "extended"  # none | lucene | extended (measured best on dev: docs/results/first_stage/bm25_analyzers.md)

    @property
    def name(self) -> str:
        return f"rf_{'stem' if self.stem else 'nostem'}_{self.stopwords}"

# Question words and conversational fillers that the short Lucene list keeps but that say nothing about a scene.
EXTENDED_STOPWORDS = sorted(
    set(
        "a an and are as at be but by for if in into is it no not of on or such that the their then there these "
        "they this to was will with what who whom whose which when where why how does did do done doing has have "
        "had having i me my we our you your he him his she her its them am were been being would could should "
        "can may might must shall from about than so just s t d ll re ve m don didn doesn isn wasn".split()
    )
)


def build_analyzer(settings: AnalyzerSettings):
    import tantivy

    builder = (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
    )
    if settings.stopwords == "lucene":
        builder = builder.filter(tantivy.Filter.stopword("english"))
    elif settings.stopwords == "extended":
        builder = builder.filter(tantivy.Filter.custom_stopword(EXTENDED_STOPWORDS))
    elif settings.stopwords != "none":
        raise ConfigError(f"unknown stopword list {settings.stopwords!r}: use none, lucene or extended")
    if settings.stem:
        builder = builder.filter(tantivy.Filter.stemmer("english"))
    return builder.build()
