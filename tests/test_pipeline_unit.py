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

SETTINGS = StoreSettings(sparse_views=["scene", "w3s1", "utt"], dense_views=["scene", "w3s1", "utt"], derived_views={},
                         late_chunked_views=[])
FIRST_STAGE_MODES = ["bm25", "bm25_window", "vector", "vector_scene", "vector_utt", "rrf_naive", "rrf_weighted",
                     "query_aware", "query_aware_tuned", "score", "all4", "hybrid"]


def episode_filter(question: str):
    match = re.search(r"\bepisode (\d+)\b", question)
    return {"episode": int(match.group(1))} if match else None


@pytest.fixture(scope="module")
def pipeline(session_cache, tmp_path_factory):
    docs = [d.__class__(d.doc_id, d.title, d.units, {"episode": int(d.doc_id[5:7])}) for d in topic_docs()]
    store = build_index(docs, None, SETTINGS, session_cache, backend_name="memory")
    corpus = DocumentsCorpus(docs, name="topics", query_filter=episode_filter)
    home = tmp_path_factory.mktemp("unit-home")  # no trained fusion: every mode fuses as configured
    pipe = Pipeline(Settings(home=home), store=store, corpus=corpus)
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


# ---- the learned fusion (`ragfunnel train fusion`): used by the modes it was trained for, shown in the trace ----

def train_topic_fusion(pipeline, directory, **about):
    """A fusion fitted on twelve questions about the topics (their answers are known), saved to `directory`."""
    from ragfunnel.questions import Question
    from ragfunnel.train.fusion import collect, train_fusion

    asked = {"s09_e01_c01": ["pizza with pepperoni", "Joey doesn't share food", "a greasy pizza"],
             "s09_e01_c02": ["the velociraptor skeleton", "dinosaur exhibit at the museum", "Ross and the fossils"],
             "s09_e01_c03": ["Phoebe's song about a cat", "a new song on the guitar", "smelly cat"],
             "s09_e01_c04": ["a head inside the turkey", "Thanksgiving turkey in the oven", "Joey can't see"]}
    qs = [Question(f"{d}-{i}", text, (d,)) for d, texts in asked.items() for i, text in enumerate(texts)]
    names = ["bm25_scene", "bm25_utt", "dense_w3s1", "dense_scene"]
    data = collect(pipeline, qs, names)
    kinds = {n: pipeline.retriever(n).kind for n in names}
    about = {"modes": ["hybrid"], "encoder": pipeline.store.settings.encoder, "idf_view": "scene", **about}
    return train_fusion(data, names, kinds, directory, **about)


def test_hybrid_fuses_with_the_collections_trained_fusion(pipeline):
    before = pipeline.search("the velociraptor skeleton at the museum", "hybrid", k=3)
    assert pipeline.learned_fusion("hybrid", pipeline.settings.modes["hybrid"]) is None
    train_topic_fusion(pipeline, pipeline.settings.fusion_dir)
    try:
        result = pipeline.search("the velociraptor skeleton at the museum", "hybrid", k=3)
        assert result.candidates[0].doc_id == before.candidates[0].doc_id == "s09_e01_c02"
        assert set(result.lists) == {"bm25_scene", "bm25_utt", "dense_w3s1", "dense_scene"}  # the model's lists
        fuse = result.trace.stages[-1]
        assert fuse.name == "fuse" and fuse.detail["method"] == "learned" and fuse.detail["instead_of"] == "rrf"
        assert set(fuse.detail["weights"]) == set(result.lists)
        assert sum(fuse.detail["weights"].values()) == pytest.approx(1.0, abs=0.01)
        assert fuse.detail["model"].endswith("model.json") and "why" in fuse.detail
        # modes it was not trained for fuse as configured; a mode can opt out
        assert pipeline.search("smelly cat", "rrf_naive", k=3).trace.stages[-1].detail["method"] == "rrf"
        out = pipeline.settings.modes["hybrid"].model_copy(deep=True)
        out.fusion.learned = False
        assert pipeline.learned_fusion("hybrid", out) is None
    finally:
        (pipeline.settings.fusion_dir / "model.json").unlink()
    assert pipeline.search("smelly cat", "hybrid", k=3).trace.stages[-1].detail["method"] == "rrf"


def test_a_fusion_for_another_index_is_not_used(pipeline, tmp_path):
    from ragfunnel.errors import ConfigError

    train_topic_fusion(pipeline, tmp_path, encoder="some-other-encoder")
    spec = pipeline.settings.modes["hybrid"].model_copy(deep=True)
    spec.fusion.model = str(tmp_path)
    from ragfunnel.types import Trace

    trace = Trace("q", "hybrid")
    assert pipeline.learned_fusion("hybrid", spec, trace) is None
    assert "was not used" in trace.notes[0] and "train it again" in trace.notes[0]
    spec.fusion.learned = True
    with pytest.raises(ConfigError, match="cannot serve mode 'hybrid'"):
        pipeline.learned_fusion("hybrid", spec)
    spec.fusion.model = str(tmp_path / "nothing")
    with pytest.raises(ConfigError, match="there is none in"):
        pipeline.learned_fusion("hybrid", spec)
