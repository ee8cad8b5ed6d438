"""The embedded store: SQLite, tantivy and usearch stay consistent through add / replace / delete / reopen /
repair, builds are atomic, and indexes from other settings are refused."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from ragfunnel.chunking import chunk_documents
from ragfunnel.errors import IndexUnusableError
from ragfunnel.store import StoreSettings, build_index, open_store
from ragfunnel.store import embedded
from ragfunnel.store.embedded import FORMAT_VERSION, LOCK_FILE, MANIFEST, EmbeddedStore
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


def test_build_in_batches_gives_the_same_index(tmp_path, docs, session_cache, encoder, monkeypatch):
    """A build reads its documents a batch at a time (a generator will do): the index holds the same chunks and
    answers as one written at once, and the progress of every task counts on across batches and finishes once."""
    whole = build_index(docs, tmp_path / "whole", SETTINGS, session_cache)
    expected = snapshot(whole, encoder)
    whole.close()
    monkeypatch.setattr(embedded, "BUILD_BATCH", 3)
    reports: dict[str, list[tuple[int, int]]] = {}
    batched = build_index((d for d in docs), tmp_path / "batched", SETTINGS, session_cache,
                          lambda task, done, total: reports.setdefault(task, []).append((done, total)))
    try:
        assert len(docs) > 2 * 3  # several batches
        assert_consistent(batched, docs)
        assert_same_results(snapshot(batched, encoder), expected)
        assert len(list((batched.path / "vectors").glob("*.usearch"))) == len(SETTINGS.dense_views)
    finally:
        batched.close()
    monkeypatch.setattr(embedded, "BUILD_BATCH", 3)
    sized: dict[str, list[tuple[int, int]]] = {}
    build_index(docs, tmp_path / "sized", SETTINGS, session_cache,
                lambda task, done, total: sized.setdefault(task, []).append((done, total))).close()
    assert sized.keys() == reports.keys()
    for task, seen in sized.items():
        dones = [d for d, _ in seen]
        assert dones == sorted(dones), task
        finished = [i for i, (d, t) in enumerate(seen) if d >= t]
        assert finished == list(range(finished[0], len(seen))), task  # done only at the end, and then for good
    for view in SETTINGS.views:
        chunks = len(chunk_documents(docs, [view]))
        if view in SETTINGS.sparse_views:
            assert sized[f"BM25 {view}"][-1] == (chunks, chunks)
        if view in SETTINGS.dense_views:
            assert sized[f"HNSW {view}"][-1] == (chunks, chunks)


def test_a_scanned_view_builds_its_graph_cheaply_and_a_view_that_outgrows_the_scan_gets_the_full_graph(
        tmp_path, docs, session_cache, encoder, monkeypatch):
    """A view searched by exact scan never walks its HNSW graph, so the graph is built at the cheap expansion; when
    a write takes the view past the scan's limit, its graph is rebuilt at the settings' expansion, with every vector
    it held, and graph searches find what the scan finds."""
    windows = len(chunk_documents(docs, ["w3s1"]))
    monkeypatch.setattr(embedded, "EXACT_SCAN_BELOW", windows + 1)
    store = build_index(docs, tmp_path / "index", SETTINGS, session_cache)
    try:
        assert store._vectors["w3s1"].expansion_add == embedded.SCANNED_VIEW_EXPANSION_ADD
        before = store._vectors["w3s1"]
        new = make_doc("s09_e06_c01", [("Janice", "Oh. My. God."), ("Chandler Bing", "Janice!"), "(Chandler hides)",
                                       ("Janice", "Chandler Bing, is that you?")])
        store.upsert([new])
        grown = store._vectors["w3s1"]
        assert grown is not before and grown.expansion_add == SETTINGS.hnsw_expansion_add
        assert_consistent(store, [*docs, new])
        for q in QUERIES:
            vector = encoder.encode([q])[0]
            exact = store.search_dense("w3s1", vector, 5, exact=True)
            assert [c for c, _ in store.search_dense("w3s1", vector, 5, ef=512)] == [c for c, _ in exact]
    finally:
        store.close()
    reopened = open_store(tmp_path / "index", session_cache)
    try:
        assert_consistent(reopened, [*docs, new])
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


STEPS_BEFORE_COMMIT = ["store:before-commit", "mid-transaction"]
STEPS_AFTER_COMMIT = ["store:after-commit", "store:after-sparse"]


@pytest.mark.parametrize("step", STEPS_BEFORE_COMMIT + STEPS_AFTER_COMMIT)
def test_apply_stopped_at_any_step_is_all_or_nothing(built, docs, session_cache, monkeypatch, step):
    """An `apply` (a sync's one write: an add, a replace, a delete) stopped at each step of the write: before SQLite
    commits (also between its deletes and its inserts) the reopened store holds the old documents, after it the
    new ones, in every engine."""
    import ragfunnel.store.embedded as embedded

    new = make_doc("s09_e06_c01", [("Janice", "Oh. My. God."), ("Chandler Bing", "Janice!"), "(Chandler hides)"])
    replaced = make_doc(docs[0].doc_id, [("Ross Geller", "We were on a break!"), "(Rachel leaves)"])

    def stop(*args, **kwargs):
        raise KeyboardInterrupt(step)

    if step == "mid-transaction":  # called for the inserts, after the old rows were deleted in the same transaction
        monkeypatch.setattr(embedded, "_units_json", stop)
    else:
        monkeypatch.setattr(embedded, "crash_point", lambda name: stop() if name == step else None)
    with pytest.raises(KeyboardInterrupt):
        built.apply([new, replaced], [docs[1].doc_id])
    monkeypatch.undo()
    path = built.path
    built.close()
    reopened = open_store(path, session_cache)
    try:
        expected = docs if step in STEPS_BEFORE_COMMIT else [replaced, *docs[2:], new]
        assert_consistent(reopened, expected)
        assert reopened.document(docs[0].doc_id) == expected[0]
        assert json.loads((path / MANIFEST).read_text())["dirty"] is False
    finally:
        reopened.close()


def test_open_waits_for_a_write_in_progress(built, docs, session_cache):
    """A store opened while another process writes (its lock held, the manifest dirty) waits for the write to end
    instead of repairing under the writer's feet, and then opens what the writer left."""
    import fcntl
    import threading

    path = built.path
    built.close()
    manifest = json.loads((path / MANIFEST).read_text())
    fd = os.open(path / LOCK_FILE, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)  # the "writer"
    try:
        (path / MANIFEST).write_text(json.dumps({**manifest, "dirty": True}))
        opened: list[EmbeddedStore] = []
        opener = threading.Thread(target=lambda: opened.append(open_store(path, session_cache)))
        opener.start()
        opener.join(timeout=1.5)
        assert opener.is_alive() and not opened  # waiting on the lock
        bm25_files = sorted(p.name for p in (path / "bm25").rglob("*"))
        (path / MANIFEST).write_text(json.dumps(manifest))  # the writer finished cleanly
    finally:
        os.close(fd)
    opener.join(timeout=60)
    assert opened, "the open never finished"
    try:
        assert sorted(p.name for p in (path / "bm25").rglob("*")) == bm25_files  # not repaired: nothing to repair
        assert_consistent(opened[0], docs)
    finally:
        opened[0].close()


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
    assert not (tmp_path / "index.partial").exists()  # a failed build removes its half-built index (issue 21.5)
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
    with pytest.raises(IndexUnusableError, match="rebuild"):
        open_store(copied_index, session_cache)


def test_incomplete_or_corrupt_manifest_is_refused(copied_index, session_cache):
    _edit_manifest(copied_index, complete=False)
    with pytest.raises(IndexUnusableError, match="incomplete"):
        open_store(copied_index, session_cache)
    (copied_index / MANIFEST).write_text("{not json")
    with pytest.raises(IndexUnusableError, match="rebuild"):
        open_store(copied_index, session_cache)


def test_missing_index_is_an_index_error(tmp_path, session_cache):
    with pytest.raises(IndexUnusableError, match="no index"):
        open_store(tmp_path / "does-not-exist", session_cache)
    (tmp_path / "empty").mkdir()
    with pytest.raises(IndexUnusableError, match="no index"):
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


# ---- BM25 in buckets (stores that sync) --------------------------------------------------------------------------


def bucket_layout(store: EmbeddedStore, view: str) -> tuple[int, int, int]:
    """(segments, documents the statistics count, documents held) of a BM25 view."""
    searcher = store._sparse[view].searcher()
    counted = sum(searcher.doc_freq("bucket", f"b{n}") for n in range(store._buckets))
    return searcher.num_segments, counted, searcher.num_docs


def test_many_small_writes_keep_bm25_in_buckets_with_exact_statistics(tmp_path, docs, session_cache):
    """Twelve syncs of one or two documents each: every view stays in at most 7 segments (one per bucket: tantivy
    never merges them), its statistics count exactly the documents it holds, and BM25 scores equal a fresh build's."""
    store = build_index(docs, tmp_path / "index", SETTINGS, session_cache, for_sync=True)
    current = {d.doc_id: d for d in docs}
    try:
        assert store._buckets == 7
        for n in range(12):
            new = make_doc(f"s10_e{n:02d}_c01", [("Joey Tribbiani", f"Sandwich number {n} with meatballs."),
                                                 ("Ross Geller", "Did you eat my sandwich?")], season=10)
            gone = sorted(current)[n % len(current)]
            store.apply([new], [gone] if n % 3 == 0 else [])
            current[new.doc_id] = new
            if n % 3 == 0:
                del current[gone]
            for view in SETTINGS.sparse_views:
                segments, counted, held = bucket_layout(store, view)
                assert segments <= 7 and counted == held == store.count_chunks(view), (n, view)
        assert_consistent(store, list(current.values()))
        fresh = build_index(list(current.values()), tmp_path / "fresh", SETTINGS, session_cache)
        try:
            for view in SETTINGS.sparse_views:
                for q in ["sandwich meatballs", "pizza Monica", "Ross Joey Chandler"]:
                    assert dict(store.search_sparse(view, q, ALL)) == pytest.approx(
                        dict(fresh.search_sparse(view, q, ALL)), rel=1e-5), (view, q)
        finally:
            fresh.close()
    finally:
        store.close()


def test_a_store_built_without_buckets_moves_to_buckets_at_its_first_replace(built, docs, session_cache):
    """An index built before it was synced (or by an older ragfunnel) is rewritten in buckets once, at the first
    write that removes chunks; adding alone keeps its layout."""
    assert built._buckets == 0
    built.upsert([make_doc("s09_e07_c01", [("Janice", "Oh. My. God.")])])
    assert built._buckets == 0
    replaced = make_doc(docs[0].doc_id, [("Ross Geller", "A zeppelin over Minsk!")])
    built.upsert([replaced])
    assert built._buckets == 7 and json.loads((built.path / MANIFEST).read_text())["bm25_buckets"] == 7
    for view in SETTINGS.sparse_views:
        segments, counted, held = bucket_layout(built, view)
        assert segments <= 7 and counted == held
    path = built.path
    built.close()
    reopened = open_store(path, session_cache)
    try:
        assert reopened._buckets == 7 and reopened.search_sparse("scene", "zeppelin", 3)[0][0].startswith(docs[0].doc_id)
    finally:
        reopened.close()


def test_statistics_of_merged_buckets_are_noticed_and_rewritten(tmp_path, docs, session_cache):
    """If a view's segments ever mixed buckets (tantivy merged them) a bucket rewrite would leave deleted documents
    in the statistics: the write notices (the bucket terms count more documents than the view holds) and rewrites
    the whole view."""
    import tantivy

    store = build_index(docs, tmp_path / "index", SETTINGS, session_cache, for_sync=True)
    try:
        view, index = "scene", store._sparse["scene"]
        writer = index.writer(heap_size=20_000_000, num_threads=1)  # a segment holding two documents, one deleted
        for n, doc_id in enumerate(["ghost", "stray"]):
            extra = tantivy.Document(doc_id=doc_id, bucket=f"b{n}", text=f"{doc_id} words")
            extra.add_unsigned("key", 999_990 + n)
            writer.add_document(extra)
        writer.commit()
        writer.delete_documents_by_term("doc_id", "ghost")
        writer.commit()
        writer.wait_merging_threads()
        index.reload()
        assert store._sparse[view].searcher().doc_freq("text", "ghost") == 1  # deleted, still counted
        store.upsert([make_doc("s09_e08_c01", [("Gunther", "Rachel.")])])
        segments, counted, held = bucket_layout(store, view)
        assert counted == held == store.count_chunks(view)
        assert store._sparse[view].searcher().doc_freq("text", "ghost") == 0
    finally:
        store.close()
# ---- filtered vector search: the two ways it runs ------------------------------------------------------------------


@pytest.fixture
def many(tmp_path, session_cache):
    from tests.store.contract import SETTINGS as CONTRACT_SETTINGS
    from tests.store.contract import many_docs

    store = build_index(many_docs(), tmp_path / "index", CONTRACT_SETTINGS, session_cache)
    yield store
    store.close()


def _forbid_scan(store: EmbeddedStore, monkeypatch, view: str) -> None:
    def scanned(*args, **kwargs):
        raise AssertionError("the admitted vectors were scanned")

    monkeypatch.setattr(store, "_held_vectors", lambda *args: None)  # a scan would fetch from the index
    monkeypatch.setattr(store._vectors[view], "get", scanned)


def test_filtered_vector_search_over_the_index_keeps_the_admitted_best(many, encoder, monkeypatch):
    """A filter that admits many vectors searches the index for more neighbours than asked and keeps the admitted
    ones: the same hits a scan of the admitted vectors gives."""
    from ragfunnel.store import embedded
    from ragfunnel.store.filters import Filter
    from tests.store.contract import assert_ranking, cosine_bounds

    where = Filter.parse("group<50")  # half of the 400 documents
    vector = encoder.encode(["Joey eats the pizza over coffee"])[0]
    admitted = {c for c, _ in many.search_dense("w3s1", vector, ALL, exact=True)
                if int(c.split("/")[1][:3]) // 4 < 50}
    expected = {c: s for c, s in many.search_dense("w3s1", vector, ALL, exact=True) if c in admitted}
    scanned = many.search_dense("w3s1", vector, 10, exact=True, where=where)
    monkeypatch.setattr(embedded, "SCAN_HELD_COST", 1e9)  # a scan too dear: search the index
    _forbid_scan(many, monkeypatch, "w3s1")
    for exact in (True, False):
        searched = many.search_dense("w3s1", vector, 10, exact=exact, where=where)
        assert_ranking(searched, expected, cosine_bounds, 10, f"exact={exact}")
    assert [s for _, s in searched] == pytest.approx([s for _, s in scanned], abs=2e-3)


def test_filtered_vector_search_scans_when_the_index_search_finds_too_few(many, encoder, monkeypatch):
    """With no oversampling the index's top 10 hold few admitted vectors: the search falls back to a scan and
    still returns 10, the same as a scan from the start; with the vectors fetched from the index (a view too large
    to hold) too."""
    from ragfunnel.store import embedded
    from ragfunnel.store.filters import Filter

    where = Filter.parse("group<10")  # 40 of 400
    vector = encoder.encode(["Joey eats the pizza over coffee"])[0]
    scanned = many.search_dense("w3s1", vector, 10, exact=True, where=where)
    assert len(scanned) == 10 and all(int(c.split("/")[1][:3]) < 40 for c, _ in scanned)
    monkeypatch.setattr(embedded, "SCAN_HELD_COST", 1e9)
    monkeypatch.setattr(embedded, "SCAN_FETCH_COST", 1e9)
    monkeypatch.setattr(embedded, "OVERSAMPLE", 0.0)
    searches = []
    original = many._vectors["w3s1"].search
    monkeypatch.setattr(many._vectors["w3s1"], "search", lambda *a, **k: searches.append(1) or original(*a, **k))
    assert many.search_dense("w3s1", vector, 10, exact=True, where=where) == scanned
    monkeypatch.setattr(many, "_held_vectors", lambda *args: None)
    fetched = many.search_dense("w3s1", vector, 10, exact=True, where=where)
    assert [c for c, _ in fetched] == [c for c, _ in scanned] and len(searches) == 2  # searched, then scanned
