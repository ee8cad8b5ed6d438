"""Dense vectors made without encoder calls (derived views: a window's vector is the normalised mean of its
utterances' vectors) and a first build that serves BM25 while its vectors are embedded (pending vectors), on every
backend that has them; plus the settings that describe both."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ragfunnel.chunking import chunk_documents
from ragfunnel.embedding import text_hash
from ragfunnel.errors import IndexUnusableError
from ragfunnel.store import StoreSettings, build_index, open_store
from ragfunnel.store.base import IndexInfo
from ragfunnel.store.embedded import MANIFEST, VECTORS_LOCK, VECTORS_PROGRESS
from ragfunnel.store.locks import file_lock
from tests.helpers import topic_docs

DERIVED = StoreSettings(sparse_views=["scene", "w3s1", "utt"], dense_views=["w3s1", "utt"],
                        derived_views={"w3s1": "utt"}, late_chunked_views=[])  # lines embedded alone


# ---- settings ------------------------------------------------------------------------------------------------------


def test_derived_views_keep_only_entries_whose_views_are_both_dense():
    assert StoreSettings(dense_views=["w3s1", "utt"], derived_views={"w3s1": "utt"}).derived_views == {"w3s1": "utt"}
    # a collection without those views is not touched by the entry (so a default entry costs it nothing)
    assert StoreSettings(sparse_views=["sec256"], dense_views=["sec256"], derived_views={"w3s1": "utt"}).derived_views == {}
    assert StoreSettings(dense_views=["w3s1"], derived_views={"w3s1": "utt"}).derived_views == {}
    # the generic names resolve to the index's
    assert StoreSettings(dense_views=["w3s1", "unit"], derived_views={"w3s1": "unit"}).derived_views == {"w3s1": "utt"}


def test_a_derived_view_must_come_from_one_unit_chunks():
    with pytest.raises(ValueError, match="derived from the one-unit view"):
        StoreSettings(dense_views=["w3s1", "w2s1"], derived_views={"w3s1": "w2s1"})
    with pytest.raises(ValueError, match="derived from the one-unit view"):
        StoreSettings(dense_views=["tok256o32", "utt"], derived_views={"tok256o32": "utt"})


def test_settings_stored_before_derived_views_read_as_none_and_keep_their_fingerprint():
    stored = {"sparse_views": ["scene", "w3s1", "utt"], "dense_views": ["scene", "w3s1", "utt"],
              "encoder": "minilm-l6-onnx", "max_length": 256, "analyzer": {"stem": True, "stopwords": "extended"},
              "vector_dtype": "f16", "hnsw_connectivity": 16, "hnsw_expansion_add": 128, "corpus": "friends"}
    settings = StoreSettings.from_stored(stored)
    assert settings.derived_views == {}
    info = IndexInfo(backend="embedded", settings=settings, encoder_model_id="minilm-l6-onnx-256", documents=3107,
                     chunks={"scene": 3107, "w3s1": 61236, "utt": 67373})
    # the fingerprint the committed tables name for the bundled Friends index, from before derived views existed
    assert info.fingerprint == "56be991165f7"
    assert info.model_copy(update={"pending_vectors": ["utt"]}).fingerprint != info.fingerprint


# ---- derived vectors -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["embedded", "memory"])
def test_a_window_vector_is_the_token_weighted_mean_of_its_utterance_vectors(tmp_path, encoder, backend):
    from ragfunnel.embedding import EmbeddingCache

    docs = topic_docs()
    session_cache = EmbeddingCache(tmp_path / "cache.sqlite")  # its own: other tests embed these windows
    store = build_index(docs, tmp_path / "index", DERIVED, session_cache, backend_name=backend)
    try:
        for doc in docs:
            utt = store.doc_vectors("utt", doc.doc_id).astype(np.float64)
            windows = store.doc_vectors("w3s1", doc.doc_id).astype(np.float64)
            chunks = store.doc_chunks("w3s1", doc.doc_id)
            assert len(windows) == len(chunks) > 0
            lengths = encoder.token_lengths([u.render() for u in doc.units])
            for chunk, vector in zip(chunks, windows):
                mean = sum(lengths[n] * utt[n] for n in range(chunk.start, chunk.end))
                np.testing.assert_allclose(vector, mean / np.linalg.norm(mean), atol=2e-3)  # f16 storage
                plain = utt[chunk.start:chunk.end].sum(axis=0)
                if chunk.end - chunk.start > 1 and len(set(lengths[chunk.start:chunk.end])) > 1:
                    assert not np.allclose(vector, plain / np.linalg.norm(plain), atol=2e-3)  # weighted, not plain
    finally:
        store.close()
    # the encoder never saw a window's text: only the utterances are in the cache
    model = store.settings.encoder
    from ragfunnel.embedding import shared_encoder

    model_id = shared_encoder(model, DERIVED.max_length).model_id
    windows = [c.text for c in chunk_documents(docs, ["w3s1"]) if "\n" in c.text]
    assert windows and not session_cache.present(model_id, [text_hash(t) for t in windows])


def test_dense_search_finds_the_topic_through_derived_windows(tmp_path, session_cache, encoder):
    store = build_index(topic_docs(), tmp_path / "index", DERIVED, session_cache)
    try:
        hits = store.search_dense("w3s1", encoder.encode(["velociraptor skeleton at the museum"])[0], 3, exact=True)
        assert hits[0][0].startswith("s09_e01_c02#w3s1/")
    finally:
        store.close()


# ---- a first build serves BM25 before its vectors are in -----------------------------------------------------------


class Stop(Exception):
    pass


def build_pending(path, cache, settings=DERIVED):
    """A first build stopped once it is searchable, before any vector is embedded."""
    seen = []

    def stop(store):
        seen.append(store.pending_vectors())
        raise Stop

    with pytest.raises(Stop):
        build_index(topic_docs(), path, settings, cache, vectors_after=True, on_searchable=stop)
    return seen[0]


def test_a_first_build_is_searchable_with_bm25_before_its_vectors(tmp_path, session_cache, encoder):
    path = tmp_path / "index"
    seen = build_pending(path, session_cache)
    assert seen.views == ["w3s1", "utt"] and not seen.running
    manifest = json.loads((path / MANIFEST).read_text())
    assert manifest["complete"] and manifest["pending_dense"] == ["w3s1", "utt"]
    store = open_store(path, session_cache)
    try:
        assert store.info().pending_vectors == ["w3s1", "utt"]
        assert store.search_sparse("scene", "velociraptor", 3)[0][0].startswith("s09_e01_c02")
        assert store.document("s09_e01_c02") is not None
        assert store.doc_vectors("utt", "s09_e01_c02").shape[0] == 0  # none yet: readers go on without them
        with pytest.raises(IndexUnusableError, match="still being embedded"):
            store.search_dense("utt", encoder.encode(["museum"])[0], 3)
        pending = store.pending_vectors()
        assert pending is not None and not pending.running
        assert "run `ragfunnel index`" in pending.line()
        with file_lock(path / VECTORS_LOCK, exclusive=True):  # a build embedding them now holds the lock
            assert store.pending_vectors().running
            assert store.pending_vectors().line().startswith("vectors: 0% embedded; bm25 until then")
        store.finish_vectors()
        assert store.pending_vectors() is None
        assert store.count_dense("utt") == store.count_chunks("utt")
        hits = store.search_dense("w3s1", encoder.encode(["velociraptor skeleton at the museum"])[0], 3, exact=True)
        assert hits[0][0].startswith("s09_e01_c02#w3s1/")
        assert not (path / VECTORS_PROGRESS).exists()
    finally:
        store.close()
    reopened = open_store(path, session_cache)  # what a new reader sees: every view searchable
    try:
        assert reopened.pending_vectors() is None and reopened.info().pending_vectors == []
        assert reopened.count_dense("w3s1") == reopened.count_chunks("w3s1")
    finally:
        reopened.close()


@pytest.mark.parametrize("settings", [DERIVED, DERIVED.model_copy(update={"late_chunked_views": ["utt"]})],
                         ids=["derived", "read in context"])
def test_a_finished_first_build_matches_a_build_in_one_go(tmp_path, session_cache, encoder, settings):
    direct = build_index(topic_docs(), tmp_path / "direct", settings, session_cache)
    later = build_index(topic_docs(), tmp_path / "later", settings, session_cache, vectors_after=True)
    try:
        assert later.pending_vectors() is None
        assert later.info().fingerprint == direct.info().fingerprint
        vector = encoder.encode(["Thanksgiving turkey"])[0]
        for view in ("w3s1", "utt"):
            assert later.search_dense(view, vector, 5, exact=True) == direct.search_dense(view, vector, 5, exact=True)
    finally:
        direct.close()
        later.close()


def test_embedding_progress_is_written_for_searches_to_read(tmp_path, session_cache, monkeypatch):
    path = tmp_path / "index"
    build_pending(path, session_cache)
    store = open_store(path, session_cache)
    seen = []
    from ragfunnel.store import embedded

    real = embedded.write_text_atomic

    def spy(file, text):
        if file.name == VECTORS_PROGRESS:
            seen.append(json.loads(text))
        real(file, text)

    monkeypatch.setattr(embedded, "write_text_atomic", spy)
    try:
        store.finish_vectors()
    finally:
        store.close()
    assert seen and seen[-1]["done"] == seen[-1]["total"] > 0
    assert seen[-1]["views"] == ["w3s1", "utt"]


def test_other_backends_build_their_vectors_with_the_rest(tmp_path, session_cache):
    store = build_index(topic_docs(), tmp_path / "index", DERIVED, session_cache, backend_name="memory",
                        vectors_after=True)
    assert store.pending_vectors() is None
    assert store.count_dense("w3s1") == store.count_chunks("w3s1")


# ---- the pipeline while vectors are pending ------------------------------------------------------------------------


def test_searches_fall_back_to_bm25_and_say_so_until_the_vectors_are_in(tmp_path, session_cache, ragfunnel_home):
    from ragfunnel.config import load_settings
    from ragfunnel.pipeline import Pipeline

    path = tmp_path / "index"
    build_pending(path, session_cache)
    settings = load_settings(home=ragfunnel_home, index=path)
    store = open_store(path, session_cache)
    pipeline = Pipeline(settings, store=store)
    try:
        pipeline.warm_up(["hybrid", "vector"])  # a server's start: the pending views are not warmed (no error)
        result = pipeline.search("velociraptor skeleton at the museum", "hybrid", k=3)
        assert result.candidates[0].doc_id == "s09_e01_c02"
        assert set(result.lists) == {"bm25_scene", "bm25_w3s1", "bm25_utt"}
        assert result.trace.notes == ["vectors: 0% embedded and no build at it (stopped?): run `ragfunnel index` to "
                                      "finish them; bm25 until then"]
        only_vectors = pipeline.search("velociraptor skeleton at the museum", "vector", k=3)
        assert set(only_vectors.lists) == {"bm25_scene"}  # the bm25 mode's
        assert only_vectors.candidates[0].doc_id == "s09_e01_c02"
        store.finish_vectors()
        done = pipeline.search("velociraptor skeleton at the museum", "hybrid", k=3)
        assert set(done.lists) == {"bm25_scene", "bm25_w3s1", "bm25_utt", "dense_w3s1", "dense_utt"}
        assert not done.trace.notes
    finally:
        store.close()


def test_a_view_built_without_vectors_says_how_to_add_them(tmp_path, session_cache, encoder):
    store = build_index(topic_docs(), tmp_path / "index", DERIVED, session_cache)
    try:
        with pytest.raises(IndexUnusableError, match=r"no vectors of view 'scene' .*ragfunnel index --vectors scene,utt,w3s1"):
            store.search_dense("scene", encoder.encode(["museum"])[0], 3)
    finally:
        store.close()
