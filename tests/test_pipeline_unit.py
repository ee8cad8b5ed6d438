"""The pipeline over a small in-memory corpus and the in-memory store: no Friends data, no index engine, no files.

Every mode of the default settings runs; fusion, the corpus's query filter, warm-up and the trace are checked on
eight one-topic documents whose answers are unmistakable."""

from __future__ import annotations

import re

import pytest

from ragfunnel.config import Settings
from ragfunnel.corpus.base import DocumentsCorpus
from ragfunnel.pipeline import Pipeline
from ragfunnel.store import StoreSettings, build_index
from tests.helpers import topic_docs

SETTINGS = StoreSettings(sparse_views=["scene", "w3s1", "utt"], dense_views=["scene", "w3s1", "utt"], derived_views={})
FIRST_STAGE_MODES = ["bm25", "bm25_window", "vector", "vector_scene", "vector_utt", "rrf_naive", "rrf_weighted",
                     "query_aware", "query_aware_tuned", "score", "all4", "hybrid"]


def episode_filter(question: str):
    match = re.search(r"\bepisode (\d+)\b", question)
    return {"episode": int(match.group(1))} if match else None


@pytest.fixture(scope="module")
def pipeline(session_cache):
    docs = [d.__class__(d.doc_id, d.title, d.units, {"episode": int(d.doc_id[5:7])}) for d in topic_docs()]
    store = build_index(docs, None, SETTINGS, session_cache, backend_name="memory")
    corpus = DocumentsCorpus(docs, name="topics", query_filter=episode_filter)
    pipe = Pipeline(Settings(), store=store, corpus=corpus)
    yield pipe
    pipe.close()


@pytest.mark.parametrize("mode", FIRST_STAGE_MODES)
def test_every_first_stage_mode_finds_the_topic(pipeline, mode):
    result = pipeline.search("Who wants pizza with pepperoni?", mode, k=3)
    assert result.candidates[0].doc_id == "s09_e01_c01"
    assert [c.rank for c in result.candidates] == list(range(1, len(result.candidates) + 1))
    assert result.trace.mode == mode and result.trace.stages[-1].name in ("fuse", "filter")


def test_hybrid_keeps_every_retrievers_evidence(pipeline):
    result = pipeline.search("the velociraptor skeleton at the museum", "hybrid", k=5)
    top = result.candidates[0]
    assert top.doc_id == "s09_e01_c02"
    assert set(top.sources) == {"bm25_scene", "bm25_w3s1", "bm25_utt", "dense_w3s1", "dense_utt"}
    assert all(rank >= 1 for rank, _ in top.sources.values())
    assert [s.name for s in result.trace.stages][-1] == "fuse"


def test_the_corpus_query_filter_keeps_only_matching_documents(pipeline):
    result = pipeline.search("Who is at the meeting in episode 2?", "hybrid", k=5)
    assert result.candidates and all(c.doc_id.startswith("s09_e02") for c in result.candidates)
    assert any(s.name == "filter" for s in result.trace.stages)
    unfiltered = pipeline.search("Who is at the meeting?", "hybrid", k=8)
    assert any(c.doc_id.startswith("s09_e01") for c in unfiltered.candidates)


def test_warm_up_loads_every_retriever_of_the_modes(pipeline):
    pipeline.warm_up(["hybrid", "vector_scene"])
    assert {"bm25_scene", "bm25_w3s1", "bm25_utt", "dense_w3s1", "dense_utt", "dense_scene"} <= set(pipeline._retrievers)
