"""Units read in context (late chunking, `StoreSettings.late_chunked_views`): each document's lines packed into passes
of at most max_length tokens, one encoder call per pass, a line's vector the mean of its own tokens' vectors there;
windows derived from those; on every backend that has vectors; the settings (a first build that serves BM25 first:
tests/store/test_vectors.py)."""

from __future__ import annotations

import numpy as np
import pytest

from ragfunnel.chunking import chunk_documents
from ragfunnel.embedding import EmbeddingCache, shared_encoder, text_hash
from ragfunnel.store import StoreSettings, build_index
from ragfunnel.store.vectors import LATE, UnitTexts, late_keys
from tests.helpers import make_doc, topic_docs

LATE_SETTINGS = StoreSettings(sparse_views=["scene", "w3s1", "utt"], dense_views=["w3s1", "utt"],
                              derived_views={"w3s1": "utt"}, late_chunked_views=["utt"])


def test_only_the_one_unit_dense_view_is_read_in_context():
    assert LATE_SETTINGS.late_chunked_views == ["utt"]
    # a collection without utterance vectors is not touched (so a default entry costs it nothing)
    assert StoreSettings(sparse_views=["sec256"], dense_views=["sec256"], late_chunked_views=["utt"]).late_chunked_views == []
    with pytest.raises(ValueError, match="only the one-unit view"):
        StoreSettings(dense_views=["w3s1", "utt"], late_chunked_views=["w3s1"])
    # an index stored before the setting existed reads none and keeps its fingerprint dump
    stored = StoreSettings.from_stored({"dense_views": ["scene", "w3s1", "utt"]})
    assert stored.late_chunked_views == [] and "late_chunked_views" not in stored.fingerprint_dump()
    assert LATE_SETTINGS.fingerprint_dump()["late_chunked_views"] == ["utt"]


def test_a_line_read_in_context_is_the_mean_of_its_tokens_in_its_pass(encoder):
    lines = ["Ross Geller: We were on a break!", "Rachel Green: We were not on a break.", "Joey: How you doin'?"]
    ids = encoder.unit_token_ids(lines)
    (together,) = encoder.encode_in_context([ids])
    alone = [encoder.encode_in_context([[unit]])[0][0] for unit in ids]
    assert together.shape == (3, encoder.dim)
    np.testing.assert_allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    # read alone, a line is what the plain encoder makes of it ([CLS] and [SEP] left out of the mean)
    plain = encoder.encode(lines)
    assert all(float(a @ p) > 0.97 for a, p in zip(alone, plain))
    # read with its neighbours, the same line gets another vector
    assert all(float(t @ a) < 0.999 for t, a in zip(together, alone))


def test_passes_hold_one_documents_lines_up_to_the_max_length():
    docs = [make_doc("s01_e01_c01", [("Ross Geller", "word " * 100)] * 5, "One"), make_doc("s01_e01_c02", [("Joey", "Hi.")], "Two")]
    chunks = chunk_documents(docs, ["utt"])
    units = UnitTexts({("utt", c.doc_id, c.start): c.text for c in chunks})
    keys = late_keys(LATE_SETTINGS, units)
    places = {m: k.rsplit("\x1f", 1)[1] for m, k in keys.items()}
    # 100-odd tokens a line: two lines a pass of 254 tokens
    assert [places["utt", "s01_e01_c01", n] for n in range(5)] == ["0", "1", "0", "1", "0"]
    assert places["utt", "s01_e01_c02", 0] == "0"  # a document never shares a pass
    # the same lines read together again are the same pass: one cache entry each place (3 keys for 5 lines)
    assert keys["utt", "s01_e01_c01", 0] == keys["utt", "s01_e01_c01", 2] != keys["utt", "s01_e01_c01", 4]
    assert len({keys["utt", "s01_e01_c01", n] for n in range(5)}) == 3


@pytest.mark.parametrize("backend", ["embedded", "memory"])
def test_a_build_reads_lines_in_context_and_derives_windows_from_them(tmp_path, encoder, backend):
    docs = topic_docs()
    cache = EmbeddingCache(tmp_path / "cache.sqlite")  # its own: nothing embedded before
    store = build_index(docs, tmp_path / "index", LATE_SETTINGS, cache, backend_name=backend)
    try:
        model_id = shared_encoder(LATE_SETTINGS.encoder, LATE_SETTINGS.max_length).model_id
        utt_texts = [c.text for c in chunk_documents(docs, ["utt"])]
        # no line was embedded alone, and no window: one pass per scene made every vector
        assert not cache.present(model_id, [text_hash(t) for t in utt_texts])
        assert cache.count(model_id + LATE) == len(utt_texts)
        for doc in docs:
            utt = store.doc_vectors("utt", doc.doc_id).astype(np.float64)
            ids = encoder.unit_token_ids([u.render() for u in doc.units])
            in_context = np.concatenate(encoder.encode_in_context(_passes(ids)))
            np.testing.assert_allclose(utt, in_context, atol=2e-3)  # f16 storage
            lengths = encoder.token_lengths([u.render() for u in doc.units])
            for chunk, vector in zip(store.doc_chunks("w3s1", doc.doc_id), store.doc_vectors("w3s1", doc.doc_id)):
                mean = sum(lengths[n] * utt[n] for n in range(chunk.start, chunk.end))
                np.testing.assert_allclose(vector, mean / np.linalg.norm(mean), atol=3e-3)
        hits = store.search_dense("w3s1", encoder.encode(["velociraptor skeleton at the museum"])[0], 3, exact=True)
        assert hits[0][0].startswith("s09_e01_c02#w3s1/")
    finally:
        store.close()


def _passes(ids: list[list[int]], limit: int = 254) -> list[list[list[int]]]:
    out, size = [[]], 0
    for unit in ids:
        if out[-1] and size + len(unit) > limit:
            out.append([])
            size = 0
        out[-1].append(unit)
        size += len(unit)
    return out


def test_an_edited_line_changes_only_its_own_pass(tmp_path):
    settings = LATE_SETTINGS
    lines = [("Ross Geller", "word " * 100), ("Rachel Green", "word " * 100), ("Joey", "pizza " * 100)]
    before = late_keys(settings, _units([make_doc("s01_e01_c01", lines, "One")]))
    edited = late_keys(settings, _units([make_doc("s01_e01_c01", lines[:2] + [("Joey", "sandwich " * 100)], "One")]))
    assert before["utt", "s01_e01_c01", 0] == edited["utt", "s01_e01_c01", 0]  # the first pass: Ross and Rachel
    assert before["utt", "s01_e01_c01", 2] != edited["utt", "s01_e01_c01", 2]


def _units(docs) -> UnitTexts:
    return UnitTexts({("utt", c.doc_id, c.start): c.text for c in chunk_documents(docs, ["utt"])})
