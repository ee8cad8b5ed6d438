"""BM25 retrieval: the retriever's hits, query IDF, and score parity of tantivy with a reference BM25."""

from __future__ import annotations

import bisect
import math
import random
from collections import Counter

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from ragfunnel.chunking import chunk_documents
from ragfunnel.errors import IndexUnusableError
from ragfunnel.retrieve.sparse import BM25Retriever, query_idf
from ragfunnel.store import StoreSettings, build_index
from ragfunnel.store.base import AnalyzerSettings
from ragfunnel.types import Chunk

pytestmark = pytest.mark.integration

K1, B = 1.2, 0.75


def lucene_idf(n_docs: int, df: int) -> float:
    return math.log(1 + (n_docs - df + 0.5) / (df + 0.5))


# ---- the retriever on the small session index ---------------------------------------------------------------------


def test_hits_are_ranked_chunks_of_parents(small_store):
    retriever = BM25Retriever(small_store, "w3s1", depth=25)
    assert retriever.name == "bm25_w3s1" and retriever.kind == "sparse"
    hits = retriever.retrieve("Barry wedding altar Rachel")
    assert len(hits) == 25
    assert [h.rank for h in hits] == list(range(1, 26))
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True) and scores[-1] > 0
    assert all(h.doc_id == Chunk.parent_of(h.chunk_id) and h.retriever == "bm25_w3s1" for h in hits)
    assert all("#w3s1/" in h.chunk_id for h in hits)
    assert len(retriever.retrieve("Barry wedding altar Rachel", limit=3)) == 3
    assert BM25Retriever(small_store, "scene", name="custom").retrieve("Barry", limit=1)[0].retriever == "custom"


def test_every_hit_contains_a_query_term(small_store):
    terms = set(small_store.analyze("sonogram Carol lesbian"))
    hits = BM25Retriever(small_store, "scene").retrieve("sonogram Carol lesbian")
    assert hits
    texts = {c.chunk_id: c.text for c in small_store.chunks([h.chunk_id for h in hits])}
    for h in hits:
        assert terms & set(small_store.analyze(texts[h.chunk_id]))


def test_queries_without_terms_return_nothing(small_store):
    retriever = BM25Retriever(small_store, "scene")
    assert retriever.retrieve("?! ...") == []
    assert retriever.retrieve("qwertyzxcv") == []
    assert retriever.mean_idf("qwertyzxcv") is None
    assert retriever.mean_idf("") is None


def test_mean_idf_uses_lucene_idf_over_the_view(small_store):
    view = "scene"
    texts = [c.text for c in chunk_documents(small_store_docs(small_store), [view])]
    df = Counter(t for text in texts for t in set(small_store.analyze(text)))
    query = "Rachel Barry altar qwertyzxcv Rachel"
    terms = [t for t in dict.fromkeys(small_store.analyze(query)) if df[t]]
    expected = [lucene_idf(len(texts), df[t]) for t in terms]
    assert query_idf(small_store, view, query) == pytest.approx(expected, rel=1e-9)
    assert BM25Retriever(small_store, view).mean_idf(query) == pytest.approx(sum(expected) / len(expected))
    # a rare term has a higher IDF than a common one
    common, rare = query_idf(small_store, view, "Rachel"), query_idf(small_store, view, "altar")
    assert rare[0] > common[0]


def small_store_docs(store):
    return [store.document(d) for d in store.doc_ids()]


def test_unknown_view_is_refused(small_store):
    with pytest.raises(IndexUnusableError, match="rebuild"):
        BM25Retriever(small_store, "w9s9").retrieve("Barry")


# ---- parity with a reference BM25 ------------------------------------------------------------------------------------


def _int4_to_long(i: int) -> int:
    bits, shift = i & 0x07, (i >> 3) - 1
    return bits if shift == -1 else (bits | 0x08) << shift


def _fieldnorm_table() -> list[int]:
    """Lucene's SmallFloat.byte4ToInt for 0..255, which tantivy uses to store field lengths in one byte."""
    max_int4 = 231  # SmallFloat.longToInt4(Integer.MAX_VALUE)
    free = 255 - max_int4  # lengths below 24 are exact
    return [i if i < free else free + _int4_to_long(i - free) for i in range(256)]


FIELDNORMS = _fieldnorm_table()


def quantised(length: int) -> int:
    return FIELDNORMS[bisect.bisect_right(FIELDNORMS, length) - 1]


class ReferenceBM25:
    """Lucene/tantivy BM25: idf = ln(1 + (N - n + .5)/(n + .5)), k1 = 1.2, b = 0.75, average length over the real
    token counts, each document's own length read back from its one-byte field norm."""

    def __init__(self, docs: list[list[str]], quantise: bool = True):
        self.tf = [Counter(d) for d in docs]
        self.n = len(docs)
        self.avgdl = sum(len(d) for d in docs) / self.n
        self.dl = [quantised(len(d)) if quantise else len(d) for d in docs]
        self.df = Counter(t for d in docs for t in set(d))

    def scores(self, query: list[str]) -> np.ndarray:
        out = np.zeros(self.n)
        for term in query:  # a repeated query term counts again, as in a boolean query of SHOULD clauses
            if not self.df[term]:
                continue
            idf = lucene_idf(self.n, self.df[term])
            for i, tf in enumerate(self.tf):
                f = tf[term]
                if f:
                    out[i] += idf * f * (K1 + 1) / (f + K1 * (1 - B + B * self.dl[i] / self.avgdl))
        return out


class LuceneIdfBM25Okapi(BM25Okapi):
    """rank_bm25's Okapi BM25 with Lucene's (always positive) IDF instead of Robertson's with an epsilon floor."""

    def __init__(self, corpus):
        super().__init__(corpus, k1=K1, b=B)

    def _calc_idf(self, nd):
        for word, freq in nd.items():
            self.idf[word] = lucene_idf(self.corpus_size, freq)


FIXED_QUERIES = [
    "Who is Ross's ex-wife?",
    "Rachel Green coffee house waitress",
    "Monica cooking dinner in the kitchen",
    "Chandler Bing job boss office",
    "Joey audition actor",
    "Phoebe song guitar",
    "Ross Ross Ross dinosaur",  # repeated terms
    "the the and",
    "Why is everyone laughing at Central Perk?",
    "baby Ben Carol Susan",
    "Marcel monkey",
    "Christmas party presents",
]


@pytest.fixture(scope="module")
def parity(friends_docs, session_cache, tmp_path_factory):
    """~50 real scenes in a BM25-only store with a plain analyzer (no stemming, no stopwords)."""
    sample = friends_docs[326:376]  # the first 50 scenes of season 2
    settings = StoreSettings(
        sparse_views=["scene"], dense_views=[], analyzer=AnalyzerSettings(stem=False, stopwords="none")
    )
    store = build_index(sample, tmp_path_factory.mktemp("parity") / "index", settings, session_cache)
    chunks = chunk_documents(sample, ["scene"])
    ids = [c.chunk_id for c in chunks]
    tokens = [store.analyze(c.text) for c in chunks]
    rng = random.Random(7)
    queries = list(FIXED_QUERIES)
    for toks in rng.sample(tokens, 20):  # words drawn from real scenes
        queries.append(" ".join(rng.sample(toks, min(4, len(toks)))))
    yield store, ids, tokens, queries
    store.close()


def test_analyzer_is_lowercase_alphanumeric_split(parity):
    store = parity[0]
    assert store.analyze("Ross's EX-wife, Carol... 2 babies!") == ["ross", "s", "ex", "wife", "carol", "2", "babies"]
    assert store.analyze("the running dogs") == ["the", "running", "dogs"]  # no stemming, no stopwords


def test_tantivy_bm25_matches_the_lucene_formula_exactly(parity):
    store, ids, tokens, queries = parity
    reference = ReferenceBM25(tokens)
    checked = 0
    for q in queries:
        expected = reference.scores(store.analyze(q))
        got = dict(store.search_sparse("scene", q, len(ids)))
        matching = {ids[i] for i in np.flatnonzero(expected > 0)}
        assert set(got) == matching, q
        for i, cid in enumerate(ids):
            if cid in got:
                assert got[cid] == pytest.approx(expected[i], rel=2e-4), (q, cid)
                checked += 1
    assert checked > 200


def test_tantivy_bm25_agrees_with_rank_bm25(parity):
    """Against rank_bm25 (Lucene IDF, exact lengths): scores within a few percent (field-norm quantisation) and
    the same top 5 for most queries."""
    store, ids, tokens, queries = parity
    okapi = LuceneIdfBM25Okapi(tokens)
    worst, same_top5, overlaps = 0.0, 0, []
    for q in queries:
        expected = okapi.get_scores(store.analyze(q))
        got = store.search_sparse("scene", q, len(ids))
        assert got, q
        for cid, score in got:
            ref = expected[ids.index(cid)]
            worst = max(worst, abs(score - ref) / ref)
        ours = [cid for cid, _ in got]
        order = [ids[i] for i in np.argsort(-expected, kind="stable") if expected[i] > 0]
        same_top5 += ours[:5] == order[:5]
        overlaps.append(len(set(ours[:10]) & set(order[:10])) / min(10, len(order)))
    assert worst < 0.06  # measured 4.6% on this sample; lengths are rounded down by up to 1/8
    assert same_top5 >= 0.75 * len(queries)  # measured 27 of 32
    assert np.mean(overlaps) >= 0.95


def test_quantisation_is_what_separates_them(parity):
    """Without field-norm quantisation the reference equals rank_bm25 (so the two checks above test the same
    formula, and tantivy differs from rank_bm25 only where lengths are rounded)."""
    store, ids, tokens, queries = parity
    exact, okapi = ReferenceBM25(tokens, quantise=False), LuceneIdfBM25Okapi(tokens)
    for q in queries[:5]:
        terms = store.analyze(q)
        np.testing.assert_allclose(exact.scores(terms), okapi.get_scores(terms), rtol=1e-9)
    assert quantised(23) == 23 and quantised(24) == 24 and quantised(1000) <= 1000
    assert FIELDNORMS == sorted(FIELDNORMS) and len(set(FIELDNORMS)) == 256
