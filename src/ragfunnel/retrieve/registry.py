"""Retrievers by kind: `RETRIEVERS` (a `ragfunnel.registry.Registry`) maps a kind to a factory
`(store, params, name)` that builds one from a retriever's settings (config.RetrieverSpec's fields as a mapping).
Adding a retriever: implement the `Retriever` protocol (retrieve/base.py) and `RETRIEVERS.register` it here; a `[retrievers.NAME]` table with `kind = "<kind>"` then uses it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragfunnel.embedding import shared_encoder
from ragfunnel.errors import ConfigError
from ragfunnel.registry import Registry
from ragfunnel.retrieve.base import Retriever
from ragfunnel.retrieve.dense import DenseRetriever
from ragfunnel.retrieve.feedback import RM3Retriever, RocchioRetriever
from ragfunnel.retrieve.sparse import BM25Retriever
from ragfunnel.store.base import Store


def _dense(store: Store, p: Mapping[str, Any], name: str) -> Retriever:
    encoder = shared_encoder(store.settings.encoder, store.settings.max_length)  # the index's own encoder
    return DenseRetriever(store, encoder, p["view"], p["depth"], p["ef"], p["exact"], name=name, pool=p.get("pool"))


def _given(p: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    return {k: p[k] for k in keys if p.get(k) is not None}


def _dense_prf(store: Store, p: Mapping[str, Any], name: str) -> Retriever:
    encoder = shared_encoder(store.settings.encoder, store.settings.max_length)
    return RocchioRetriever(store, encoder, p["view"], p["depth"], p["ef"], p["exact"], name=name,
                            pool=p.get("pool"), **_given(p, "fb_docs", "beta"))


def _bm25(store: Store, p: Mapping[str, Any], name: str) -> Retriever:
    return BM25Retriever(store, p["view"], p["depth"], name=name)


def _bm25_rm3(store: Store, p: Mapping[str, Any], name: str) -> Retriever:
    return RM3Retriever(store, p["view"], p["depth"], name=name, **_given(p, "fb_docs", "fb_terms", "orig_weight"))


RETRIEVERS = Registry("retriever kind")
RETRIEVERS.register("bm25", _bm25, description="BM25 over a sparse view (tantivy in the embedded store)")
RETRIEVERS.register("dense", _dense, description="cosine nearest neighbours of the question's vector in a dense view")
# pseudo-relevance feedback (retrieve/feedback.py): RM3 for BM25, Rocchio for vectors
RETRIEVERS.register("bm25_rm3", _bm25_rm3, description="BM25 with RM3 pseudo-relevance feedback (expanded query)")
RETRIEVERS.register("dense_prf", _dense_prf, description="dense retrieval with Rocchio feedback (query vector moved "
                    "towards the top hits)")


def make_retriever(kind: str, store: Store, params: Mapping[str, Any], name: str) -> Retriever:
    if kind not in RETRIEVERS.names():
        raise ConfigError(f"unknown retriever kind {kind!r}: choose one of {', '.join(RETRIEVERS)}")
    return RETRIEVERS.get(kind).factory(store, params, name)
