"""The PostgreSQL store beyond the conformance suite, on the session's real server: tenants isolated by row-level
security with their own BM25 statistics, a reader in another session never sees half a write, migrations, the
settings and `ragfunnel db` / `ragfunnel migrate` commands."""

from __future__ import annotations

import json
import math
import threading
from collections import Counter

import pytest
from typer.testing import CliRunner

from ragfunnel.store import build_index, copy_index, open_store, peek_index
from ragfunnel.store.filters import Filter
from ragfunnel.store import postgres
from ragfunnel.store.postgres import PACKED_POSTINGS, SCHEMA_VERSION
from ragfunnel.types import Chunk, Document, Unit
from tests.store.contract import SETTINGS, contract_docs, many_docs
from tests.test_collections import home  # noqa: F401  (the fixture of the folder story)
from tests.test_collections import test_index_a_folder_then_sync_it as folder_story

pytestmark = pytest.mark.usefixtures("pg_dsn")


def _docs(prefix: str, word: str, n: int) -> list[Document]:
    return [Document(f"{prefix}/{i}", f"{prefix} {i}", (Unit(f"{prefix}/{i}:1", f"{word} coffee number {i} with {prefix}"),),
                     {"n": i}) for i in range(n)]


@pytest.fixture(scope="module")
def tenants(pg_dsn, session_cache):
    """One schema, two tenants: acme holds the topic scenes, globex 400 short documents."""
    acme = build_index(contract_docs(), f"{pg_dsn}#tenants/acme", SETTINGS, session_cache, backend_name="postgres")
    globex = build_index(many_docs(), f"{pg_dsn}#tenants/globex", SETTINGS, session_cache, backend_name="postgres")
    yield acme, globex
    acme.close()
    globex.close()


def test_tenants_see_only_their_own_documents(tenants):
    acme, globex = tenants
    assert acme.doc_ids() == sorted(d.doc_id for d in contract_docs())
    assert globex.doc_ids() == sorted(d.doc_id for d in many_docs())
    assert acme.document("many/001") is None and globex.document(contract_docs()[0].doc_id) is None
    assert all(not c.startswith("many/") for c, _ in acme.search_sparse("scene", "coffee Joey pizza", 50))
    assert all(c.startswith("many/") for c, _ in globex.search_sparse("w3s1", "coffee Joey pizza", 50))
    assert acme.count_matching(Filter.parse("id=many/*")) == 0


def test_row_level_security_holds_against_a_bad_query(tenants):
    """SQL that forgets (or contradicts) the tenant condition still reads and writes only the session's rows."""
    acme, globex = tenants
    conn = acme._conn
    with acme._lock:
        assert conn.execute("SELECT count(*) FROM documents WHERE tenant = 'globex'").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM chunks WHERE true").fetchone()[0] == acme.count_chunks()
        assert conn.execute("SELECT count(DISTINCT tenant) FROM term_stats").fetchone()[0] == 1
        with pytest.raises(Exception, match="row-level security"):
            with conn.transaction():
                conn.execute("INSERT INTO documents VALUES ('globex', 'x', 't', '{}', '[]')")
        assert conn.execute("UPDATE chunks SET text = 'x' WHERE tenant = 'globex'").rowcount == 0
    assert len(globex.doc_ids()) == len(many_docs())


def test_each_tenant_has_its_own_bm25_statistics(tenants, pg_dsn, session_cache):
    """Scores and IDFs of a tenant are those of an index of its documents alone (no other tenant's terms leak)."""
    acme, _ = tenants
    alone = build_index(contract_docs(), f"{pg_dsn}#acme_alone", SETTINGS, session_cache, backend_name="postgres")
    try:
        for q in ["coffee Joey pizza", "Monica Monica Chandler", "espresso machine"]:
            for view in SETTINGS.sparse_views:
                assert acme.term_idfs(view, q) == alone.term_idfs(view, q)
                got, want = acme.search_sparse(view, q, 20), alone.search_sparse(view, q, 20)
                assert [c for c, _ in got] == [c for c, _ in want] and dict(got) == pytest.approx(dict(want))
    finally:
        alone.close()


def test_a_reader_sees_the_old_or_the_new_never_a_mix(pg_dsn, session_cache):
    """A sync's one write swaps 6 documents for 6 others while another session searches: every search returns
    one set whole."""
    old, new = _docs("old", "latte", 6), _docs("new", "mocha", 6)
    location = f"{pg_dsn}#swap"
    writer = build_index(old, location, SETTINGS, session_cache, backend_name="postgres")
    reader = open_store(location, session_cache, backend_name="postgres")
    seen: list[set[str]] = []
    done = threading.Event()

    def read():
        while not done.is_set():
            seen.append({Chunk.parent_of(c).split("/")[0] for c, _ in reader.search_sparse("w3s1", "coffee", 50)}
                        | ({"count"} if len(reader.search_sparse("w3s1", "coffee", 50)) != 6 else set()))

    thread = threading.Thread(target=read)
    thread.start()
    try:
        for i in range(6):
            a, b = (old, new) if i % 2 == 0 else (new, old)
            writer.apply(b, [d.doc_id for d in a])
    finally:
        done.set()
        thread.join()
        writer.close()
        reader.close()
    assert seen and all(s in ({"old"}, {"new"}) for s in seen), [s for s in seen if s not in ({"old"}, {"new"})]


def test_common_terms_are_pruned_without_changing_the_top_k(pg_dsn, session_cache):
    """A query of one rare and several common terms: MaxScore leaves the common terms out of candidate finding,
    and the top 5 are those of scoring every match."""
    docs = [Document(f"d/{i}", "", (Unit(f"d/{i}:1", f"coffee cup table chair {'zebra' if i % 97 == 0 else 'horse'} {i}"),),
                     {}) for i in range(2500)]
    settings = SETTINGS.model_copy(update={"sparse_views": ["utt"], "dense_views": []})
    store = build_index(docs, f"{pg_dsn}#prune", settings, session_cache, backend_name="postgres")
    try:
        query = "zebra coffee cup table"
        terms = store.analyze(query)
        n, avgdl, stats = store._term_stats("utt", terms)
        assert sorted(stats) == sorted(terms)
        weights = {t: __import__("math").log(1 + (n - stats[t][0] + 0.5) / (stats[t][0] + 0.5)) for t in stats}
        essential = store._essential_terms("utt", list(weights), weights, stats, n, avgdl, 5, "true", [])
        assert essential == ["zebra"]  # the common ones only add to the score of zebra's chunks
        full = store._score("utt", list(weights), weights, avgdl, 5, "true", [])
        got = store.search_sparse("utt", query, 5)
        # the same scores (ties among zebra's equal chunks may order apart by a last bit of float summation)
        assert [s for _, s in got] == pytest.approx([s for _, s in full]) and len(got) == 5
        assert all(int(c.split("/")[1].split("#")[0]) % 97 == 0 for c, _ in got)
    finally:
        store.close()


def _sql_top(store, view: str, query: str, limit: int, where: Filter | None = None) -> list[tuple[str, float]]:
    """BM25 top `limit` by the SQL aggregate over every query term's postings (no packed postings, no pruning)."""
    counts = Counter(store.analyze(query))
    n, avgdl, stats = store._term_stats(view, list(counts))
    weights = {t: counts[t] * math.log(1 + (n - stats[t][0] + 0.5) / (stats[t][0] + 0.5)) for t in counts if t in stats}
    filter_sql, filter_params, _ = store._filter(where)
    return store._score(view, list(weights), weights, avgdl, limit, filter_sql, filter_params) if weights else []


def _packed_rows(store) -> list[tuple]:
    with store._lock:
        return store._conn.execute("SELECT view, term, bucket, data FROM posting_blocks ORDER BY 1, 2, 3").fetchall()


def _assert_same_ranking(got: list[tuple[str, float]], want: list[tuple[str, float]]) -> None:
    assert len(got) == len(want)
    assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-12)
    # the same chunks above the last score (equal scores may order apart by a last bit of float summation, and the
    # cut may fall inside a group of equal scores)
    cut = got[-1][1] + 1e-9 if got else 0.0
    assert {c for c, s in got if s > cut} == {c for c, s in want if s > cut}


QUERIES = ["coffee number 7", "latte with old", "number", "mocha coffee with new 12", "zebra"]


def test_packed_postings_rank_as_the_sql_aggregate_across_buckets_and_writes(pg_dsn, session_cache):
    """Unfiltered BM25 reads the packed postings; its top k is the SQL aggregate's, with chunk keys spanning three
    buckets of 65,536 keys, after upserts and deletes, and each packed row is what packing the postings anew gives."""
    store = build_index(_docs("old", "latte", 40), f"{pg_dsn}#packed", SETTINGS, session_cache, backend_name="postgres")
    try:
        with store._lock, store._as_owner():  # the next chunks' keys start just before a bucket's end
            store._conn.execute("ALTER TABLE chunks ALTER COLUMN key RESTART WITH 65530")
        store.apply(_docs("new", "mocha", 30))
        with store._lock, store._as_owner():
            store._conn.execute("ALTER TABLE chunks ALTER COLUMN key RESTART WITH 131060")
        store.apply(_docs("old", "latte", 20), [f"new/{i}" for i in range(0, 30, 3)])  # 20 replaced, 10 deleted
        with store._lock:
            buckets = store._conn.execute("SELECT DISTINCT key >> 16 FROM chunks ORDER BY 1").fetchall()
        assert [b for (b,) in buckets] == [0, 1, 2]
        for query in QUERIES:
            for limit in (1, 5, 100):
                got = store.search_sparse("w3s1", query, limit)
                _assert_same_ranking(got, _sql_top(store, "w3s1", query, limit))
        assert {Chunk.parent_of(c) for c, _ in store.search_sparse("w3s1", "mocha", 100)} == {
            f"new/{i}" for i in range(30) if i % 3}
        for text in ("n=3", "n<4", "n>=5", "id=new/*", "title=old 1*"):  # best chunks asked of the filter in growing batches
            where = Filter.parse(text)
            for query in QUERIES:
                for limit in (1, 5, 100):
                    _assert_same_ranking(store.search_sparse("w3s1", query, limit, where=where),
                                         _sql_top(store, "w3s1", query, limit, where))
        packed = _packed_rows(store)
        with store._lock, store._conn.transaction():  # packed anew, then rolled back
            store._conn.execute("DELETE FROM posting_blocks")
            store._conn.execute(f"INSERT INTO posting_blocks (tenant, view, term, bucket, data) {PACKED_POSTINGS} "
                                "WHERE p.tenant = %s GROUP BY 1, 2, 3, 4", (store.location.tenant,))
            anew = _packed_rows(store)
            raise pytest.importorskip("psycopg").Rollback()
        assert [r[:3] for r in packed] == [r[:3] for r in anew]
        assert all(sorted(_unpack(a)) == sorted(_unpack(b)) for a, b in zip(packed, anew))
    finally:
        store.close()


def test_a_selective_filter_leaves_the_packed_postings_for_sql(pg_dsn, session_cache, monkeypatch):
    """When the best chunks asked of a filter hold fewer than k admitted ones, the SQL aggregate over the admitted
    chunks serves the query, with the same top k."""
    store = build_index(_docs("old", "latte", 60), f"{pg_dsn}#selective", SETTINGS, session_cache, backend_name="postgres")
    try:
        monkeypatch.setattr(postgres, "MAX_FILTER_CHECKS", 8)
        calls = []
        score = store._score
        monkeypatch.setattr(store, "_score", lambda *a, **k: calls.append(a) or score(*a, **k))
        where = Filter.parse("id=old/5*")  # old/5 and old/50-59
        got = store.search_sparse("w3s1", "latte coffee", 5, where=where)
        assert calls and len(got) == 5
        _assert_same_ranking(got, _sql_top(store, "w3s1", "latte coffee", 5, where))
    finally:
        store.close()


def test_a_rebuild_invalidates_the_filter_caches_of_open_readers(pg_dsn, session_cache):
    """A reader caches the chunk keys a selective filter admits; a rebuild (versions start again, keys are new)
    must not be answered from that cache."""
    location = f"{pg_dsn}#rebuilt"
    writer = build_index(_docs("old", "latte", 60), location, SETTINGS, session_cache, backend_name="postgres")
    writer.close()
    reader = open_store(location, session_cache, backend_name="postgres")
    try:
        where = Filter.parse("n=3")
        assert {Chunk.parent_of(c) for c, _ in reader.search_sparse("w3s1", "latte", 10, where=where)} == {"old/3"}
        shifted = [*_docs("pad", "espresso", 25), *_docs("new", "latte", 60)]  # the chunks' keys move
        build_index(shifted, location, SETTINGS, session_cache, backend_name="postgres").close()
        assert {Chunk.parent_of(c) for c, _ in reader.search_sparse("w3s1", "latte", 10, where=where)} == {"new/3"}
    finally:
        reader.close()


def _unpack(row: tuple) -> list[tuple[int, ...]]:
    import numpy as np

    return [tuple(x) for x in np.frombuffer(row[3], dtype=">i4").reshape(-1, 3).tolist()]


def test_an_index_of_schema_version_1_is_migrated_to_packed_postings(pg_dsn, session_cache):
    """An index made before the packed postings (version 1: no posting_blocks), with two tenants: opening it
    migrates it once, packing both tenants' postings, and each tenant's BM25 reads its own."""
    acme = build_index(_docs("old", "latte", 12), f"{pg_dsn}#oldschema/acme", SETTINGS, session_cache,
                       backend_name="postgres")
    globex = build_index(_docs("new", "mocha", 9), f"{pg_dsn}#oldschema/globex", SETTINGS, session_cache,
                         backend_name="postgres")
    globex.close()
    try:
        with acme._lock, acme._as_owner():  # back to version 1
            acme._conn.execute("DROP TABLE posting_blocks")
            acme._conn.execute("DELETE FROM schema_version WHERE version > 1")
    finally:
        acme.close()
    for tenant, word, count in (("acme", "latte", 12), ("globex", "mocha", 9)):
        store = open_store(f"{pg_dsn}#oldschema/{tenant}", session_cache, backend_name="postgres")
        try:
            with store._lock:
                assert store._conn.execute("SELECT max(version) FROM schema_version").fetchone()[0] == SCHEMA_VERSION
                assert store._conn.execute("SELECT count(*) FROM schema_version WHERE version = 2").fetchone()[0] == 1
            got = store.search_sparse("w3s1", f"{word} coffee", 50)
            assert len(got) == count
            _assert_same_ranking(got, _sql_top(store, "w3s1", f"{word} coffee", 50))
            assert store.search_sparse("w3s1", "latte mocha", 50) == store.search_sparse("w3s1", word, 50)
        finally:
            store.close()


def test_copy_index_moves_vectors_without_embedding(pg_dsn, session_cache, tmp_path, monkeypatch):
    source = build_index(contract_docs(), tmp_path / "embedded", SETTINGS, session_cache)
    import ragfunnel.store.postgres as pg

    monkeypatch.setattr(pg, "_embed_chunks", lambda *a, **k: pytest.fail("the copy embedded something"))
    try:
        info = copy_index(source, f"{pg_dsn}#copied", "postgres")
        assert info.fingerprint == source.info().fingerprint
        copied = open_store(f"{pg_dsn}#copied", session_cache, backend_name="postgres")
        try:
            for view in SETTINGS.sparse_views:
                assert [c for c, _ in copied.search_sparse(view, "pizza Monica", 5)] == \
                       [c for c, _ in source.search_sparse(view, "pizza Monica", 5)]
            doc = contract_docs()[2].doc_id
            assert copied.doc_vectors("utt", doc) == pytest.approx(source.doc_vectors("utt", doc), abs=2e-3)
        finally:
            copied.close()
    finally:
        source.close()


def test_schema_version_and_peek(pg_dsn, session_cache):
    store = build_index(contract_docs()[:3], f"{pg_dsn}#versioned", SETTINGS, session_cache, backend_name="postgres")
    try:
        with store._lock:
            assert store._conn.execute("SELECT max(version) FROM schema_version").fetchone()[0] == SCHEMA_VERSION
        assert peek_index(f"{pg_dsn}#versioned", "postgres") == store.info()
        assert peek_index(f"{pg_dsn}#nothing_here", "postgres") is None
    finally:
        store.close()


# ---- settings and commands -------------------------------------------------------------------------------------------


def test_settings_choose_the_backend(tmp_path, monkeypatch):
    from ragfunnel.config import load_settings
    from ragfunnel.errors import ConfigError

    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("RAGFUNNEL_HOME", str(home))
    monkeypatch.delenv("RAGFUNNEL_DSN", raising=False)
    assert load_settings().backend == "embedded" and load_settings().index_location == home / "index"
    (home / "config.toml").write_text('[store]\nbackend = "postgres"\ndsn = "postgresql://u@h:1/db"\n')
    settings = load_settings()
    assert settings.backend == "postgres" and settings.index_location == "postgresql://u@h:1/db#friends"
    assert load_settings(collection="My-Docs").index_location == "postgresql://u@h:1/db#my_docs"
    (home / "config.toml").write_text("")
    monkeypatch.setenv("RAGFUNNEL_DSN", "postgresql://u@h:2/db")
    assert load_settings().backend == "postgres"  # a DSN alone selects the backend
    monkeypatch.delenv("RAGFUNNEL_DSN")
    (home / "config.toml").write_text('[store]\nbackend = "postgres"\n')
    with pytest.raises(ConfigError, match="--dsn"):
        load_settings().index_location
    (home / "config.toml").write_text("")
    import ragfunnel

    client = ragfunnel.open(dsn="postgresql://u@h:3/db")  # nothing connects until first use
    assert client.settings.backend == "postgres" and client.settings.index_location == "postgresql://u@h:3/db#friends"


def test_db_and_migrate_commands(pg_server, tmp_path, monkeypatch, small_index):
    from ragfunnel.cli import app

    runner = CliRunner()
    data = str(pg_server.data_dir)
    status = runner.invoke(app, ["db", "status", "--dir", data])
    assert status.exit_code == 0 and status.stdout.strip().splitlines()[-1] == pg_server.dsn
    again = runner.invoke(app, ["db", "start", "--dir", data])  # already running: left as it is
    assert again.exit_code == 0 and again.stdout.strip().splitlines()[-1] == pg_server.dsn
    assert runner.invoke(app, ["db", "status", "--dir", str(tmp_path / "none")]).exit_code == 1
    monkeypatch.setenv("RAGFUNNEL_DSN", "")  # restored after the test (--dsn sets it for the process)
    result = runner.invoke(app, ["migrate", "--from", "embedded", "--to", "postgres", "--dsn", pg_server.dsn,
                                 "--index", str(small_index.path), "--collection", "small", "-q"])
    assert result.exit_code == 0, result.output
    ask = ["search", "Who did Ross marry?", "--json", "--k", "3", "--mode", "hybrid"]
    on_pg = runner.invoke(app, [*ask, "--dsn", pg_server.dsn, "--collection", "small"])
    assert on_pg.exit_code == 0, on_pg.output
    monkeypatch.setenv("RAGFUNNEL_DSN", "")
    embedded = runner.invoke(app, [*ask, "--index", str(small_index.path)])
    assert embedded.exit_code == 0, embedded.output
    ids = [[hit["id"] for hit in json.loads(r.stdout)["results"]] for r in (on_pg, embedded)]
    assert len(ids[0]) == 3 and ids[0] == ids[1]  # the copy answers as the original


def test_http_searches_during_a_sync(pg_dsn, small_index, session_cache):
    """The HTTP API on a postgres store answers concurrent searches without an error while another process's
    sync replaces documents (each search sees the old or the new index)."""
    from concurrent.futures import ThreadPoolExecutor

    from fastapi.testclient import TestClient

    from ragfunnel.generate.llm import FakeLLM
    from ragfunnel.serve.app import create_app

    location = f"{pg_dsn}#http_sync"
    settings = small_index.settings.model_copy(update={"backend": "postgres", "dsn": pg_dsn, "collection": "http_sync"})
    docs = small_index.docs
    build_index(docs, location, small_index.store.settings, session_cache, backend_name="postgres").close()
    writer = open_store(location, session_cache, backend_name="postgres")
    changed = [Document(d.doc_id, d.title, d.units[::-1], {**d.metadata, "synced": True}) for d in docs[:5]]
    with TestClient(create_app(settings, llm=FakeLLM(), token="")) as client:
        def search(i: int) -> int:
            return client.post("/search", json={"question": "Who did Ross marry?", "mode": "hybrid", "k": 3}).status_code

        with ThreadPoolExecutor(6) as pool:
            futures = [pool.submit(search, i) for i in range(12)]
            writer.apply(changed, [])
            writer.apply(docs[:5], [])
            codes = [f.result() for f in futures]
    writer.close()
    assert codes == [200] * 12


def test_a_folder_collection_syncs_on_postgres(home, pg_dsn, monkeypatch):
    """The folder-collection story of tests/test_collections.py (index, sync adds / updates / deletes, search,
    collections) with the index in PostgreSQL."""
    monkeypatch.setenv("RAGFUNNEL_DSN", pg_dsn)
    folder_story(home)


def test_train_gate_on_postgres_keeps_the_gate_in_the_database(pg_dsn, small_index, session_cache):
    """`ragfunnel train gate` on a PostgreSQL index: the gate is a row of the index, so another process (another
    connection) opening the index uses it, and a rebuild drops it with the vectors it was trained on."""
    from ragfunnel.generate.evaluate import off_topic_training_questions
    from ragfunnel.generate.gate import GATE_FILE, LearnedGate, SimilarityGate, load_gate
    from ragfunnel.pipeline import Pipeline
    from ragfunnel.train.gate import train_gate

    location = f"{pg_dsn}#gated"
    settings = small_index.settings.model_copy(update={"backend": "postgres", "dsn": pg_dsn, "collection": "gated"})
    store = build_index(small_index.docs, location, small_index.store.settings, session_cache, backend_name="postgres")
    pipeline = Pipeline(settings, store=store)
    try:
        assert isinstance(load_gate(pipeline, 0.46), SimilarityGate)
        answerable = ["Who was Joey in love with?", "What did Ross say to Rachel?", "Where is Monica's apartment?",
                      "Why is Chandler upset with Joey?", "What did Phoebe sing?", "Who did Rachel date?",
                      "What does Joey want to eat?", "Who is Ross's sister?"]
        model = train_gate(pipeline, answerable, off_topic_training_questions()[:8], k=3)
        assert model["path"].endswith(f"#gated ({GATE_FILE})")
        other = open_store(location, session_cache, backend_name="postgres")
        try:
            assert json.loads(other.read_artifact(GATE_FILE))["threshold"] == model["threshold"]
            gate = load_gate(Pipeline(settings, store=other), 0.46)
            assert isinstance(gate, LearnedGate) and gate.threshold == model["threshold"]
        finally:
            other.close()
    finally:
        store.close()
    rebuilt = build_index(small_index.docs, location, small_index.store.settings, session_cache, backend_name="postgres")
    try:
        assert rebuilt.read_artifact(GATE_FILE) is None
    finally:
        rebuilt.close()


def test_index_friends_with_dsn_builds_then_finds_it_up_to_date(pg_dsn, tmp_path, monkeypatch):
    """`ragfunnel index --dsn` for the Friends corpus (REVIEW.md: it built the index, then exited 1 with a TypeError
    recording the corpus source beside a DSN): exit 0, a second run finds it up to date, a search on it answers."""
    from ragfunnel.cli import app
    from tests.helpers import write_topics_corpus

    monkeypatch.setenv("RAGFUNNEL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("RAGFUNNEL_DSN", "")  # restored after the test (--dsn sets it for the process)
    corpus = write_topics_corpus(tmp_path / "tiny.jsonl")
    runner = CliRunner()
    built = runner.invoke(app, ["index", "--corpus", str(corpus), "--dsn", pg_dsn, "--quiet"])
    assert built.exit_code == 0, built.output
    again = runner.invoke(app, ["index", "--corpus", str(corpus), "--dsn", pg_dsn, "--quiet"])
    assert again.exit_code == 0 and "up to date" in again.output, again.output
    found = runner.invoke(app, ["search", "pepperoni pizza", "--dsn", pg_dsn, "--json", "--k", "2"])
    assert found.exit_code == 0, found.output
    assert json.loads(found.stdout)["results"][0]["id"] == "s09_e01_c01"
