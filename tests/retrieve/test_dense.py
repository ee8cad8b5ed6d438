"""Dense retrieval over the small real index: ranked window hits, exact vs HNSW, query-embedding cache."""

from __future__ import annotations

import numpy as np
import pytest

from ragfunnel.errors import IndexUnusableError
from ragfunnel.retrieve.dense import DenseRetriever
from ragfunnel.types import Chunk

pytestmark = pytest.mark.integration


class CountingEncoder:
    def __init__(self, inner):
        self.inner, self.model_id, self.dim, self.calls = inner, inner.model_id, inner.dim, 0

    def encode(self, texts):
        self.calls += 1
        return self.inner.encode(texts)


def test_hits_are_ranked_cosine_similarities(small_store, encoder):
    retriever = DenseRetriever(small_store, encoder, "w3s1", depth=30)
    assert retriever.name == "dense_w3s1" and retriever.kind == "dense"
    hits = retriever.retrieve("Rachel arrives in a wedding dress after leaving her fiance")
    assert len(hits) == 30 and [h.rank for h in hits] == list(range(1, 31))
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(-1.0 <= s <= 1.0 + 1e-5 for s in scores)
    assert all(h.doc_id == Chunk.parent_of(h.chunk_id) and "#w3s1/" in h.chunk_id for h in hits)
    assert len({h.chunk_id for h in hits}) == 30
    # scores are the cosine similarities of the stored windows
    q = encoder.encode(["Rachel arrives in a wedding dress after leaving her fiance"])[0]
    texts = [c.text for c in small_store.chunks([h.chunk_id for h in hits[:5]])]
    np.testing.assert_allclose(encoder.encode(texts) @ q, scores[:5], atol=1e-3)


def test_a_window_finds_itself(small_store, encoder):
    chunk = small_store.chunks(["s01_e02_c04#w3s1/0005"])[0]
    top = DenseRetriever(small_store, encoder, "w3s1", exact=True).retrieve(chunk.text, limit=1)
    assert top[0].chunk_id == chunk.chunk_id and top[0].score == pytest.approx(1.0, abs=1e-3)


def test_hnsw_agrees_with_exact_search(small_store, encoder):
    questions = ["Who is pregnant?", "Monica's date with Paul the wine guy", "Ross moves into a new apartment",
                 "Chandler talks about a dream", "The gang watches Spanish soap opera"]
    exact = DenseRetriever(small_store, encoder, "w3s1", depth=10, exact=True)
    approx = DenseRetriever(small_store, encoder, "w3s1", depth=10, ef=256)
    for q in questions:
        e, a = [h.chunk_id for h in exact.retrieve(q)], [h.chunk_id for h in approx.retrieve(q)]
        assert e[0] == a[0] and len(set(e) & set(a)) >= 8


def test_query_embedding_is_cached(small_store, encoder):
    counting = CountingEncoder(encoder)
    retriever = DenseRetriever(small_store, counting, "w3s1")
    first = retriever.retrieve("Who broke her watch?")
    assert retriever.retrieve("Who broke her watch?") == first
    assert counting.calls == 1
    retriever.retrieve("Another question")
    assert counting.calls == 2


def test_unknown_view_is_refused(small_store, encoder):
    with pytest.raises(IndexUnusableError, match="ragfunnel index --vectors"):
        DenseRetriever(small_store, encoder, "w9s9").retrieve("Barry")
