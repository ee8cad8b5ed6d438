"""Pseudo-relevance feedback retrievers on the small session index: RM3 expands BM25 queries with terms of the top
chunks (weighted), Rocchio moves the query vector towards the top chunks; both return ranked hits like their bases."""

from __future__ import annotations

import numpy as np
import pytest

from ragfunnel.config import RetrieverSpec
from ragfunnel.retrieve.dense import embed_query
from ragfunnel.retrieve.feedback import RM3Retriever, RocchioRetriever, rm3_terms, weighted_query
from ragfunnel.retrieve.registry import make_retriever

pytestmark = pytest.mark.integration

QUESTION = "Who did Rachel dump at the altar?"


def test_rm3_weights_sum_to_one_and_keep_the_original_terms(small_store):
    hits = small_store.search_sparse("scene", QUESTION, 10)
    weights = rm3_terms(small_store, "scene", QUESTION, hits, 10, 10, 0.5)
    assert sum(weights.values()) == pytest.approx(1.0)
    original = set(small_store.analyze(QUESTION))
    assert original <= set(weights) and len(weights) > len(original)  # expanded
    assert sum(weights[t] for t in original) >= 0.5 - 1e-9  # at least the original weight (a term may be both)
    assert rm3_terms(small_store, "scene", QUESTION, [], 10, 10, 0.5) == {t: 1 / len(original) for t in original}


def test_weighted_query_repeats_in_proportion():
    assert weighted_query({"a": 0.5, "b": 0.1, "c": 0.01}).split() == ["a"] * 20 + ["b"] * 4  # c rounds to nothing
    assert weighted_query({"a": 0.5, "c": 0.01}, frozenset({"c"})).split() == ["a"] * 20 + ["c"]  # an original stays


def test_rm3_retriever_ranks_and_finds_the_scene(small_store):
    r = make_retriever("bm25_rm3", small_store, RetrieverSpec(kind="bm25_rm3", view="scene", depth=20).model_dump(), "rm3")
    assert isinstance(r, RM3Retriever) and r.kind == "sparse"
    hits = r.retrieve(QUESTION)
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1)) and len(hits) == 20
    plain_top = small_store.search_sparse("scene", QUESTION, 1)[0][0]
    assert plain_top in [h.chunk_id for h in hits[:3]]  # feedback from the top chunks keeps the best one near the top
    assert r.expanded(QUESTION) != QUESTION


def test_rocchio_moves_the_vector_and_returns_cosines(small_store, encoder):
    spec = RetrieverSpec(kind="dense_prf", view="w3s1", depth=10, beta=0.5).model_dump()
    r = make_retriever("dense_prf", small_store, spec, "prf")
    assert isinstance(r, RocchioRetriever) and r.kind == "dense" and r.beta == 0.5
    hits = r.retrieve(QUESTION)
    assert len(hits) == 10 and all(-1.01 <= h.score <= 1.01 for h in hits)
    plain = small_store.search_dense("w3s1", embed_query(r.encoder, QUESTION), 10, exact=True)
    assert [h.chunk_id for h in hits] != [c for c, _ in plain] or not np.allclose([h.score for h in hits], [s for _, s in plain])
