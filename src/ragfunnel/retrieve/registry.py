"""Retrievers by kind: `RETRIEVERS[kind](store, params, name)` builds one from a retriever's settings
(config.RetrieverSpec's fields as a mapping). Adding a retriever: implement the `Retriever` protocol
(retrieve/base.py) and add an entry here; a `[retrievers.NAME]` table with `kind = "<kind>"` then uses it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ragfunnel.embedding import shared_encoder
from ragfunnel.errors import ConfigError
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


RETRIEVERS: dict[str, Callable[[Store, Mapping[str, Any], str], Retriever]] = {
    "bm25": lambda store, p, name: BM25Retriever(store, p["view"], p["depth"], name=name),
    "dense": _dense,
    # pseudo-relevance feedback (retrieve/feedback.py): RM3 for BM25, Rocchio for vectors
    "bm25_rm3": lambda store, p, name: RM3Retriever(store, p["view"], p["depth"], name=name,
                                                    **_given(p, "fb_docs", "fb_terms", "orig_weight")),
    "dense_prf": _dense_prf,
}


def make_retriever(kind: str, store: Store, params: Mapping[str, Any], name: str) -> Retriever:
    if kind not in RETRIEVERS:
        raise ConfigError(f"unknown retriever kind {kind!r}: choose one of {', '.join(RETRIEVERS)}")
    return RETRIEVERS[kind](store, params, name)
