"""The embedded store: SQLite, tantivy and usearch stay consistent through add / replace / delete / reopen /
repair, builds are atomic, and indexes from other settings are refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from ragfunnel.chunking import chunk_documents
from ragfunnel.errors import IndexError_
from ragfunnel.store import StoreSettings, build_index, open_store
from ragfunnel.store.embedded import EmbeddedStore
from ragfunnel.store.embedded import FORMAT_VERSION, MANIFEST
from ragfunnel.types import Chunk
from tests.helpers import make_doc, topic_docs

SETTINGS = StoreSettings(sparse_views=["scene", "w3s1"], dense_views=["w3s1"])
ALL = 10_000


def sql_chunk_ids(store: EmbeddedStore, view: str) -> set[str]:
    return {r[0] for r in store._db.execute("SELECT chunk_id FROM chunks WHERE view = ?", (view,))}


def all_sparse_ids(store: EmbeddedStore, view: str) -> set[str]:
    """Every chunk the BM25 index can return: query every term that occurs in any chunk of the view."""
    terms = set()
    for row in store._db.execute("SELECT text FROM chunks WHERE view = ?", (view,)):
        terms.update(store.analyze(row[0]))
    if not terms:
        return set()
    ids = [cid for cid, _ in store.search_sparse(view, " ".join(sorted(terms)), ALL)]
    assert len(ids) == len(set(ids)), "BM25 returned a chunk twice"
    return set(ids)


def all_dense_ids(store: EmbeddedStore, view: str) -> set[str]:
    ids = [cid for cid, _ in store.search_dense(view, np.ones(384, dtype=np.float32), ALL, exact=True)]
    assert len(ids) == len(set(ids)), "the vector index returned a chunk twice"
    return set(ids)


def assert_consistent(store: EmbeddedStore, docs) -> None:
    """SQLite, tantivy and usearch hold exactly the chunks of `docs`, under the same ids."""
    assert store.doc_ids() == sorted(d.doc_id for d in docs)
    for view in store.settings.views:
        expected = {c.chunk_id for c in chunk_documents(docs, [view])}
        assert sql_chunk_ids(store, view) == expected
        assert store.count_chunks(view) == len(expected)
        if view in store.settings.sparse_views:
            assert store.count_sparse(view) == len(expected)
            assert all_sparse_ids(store, view) == expected
        if view in store.settings.dense_views:
            assert store.count_dense(view) == len(expected)
            assert all_dense_ids(store, view) == expected
    assert store.count_chunks() == len(chunk_documents(docs, store.settings.views))


QUERIES = ["pizza pepperoni", "dinosaur museum", "turkey oven Thanksgiving", "break copy girl", "soap opera doctor"]


def snapshot(store: EmbeddedStore, encoder) -> dict:
    out = {}
    for q in QUERIES:
        for view in store.settings.sparse_views:
            out[("bm25", view, q)] = store.search_sparse(view, q, 20)
        vec = encoder.encode([q])[0]
        for view in store.settings.dense_views:
            out[("exact", view, q)] = store.search_dense(view, vec, 10, exact=True)
            out[("hnsw", view, q)] = store.search_dense(view, vec, 10, ef=64)
    return out


def assert_same_results(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        assert [cid for cid, _ in a[key]] == [cid for cid, _ in b[key]], key
        np.testing.assert_allclose([s for _, s in a[key]], [s for _, s in b[key]], rtol=1e-5, atol=1e-6)


@pytest.fixture
def docs():
    return topic_docs()


@pytest.fixture
def built(tmp_path, docs, session_cache):
    store = build_index(docs, tmp_path / "index", SETTINGS, session_cache)
    yield store
    store.close()


# ---- a fresh build ---------------------------------------------------------------------------------------------


def test_build_is_consistent_across_engines(built, docs):
    assert_consistent(built, docs)
    manifest = json.loads((built.path / MANIFEST).read_text())
    assert manifest["complete"] is True and manifest["dirty"] is False
    assert manifest["format_version"] == FORMAT_VERSION
    assert manifest["documents"] == len(docs)
    assert manifest["chunks"] == {v: len(chunk_documents(docs, [v])) for v in SETTINGS.views}
    assert StoreSettings.model_validate(manifest["settings"]) == SETTINGS


def test_documents_roundtrip(built, docs):
    for d in docs:
        got = built.document(d.doc_id)
        assert got == d and got.metadata == d.metadata and got.render() == d.render()
    assert built.document("s00_e00_c00") is None
    ids = [Chunk.make_id("s09_e01_c02", "w3s1", 1), "nope#w3s1/0000", Chunk.make_id("s09_e01_c01", "scene", 0)]
    chunks = built.chunks(ids)
    assert [c.chunk_id for c in chunks] == [ids[0], ids[2]]  # asked order, unknown ids dropped
    expected = {c.chunk_id: c for c in chunk_documents(docs, SETTINGS.views)}
    assert chunks == [expected[ids[0]], expected[ids[2]]]


def test_doc_chunks_line_up_with_doc_vectors(built, docs, encoder):
    doc = docs[0]
    chunks = built.doc_chunks("w3s1", doc.doc_id)
    assert chunks == [c for c in chunk_documents([doc], ["w3s1"])]  # every window, in order
    vectors = built.doc_vectors("w3s1", doc.doc_id)
    assert len(vectors) == len(chunks)
    for chunk, vector in zip(chunks, vectors):
        assert float(vector @ encoder.encode([chunk.text])[0]) > 0.99  # row i is chunk i's vector
    assert built.doc_chunks("w3s1", "s00_e00_c00") == []


def test_search_finds_the_topic(built, encoder):
    assert built.search_sparse("scene", "pepperoni pizza", 3)[0][0] == "s09_e01_c01#scene/0000"
    assert Chunk.parent_of(built.search_sparse("w3s1", "velociraptor", 3)[0][0]) == "s09_e01_c02"
    assert built.search_sparse("scene", "?!", 3) == []
    assert built.search_sparse("scene", "xylophone", 3) == []
    hits = built.search_dense("w3s1", encoder.encode(["a doctor on a TV soap opera"])[0], 3)
    assert Chunk.parent_of(hits[0][0]) == "s09_e02_c03"
    scores = [s for _, s in hits]
    assert scores == sorted(scores, reverse=True) and all(-1.0 <= s <= 1.0 + 1e-6 for s in scores)


def test_views_without_an_index_are_refused(built, encoder):
    with pytest.raises(IndexError_, match="rebuild"):
        built.search_sparse("utt", "pizza", 3)
    with pytest.raises(IndexError_, match="rebuild"):
        built.search_dense("scene", encoder.encode(["pizza"])[0], 3)
    with pytest.raises(IndexError_):
        built.term_idfs("w5s1", "pizza")


# ---- mutations ---------------------------------------------------------------------------------------------------


def test_add_document(built, docs, encoder):
    new = make_doc("s09_e03_c01", [("Gunther", "Rachel, I love you."), "(Gunther polishes the espresso machine)",
                                   ("Rachel Green", "What, Gunther?"), ("Gunther", "Nothing.")], title="New")
    built.upsert([new])
    assert_consistent(built, [*docs, new])
    assert built.document(new.doc_id) == new
    assert built.search_sparse("scene", "espresso Gunther", 1)[0][0] == "s09_e03_c01#scene/0000"
    top = built.search_dense("w3s1", encoder.encode([chunk_documents([new], ["w3s1"])[0].text])[0], 1, exact=True)
    assert top[0][0] == "s09_e03_c01#w3s1/0000" and top[0][1] == pytest.approx(1.0, abs=1e-4)


def test_replace_document_changes_bm25_and_dense(built, docs, encoder):
    old = docs[0]  # the pizza scene
    old_window = chunk_documents([old], ["w3s1"])[0]
    new = make_doc(old.doc_id, [("Ross Geller", "I bought a zeppelin ticket to Minsk."),
                                ("Phoebe Buffay", "A zeppelin? Like the airship?"),
                                ("Ross Geller", "It floats over Minsk all day.")], title="Replaced")
    assert built.search_sparse("scene", "pepperoni", 5)[0][0].startswith(old.doc_id)
    built.upsert([new])
    replaced_docs = [new, *docs[1:]]
    assert_consistent(built, replaced_docs)
    assert built.document(old.doc_id).title == "Replaced"
    for view in SETTINGS.sparse_views:
        assert built.search_sparse(view, "pepperoni", 5) == []  # the old words are gone from BM25
        assert Chunk.parent_of(built.search_sparse(view, "zeppelin Minsk", 1)[0][0]) == old.doc_id
    new_window = chunk_documents([new], ["w3s1"])[0]
    top = built.search_dense("w3s1", encoder.encode([new_window.text])[0], 1, exact=True)
    assert top[0][0] == new_window.chunk_id and top[0][1] == pytest.approx(1.0, abs=1e-4)
    # The old window's vector is gone: nothing matches its text exactly any more.
    best_old = built.search_dense("w3s1", encoder.encode([old_window.text])[0], 1, exact=True)
    assert best_old[0][1] < 0.95
    assert built.chunks([new_window.chunk_id])[0].text == new_window.text


def test_upsert_twice_in_one_call_keeps_the_last(built, docs):
    a = make_doc("s09_e04_c01", [("Joey Tribbiani", "How you doin'?")])
    b = make_doc("s09_e04_c01", [("Joey Tribbiani", "Joey doesn't share food, ever.")])
    built.upsert([a, b])
    assert_consistent(built, [*docs, b])
    assert built.document("s09_e04_c01") == b


def test_delete_removes_from_every_index(built, docs, encoder):
    gone = docs[1]  # the dinosaur scene
    assert built.delete([gone.doc_id, "s00_e00_c00"]) == 1
    assert built.delete([gone.doc_id]) == 0
    rest = [d for d in docs if d.doc_id != gone.doc_id]
    assert_consistent(built, rest)
    assert built.document(gone.doc_id) is None
    for view in SETTINGS.sparse_views:
        assert built.search_sparse(view, "velociraptor dinosaur fossils", ALL) == []
    vec = encoder.encode([chunk_documents([gone], ["w3s1"])[0].text])[0]
    assert all(Chunk.parent_of(cid) != gone.doc_id for cid, _ in built.search_dense("w3s1", vec, ALL, exact=True))
    assert all(Chunk.parent_of(cid) != gone.doc_id for cid, _ in built.search_dense("w3s1", vec, 5))


def test_reopen_gives_identical_results(built, docs, session_cache, encoder):
    # Mutate first, so what is persisted is the state after add, replace and delete.
    extra = make_doc("s09_e05_c01", [("Monica Geller", "Welcome to the Thanksgiving pie contest.")])
    changed = make_doc(docs[2].doc_id, [("Phoebe Buffay", "Smelly cat, it's not your fault.")])
    built.upsert([extra, changed])
    built.delete([docs[3].doc_id])
    expected_docs = [extra, changed, *[d for d in docs if d.doc_id not in (docs[2].doc_id, docs[3].doc_id)]]
    before = snapshot(built, encoder)
    path = built.path
    built.close()
    reopened = open_store(path, session_cache)
    try:
        assert reopened.settings == SETTINGS
        assert_consistent(reopened, expected_docs)
        assert_same_results(before, snapshot(reopened, encoder))
    finally:
        reopened.close()


# ---- crash safety ------------------------------------------------------------------------------------------------


def _mark_dirty(path: Path, drop_bm25: bool = True, drop_vectors: bool = True) -> None:
    manifest = json.loads((path / MANIFEST).read_text())
    manifest["dirty"] = True
    (path / MANIFEST).write_text(json.dumps(manifest))
    if drop_bm25:
        shutil.rmtree(path / "bm25")
    if drop_vectors:
        for f in (path / "vectors").glob("*.usearch"):
            f.unlink()


@pytest.mark.parametrize("drop_bm25, drop_vectors", [(True, True), (False, True), (True, False), (False, False)])
def test_dirty_store_is_repaired_on_open(built, docs, session_cache, encoder, drop_bm25, drop_vectors):
    before = snapshot(built, encoder)
    path = built.path
    built.close()
    _mark_dirty(path, drop_bm25, drop_vectors)
    repaired = open_store(path, session_cache)
    try:
        assert json.loads((path / MANIFEST).read_text())["dirty"] is False
        assert_consistent(repaired, docs)
        assert_same_results(before, snapshot(repaired, encoder))
    finally:
        repaired.close()


def test_write_interrupted_mid_upsert_is_repaired_on_open(built, docs, session_cache, monkeypatch):
    """A kill after SQLite changed but before the vector index was saved: the next open rebuilds BM25 and HNSW
    from SQLite, so all three agree again."""
    new = make_doc("s09_e06_c01", [("Janice", "Oh. My. God."), ("Chandler Bing", "Janice!"), "(Chandler hides)"])

    def killed(*args, **kwargs):
        raise KeyboardInterrupt("killed while writing vectors")

    monkeypatch.setattr(built, "_write_dense", killed)
    with pytest.raises(KeyboardInterrupt):
        built.upsert([new])
    path = built.path
    built.close()
    assert json.loads((path / MANIFEST).read_text())["dirty"] is True
    repaired = open_store(path, session_cache)
    try:
        assert_consistent(repaired, [*docs, new])
        assert json.loads((path / MANIFEST).read_text())["dirty"] is False
    finally:
        repaired.close()


def test_failed_build_leaves_the_old_index_serving(tmp_path, docs, session_cache):
    path = tmp_path / "index"
    build_index(docs[:3], path, SETTINGS, session_cache).close()

    def fail(task, done, total):
        if task.startswith("BM25"):
            raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        build_index(docs, path, SETTINGS, session_cache, progress=fail)
    old = open_store(path, session_cache)
    assert_consistent(old, docs[:3])
    old.close()
    assert (tmp_path / "index.partial").exists()  # cleaned by the next build
    store = build_index(docs, path, SETTINGS, session_cache)
    try:
        assert_consistent(store, docs)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["index"]
    finally:
        store.close()


def test_empty_document_and_duplicates_in_a_build(tmp_path, docs, session_cache):
    empty = make_doc("s09_e07_c01", [])
    store = build_index([*docs, empty, docs[0]], tmp_path / "index", SETTINGS, session_cache)
    try:
        assert_consistent(store, [*docs, empty])
        assert store.document(empty.doc_id) == empty
        manifest = json.loads((store.path / MANIFEST).read_text())
        assert manifest["documents"] == len(docs) + 1  # a duplicate id is one document
    finally:
        store.close()


def test_build_replaces_an_existing_index_atomically(tmp_path, docs, session_cache):
    path = tmp_path / "index"
    first = build_index(docs[:4], path, SETTINGS, session_cache)
    first.close()
    seen_during_build = []

    def progress(task, done, total):
        if not seen_during_build:  # the old index still serves while the new one is written
            old = open_store(path, session_cache)
            seen_during_build.append(old.doc_ids())
            old.close()

    second = build_index(docs[4:], path, SETTINGS, session_cache, progress=progress)
    try:
        assert seen_during_build == [sorted(d.doc_id for d in docs[:4])]
        assert_consistent(second, docs[4:])
        assert sorted(p.name for p in tmp_path.iterdir()) == ["index"]  # no .partial, no .old
        assert second.search_sparse("scene", "pepperoni", 5) == []  # a doc of the first build
    finally:
        second.close()
    reopened = open_store(path, session_cache)
    assert_consistent(reopened, docs[4:])
    reopened.close()


def test_leftover_partial_build_is_cleaned(tmp_path, docs, session_cache):
    path = tmp_path / "index"
    partial = tmp_path / "index.partial"
    (partial / "bm25").mkdir(parents=True)
    (partial / "junk.bin").write_bytes(b"\0" * 100)
    (partial / MANIFEST).write_text(json.dumps({"format_version": FORMAT_VERSION, "complete": False}))
    store = build_index(docs, path, SETTINGS, session_cache)
    try:
        assert not partial.exists()
        assert not (path / "junk.bin").exists()
        assert sorted(p.name for p in tmp_path.iterdir()) == ["index"]
        assert_consistent(store, docs)
    finally:
        store.close()


def test_build_killed_between_renames_recovers(built, docs, session_cache):
    path = built.path
    built.close()
    path.rename(path.with_name(path.name + ".old"))
    store = open_store(path, session_cache)
    try:
        assert_consistent(store, docs)
    finally:
        store.close()


# ---- refusing what cannot be used ----------------------------------------------------------------------------------


@pytest.fixture
def copied_index(tmp_path, built) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(built.path, copy)
    return copy


def _edit_manifest(path: Path, **changes) -> None:
    manifest = json.loads((path / MANIFEST).read_text())
    manifest.update(changes)
    (path / MANIFEST).write_text(json.dumps(manifest))


@pytest.mark.parametrize(
    "changes", [{"format_version": FORMAT_VERSION + 1}, {"format_version": None}, {"encoder_model_id": "other-encoder-384"}]
)
def test_other_format_or_encoder_needs_a_rebuild(copied_index, session_cache, changes):
    _edit_manifest(copied_index, **changes)
    with pytest.raises(IndexError_, match="rebuild"):
        open_store(copied_index, session_cache)


def test_incomplete_or_corrupt_manifest_is_refused(copied_index, session_cache):
    _edit_manifest(copied_index, complete=False)
    with pytest.raises(IndexError_, match="incomplete"):
        open_store(copied_index, session_cache)
    (copied_index / MANIFEST).write_text("{not json")
    with pytest.raises(IndexError_, match="rebuild"):
        open_store(copied_index, session_cache)


def test_missing_index_is_an_index_error(tmp_path, session_cache):
    with pytest.raises(IndexError_, match="no index"):
        open_store(tmp_path / "does-not-exist", session_cache)
    (tmp_path / "empty").mkdir()
    with pytest.raises(IndexError_, match="no index"):
        open_store(tmp_path / "empty", session_cache)


# ---- the real small index ----------------------------------------------------------------------------------------


@pytest.mark.integration
def test_small_index_engines_agree(small_store, small_docs):
    for view in small_store.settings.views:
        n = small_store.count_chunks(view)
        assert n == len(chunk_documents(small_docs, [view])) > 0
        if view in small_store.settings.sparse_views:
            assert small_store.count_sparse(view) == n
        if view in small_store.settings.dense_views:
            assert small_store.count_dense(view) == n
            assert all_dense_ids(small_store, view) == sql_chunk_ids(small_store, view)
