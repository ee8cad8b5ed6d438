"""The PostgreSQL store passes the Store conformance suite on a real server (the session's `pg_dsn`): each store
in a schema of its own, named after its temporary directory. Its damaged store is what killed clients leave on a
server: a write transaction cut off midway and a rebuild's half-loaded staging schema."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from ragfunnel.store import build_index, open_store
from ragfunnel.store.postgres import Location, schema_name
from tests.store.contract import ContractBackend, StoreContract


def pg_location(dsn: str, location: Path) -> str:
    return f"{dsn}#t_{hashlib.sha1(str(location).encode()).hexdigest()[:16]}"


def kill_a_writer_midway(dsn: str):
    """Leave the store at a location as writers killed midway would: a client whose write transaction had emptied
    every table when its connection died (the server rolls it back), and a rebuild killed after its staging schema
    was half loaded (opening ignores it, the next build drops it). Reopening must answer as before."""

    def damage(location: Path) -> None:
        psycopg = pytest.importorskip("psycopg")
        from psycopg import sql

        loc = Location.parse(pg_location(dsn, location))
        with psycopg.connect(loc.dsn, autocommit=True) as admin:
            writer = psycopg.connect(loc.dsn)
            writer.execute(sql.SQL("SET search_path = {}, public").format(sql.Identifier(loc.schema)))
            writer.execute("TRUNCATE documents, units, chunks, postings, posting_blocks, term_stats, view_stats, meta")
            writer.execute("INSERT INTO meta (tenant, key, value) VALUES (%s, 'complete', 'false')", (loc.tenant,))
            # killed here: the server ends the session (waiting up to 10 s for it to go) and rolls its write back
            assert admin.execute("SELECT pg_terminate_backend(%s, 10000)", (writer.info.backend_pid,)).fetchone()[0]
            staging = sql.Identifier(schema_name(f"{loc.schema[:50]}__build"))
            admin.execute(sql.SQL("CREATE SCHEMA {}").format(staging))
            admin.execute(sql.SQL("CREATE TABLE {}.chunks (chunk_id text)").format(staging))
            admin.execute(sql.SQL("INSERT INTO {}.chunks VALUES ('half-loaded')").format(staging))

    return damage


def kill_while_writing_statistics(store, monkeypatch: pytest.MonkeyPatch) -> None:
    def killed(*args, **kwargs):
        raise KeyboardInterrupt("killed while writing BM25 statistics")

    monkeypatch.setattr(store, "_add_stats", killed)


class TestPostgresStoreContract(StoreContract):
    @pytest.fixture(scope="class")
    @classmethod
    def backend(cls, pg_dsn) -> ContractBackend:
        return ContractBackend(
            "postgres",
            lambda docs, location, settings, cache: build_index(docs, pg_location(pg_dsn, location), settings, cache,
                                                                backend_name="postgres"),
            lambda location, cache: open_store(pg_location(pg_dsn, location), cache, backend_name="postgres"),
            damage=kill_a_writer_midway(pg_dsn),
            kill_next_write=kill_while_writing_statistics,
        )
