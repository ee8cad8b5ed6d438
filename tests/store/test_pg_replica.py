"""A hot-standby replica of the session's PostgreSQL serves searches: `ragfunnel db start --replica-of DSN` copies
the primary with pg_basebackup and streams its changes; an index built or synced on the primary is searched on the
replica with the same results, and the replica refuses writes."""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragfunnel.errors import ConfigError
from ragfunnel.store import build_index, open_store
from tests.store.contract import SETTINGS, contract_docs
from tests.store.test_postgres import _docs


def _wait_for_replay(primary_dsn: str, replica_dsn: str, timeout: float = 30.0) -> None:
    import psycopg

    with psycopg.connect(primary_dsn, autocommit=True) as primary:
        target = primary.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
    deadline = time.monotonic() + timeout
    with psycopg.connect(replica_dsn, autocommit=True) as replica:
        while time.monotonic() < deadline:
            if replica.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (str(target),)).fetchone()[0]:
                return
            time.sleep(0.05)
    raise AssertionError(f"the replica did not replay up to {target} in {timeout} s")


@pytest.fixture(scope="module")
def replica(pg_server):
    from ragfunnel.cli import app
    from ragfunnel.store import pgserver

    base = Path(tempfile.mkdtemp(prefix="ragfunnel-replica-"))
    port = pgserver.free_port()
    result = CliRunner().invoke(app, ["db", "start", "--dir", str(base / "data"), "--port", str(port),
                                      "--replica-of", pg_server.dsn])
    assert result.exit_code == 0, result.output
    dsn = result.stdout.strip().splitlines()[-1]
    assert dsn == pgserver.dsn_for(port)
    yield dsn
    pgserver.stop(base / "data")
    shutil.rmtree(base, ignore_errors=True)


def test_a_replica_serves_the_primarys_index_and_its_syncs(pg_dsn, replica, session_cache):
    primary = build_index(contract_docs(), f"{pg_dsn}#replicated", SETTINGS, session_cache, backend_name="postgres")
    try:
        _wait_for_replay(pg_dsn, replica)
        standby = open_store(f"{replica}#replicated", session_cache, backend_name="postgres")
        try:
            assert standby.doc_ids() == primary.doc_ids()
            query = "coffee Joey pizza"
            for view in SETTINGS.sparse_views:
                assert standby.search_sparse(view, query, 10) == primary.search_sparse(view, query, 10)
            for view in SETTINGS.dense_views:
                vector = primary.doc_vectors(view, contract_docs()[1].doc_id)[0]
                assert standby.search_dense(view, vector, 10) == primary.search_dense(view, vector, 10)
            # a sync on the primary reaches the replica's searches
            primary.apply(upserts=_docs("late", "mocha", 3), deletes=[contract_docs()[0].doc_id])
            _wait_for_replay(pg_dsn, replica)
            assert standby.doc_ids() == primary.doc_ids()
            assert any(c.startswith("late/") for c, _ in standby.search_sparse(SETTINGS.sparse_views[0], "mocha", 5))
            with pytest.raises(ConfigError, match="is a read replica .*: index, sync and migrate on its primary"):
                standby.apply(upserts=_docs("refused", "tea", 1))
            with pytest.raises(ConfigError, match="is a read replica"):
                build_index(contract_docs(), f"{replica}#elsewhere", SETTINGS, session_cache, backend_name="postgres")
        finally:
            standby.close()
    finally:
        primary.close()


def test_a_replica_of_no_server_is_a_one_line_error(pg_server):
    from ragfunnel.store import pgserver

    base = Path(tempfile.mkdtemp(prefix="ragfunnel-replica-"))  # not pytest's 0700 root: see the pg_server fixture
    try:
        with pytest.raises(ConfigError, match="could not copy the primary at .*: .*"):
            pgserver.start(base / "data", pgserver.free_port(),
                           replica_of=f"postgresql://postgres@127.0.0.1:{pgserver.free_port()}/ragfunnel")
        with pytest.raises(ConfigError, match="not a PostgreSQL DSN"):
            pgserver.start(base / "data", pgserver.free_port(), replica_of="no such thing")
    finally:
        shutil.rmtree(base, ignore_errors=True)
