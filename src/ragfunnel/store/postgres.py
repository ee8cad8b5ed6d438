"""The PostgreSQL store: documents, units and chunks in tables of one schema per index, BM25 from term statistics
and packed postings kept in SQL tables, pgvector HNSW for vectors, filters and tenants in SQL (the `postgres` extra).

Location: a DSN with the index's schema (and optionally a tenant) after `#`: `postgresql://host/db#friends` or
`postgresql://host/db#docs/acme`. Several processes and machines share one index; a write (`apply`) is one
transaction, so a search during a sync sees the old documents or the new ones, never a mix.

BM25: the chunks of a sparse view keep their analysed terms (our analyzer, run in Python: the same terms as the
embedded store's tantivy index) as a jsonb map term -> frequency with their length; `postings` (one row per term
of a chunk), `term_stats` (document frequency per term) and `view_stats` (chunks and total length per view) are
kept in step by every write, and so is `posting_blocks`: a term's postings packed per bucket of 65,536 chunk keys
into one bytea row. Scores use Lucene's IDF ln(1 + (N - df + 0.5) / (df + 0.5)) and k1 = 1.2, b = 0.75 (exact
lengths, where tantivy rounds lengths of 24+ terms). A query reads its terms' packed postings in one statement and
sums the scores per chunk here, with numpy: a common term's 10^5 postings are a few rows of bytes, where the SQL
aggregate over the postings rows took ~0.5 us a row (250 ms p50 at 1M chunks). Under a filter: a selective
document filter masks the scores with the keys of the chunks it admits; another one is asked about the best chunks
in growing batches (`_score_packed`); and one that admits too few of them is scored in SQL over the chunks it
admits (`_score`: one aggregate over the postings rows), the commonest terms whose summed maximal contribution
cannot lift a chunk into the top k only scored, not used to find candidates (MaxScore); see `search_sparse`. The
statements of one search share one snapshot (`_snapshot`).

Vectors: one HNSW index per dense view (a partial index over that view's rows), `halfvec` when the store's
`vector_dtype` is f16 (the default), `vector` otherwise; `ef` sets `hnsw.ef_search` per query, and filtered
searches use `hnsw.iterative_scan` so that a selective filter still returns k results.

Tenants: every row has a `tenant`; row-level security admits only the rows of the session's tenant
(`ragfunnel.tenant`, read once per statement through `(select current_setting(...))`), and BM25 statistics are
kept per tenant. A connecting role that would bypass the policies (a superuser, the table owner) switches to the
role `ragfunnel_tenant` for everything but DDL.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
import uuid
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragfunnel import __version__
from ragfunnel.analysis import build_analyzer
from ragfunnel.chunking import chunk_documents
from ragfunnel.embedding import EmbeddingCache, shared_encoder
from ragfunnel.errors import ConfigError, IndexUnusableError
from ragfunnel.store.base import IndexInfo, Progress, StoreSettings, WritesThroughApply, chunk_context
from ragfunnel.store.crash import crash_point
from ragfunnel.store.filters import Filter
from ragfunnel.store.vectors import all_vectors
from ragfunnel.store.pgfilters import FUNCTIONS, chunk_filter, document_filter
from ragfunnel.types import Chunk, Document, Unit

K1, B = 1.2, 0.75  # tantivy's BM25 constants
DEFAULT_EF = 64
MAX_EF = 1000  # pgvector's limit on hnsw.ef_search: deeper searches scan exactly
MAX_SCAN_TUPLES = 50_000  # iterative scans of a filtered search stop here; an exact scan of the admitted rows follows
SCAN_ADMITTED_BELOW = 20_000  # a filter admitting fewer documents: an exact scan of their vectors, not the HNSW index
CACHED_FILTERS = 64
# a posting looked up by (term, chunk) costs about as much as this many read in a row by an index-only scan
# (measured on this machine: 0.039 ms a lookup, 0.0005 ms a row read in order)
PROBE_ROWS = 80
# a filtered BM25 query asks the filter about at most this many of its best chunks (read from the packed postings)
# before it scores in SQL only the chunks the filter admits
MAX_FILTER_CHECKS = 50_000
WALK_SHARE = 0.05  # a filter admitting fewer of the documents: the keys of the chunks it admits are read instead
TENANT_ROLE = "ragfunnel_tenant"
DEFAULT_TENANT = "default"
SCHEMA_VERSION = 2  # 2: posting_blocks
ARTIFACT_PREFIX = "artifact:"  # meta rows holding what is trained for the index (the answerability gate)
_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def _psycopg():
    try:
        import psycopg
    except ImportError:
        raise ConfigError("the PostgreSQL store needs the postgres extra: pip install 'ragfunnel[postgres]'") from None
    return psycopg


# ---- where an index lives ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Location:
    dsn: str
    schema: str
    tenant: str = DEFAULT_TENANT

    @classmethod
    def parse(cls, location: str | Path) -> Location:
        text = str(location)
        if not text.startswith(("postgresql://", "postgres://")) and "=" not in text.split("#")[0]:
            raise ConfigError(f"the postgres store needs a DSN (postgresql://user@host:port/db#schema), not {text!r}: "
                              "give --dsn, RAGFUNNEL_DSN or [store] dsn")
        dsn, _, name = text.partition("#")
        schema, _, tenant = (name or "ragfunnel").partition("/")
        schema = schema_name(schema)
        return cls(dsn, schema, tenant or DEFAULT_TENANT)

    def __str__(self) -> str:
        shown = re.sub(r"://([^:@/]+):[^@/]*@", r"://\1:***@", self.dsn)  # never print a password
        return f"{shown}#{self.schema}" + (f"/{self.tenant}" if self.tenant != DEFAULT_TENANT else "")


def schema_name(name: str) -> str:
    """A collection name as a schema name: lower case, other characters as `_`."""
    out = re.sub(r"[^a-z0-9_]", "_", name.lower())
    if not out or not (out[0].isalpha() or out[0] == "_"):
        out = "rf_" + out
    out = out[:63]
    if not _NAME.match(out):
        raise ConfigError(f"cannot name a PostgreSQL schema after {name!r}")
    return out


def location_for(dsn: str, collection: str, tenant: str | None = None) -> str:
    """The store location of a collection on the server of `dsn`."""
    return f"{dsn}#{schema_name(collection)}" + (f"/{tenant}" if tenant else "")


# ---- schema -----------------------------------------------------------------------------------------------------------

def _tables(dim: int, vector_type: str) -> str:
    return f"""
CREATE TABLE schema_version (version int NOT NULL, applied_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE meta (tenant text NOT NULL, key text NOT NULL, value jsonb, PRIMARY KEY (tenant, key));
CREATE TABLE documents (tenant text NOT NULL, doc_id text NOT NULL, title text NOT NULL, metadata jsonb NOT NULL,
    units text NOT NULL);
CREATE TABLE units (tenant text NOT NULL, doc_id text NOT NULL, idx int NOT NULL, section jsonb, page jsonb);
CREATE TABLE chunks (key bigint GENERATED BY DEFAULT AS IDENTITY, tenant text NOT NULL, chunk_id text NOT NULL,
    doc_id text NOT NULL, view text NOT NULL, start int NOT NULL, stop int NOT NULL, text text NOT NULL,
    char_start int NOT NULL, char_end int NOT NULL, section text, tf jsonb, len int,
    embedding {vector_type}({dim}));
CREATE TABLE postings (tenant text NOT NULL, view text NOT NULL, term text NOT NULL, key bigint NOT NULL,
    tf int NOT NULL, len int NOT NULL);
CREATE TABLE term_stats (tenant text NOT NULL, view text NOT NULL, term text NOT NULL, df int NOT NULL,
    max_tf real NOT NULL DEFAULT 0, PRIMARY KEY (tenant, view, term));
CREATE TABLE view_stats (tenant text NOT NULL, view text NOT NULL, n bigint NOT NULL, total_len bigint NOT NULL,
    PRIMARY KEY (tenant, view));
{POSTING_BLOCKS}
{FUNCTIONS}
"""


# a term's postings packed per bucket of 65,536 chunk keys, (key - bucket start, tf, len) as big-endian int4 each:
# a query reads a common term's ~10^5 postings as a few rows of bytes instead of 10^5 rows. Stored uncompressed
# (EXTERNAL): read whole on every query, never worth a decompression.
BUCKET_BITS = 16
POSTING_BLOCKS = """CREATE TABLE posting_blocks (tenant text NOT NULL, view text NOT NULL, term text NOT NULL,
    bucket int NOT NULL, data bytea NOT NULL);
ALTER TABLE posting_blocks ALTER COLUMN data SET STORAGE EXTERNAL;"""
PACKED_POSTINGS = (f"SELECT p.tenant, p.view, p.term, (p.key >> {BUCKET_BITS})::int, string_agg(int4send("
                   f"(p.key & {(1 << BUCKET_BITS) - 1})::int) || int4send(p.tf) || int4send(p.len), ''::bytea) "
                   "FROM postings p")
PACKED_DTYPE = np.dtype(">i4")


TENANT_TABLES = ("meta", "documents", "units", "chunks", "postings", "term_stats", "view_stats", "posting_blocks")


def _indexes(settings: StoreSettings, vector_type: str) -> list[str]:
    """Built after the bulk load (each in one pass over the loaded rows)."""
    ops = "halfvec_cosine_ops" if vector_type == "halfvec" else "vector_cosine_ops"
    out = [
        "ALTER TABLE documents ADD PRIMARY KEY (tenant, doc_id)",
        "ALTER TABLE units ADD PRIMARY KEY (tenant, doc_id, idx)",
        "ALTER TABLE chunks ADD PRIMARY KEY (key)",
        "CREATE UNIQUE INDEX chunks_id ON chunks (tenant, chunk_id)",
        "CREATE INDEX chunks_doc ON chunks (tenant, doc_id, view, key)",
        "CREATE INDEX chunks_view ON chunks (tenant, view, key)",
    ]
    # postings by term (with tf and length: scored by an index-only scan): btree over text equality, which row-level
    # security lets a query use (a GIN index over jsonb or tsvector it does not: their operators are not leakproof)
    out.append("ALTER TABLE postings ADD PRIMARY KEY (tenant, view, term, key)")
    out.append("CREATE INDEX postings_scored ON postings (tenant, view, term) INCLUDE (key, tf, len)")
    out.append("CREATE INDEX postings_key ON postings (tenant, key)")
    out.append("ALTER TABLE posting_blocks ADD PRIMARY KEY (tenant, view, term, bucket)")
    for view in settings.dense_views:
        out.append(f"CREATE INDEX {_ident('chunks_hnsw_' + view)} ON chunks USING hnsw (embedding {ops}) "
                   f"WITH (m = {settings.hnsw_connectivity}, ef_construction = {settings.hnsw_expansion_add}) "
                   f"WHERE view = {_lit(view)}")
    return out


def _policies(schema: str, tables: Sequence[str] = TENANT_TABLES) -> list[str]:
    out = []
    for table in tables:
        out += [
            f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY",
            f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY",
            f"CREATE POLICY tenant_rows ON {table} USING (tenant = (SELECT current_setting('ragfunnel.tenant'))) "
            f"WITH CHECK (tenant = (SELECT current_setting('ragfunnel.tenant')))",
        ]
    return out


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _lit(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


# ---- the store ----------------------------------------------------------------------------------------------------------

class PostgresStore(WritesThroughApply):
    def __init__(self, location: Location, settings: StoreSettings, cache: EmbeddingCache | None, conn: Any,
                 meta: dict[str, Any]):
        self.location = location
        self.settings = settings
        self.cache = cache
        self._conn = conn
        self._meta = meta
        self._lock = threading.RLock()
        self._analyzer = build_analyzer(settings.analyzer)
        self._vector_type = meta.get("vector_type", "halfvec")
        self._dim = int(meta.get("dim") or 384)
        # filter -> (index version, the documents its document conditions admit): resolved once per write
        self._admitted: OrderedDict[Filter, tuple[Any, list[str]]] = OrderedDict()
        # (view, filter) -> (index version, the sorted keys of the chunks it admits), for selective filters
        self._admitted_chunks: OrderedDict[tuple[str, Filter], tuple[Any, np.ndarray]] = OrderedDict()

    # ---- connections --------------------------------------------------------------------------------------------

    @staticmethod
    def connect(location: Location) -> Any:
        psycopg = _psycopg()
        try:
            # prepare_threshold None: every statement planned with its values (a view's partial index, a hashed
            # list of admitted documents), never a generic plan
            conn = psycopg.connect(location.dsn, autocommit=True, prepare_threshold=None)
        except psycopg.OperationalError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ConfigError(f"cannot connect to PostgreSQL at {Location(location.dsn, location.schema)}: {first} "
                              "(start one with `ragfunnel db start`)") from None
        conn.execute("SELECT set_config('search_path', %s, false), set_config('ragfunnel.tenant', %s, false)",
                     (f"{_ident(location.schema)}, public", location.tenant))
        return conn

    @staticmethod
    def _bypasses_rls(conn: Any) -> bool:
        row = conn.execute("SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user").fetchone()
        return bool(row and row[0])

    @staticmethod
    def _enter_tenant_role(conn: Any) -> None:
        """Row-level security binds every statement from here on: a role that would bypass it takes the tenant role."""
        if PostgresStore._bypasses_rls(conn):
            conn.execute(f"SET ROLE {TENANT_ROLE}")

    @contextmanager
    def _as_owner(self) -> Iterator[None]:
        """DDL (indexes) runs as the connecting role."""
        self._conn.execute("RESET ROLE")
        try:
            yield
        finally:
            self._enter_tenant_role(self._conn)

    def snapshot(self) -> Any:
        return self._snapshot()

    @contextmanager
    def _snapshot(self) -> Iterator[None]:
        """The statements of one read see one snapshot: a write that commits between two of them is in neither."""
        with self._lock:
            if self._conn.info.transaction_status != _psycopg().pq.TransactionStatus.IDLE:
                yield  # inside a transaction already (a write's): its snapshot
                return
            with self._conn.transaction():
                self._conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                yield

    def _rows(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[tuple]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    # ---- life cycle ---------------------------------------------------------------------------------------------

    def close(self) -> None:
        with self._lock:
            if not self._conn.closed:
                self._conn.close()

    def read_artifact(self, name: str) -> str | None:
        rows = self._rows("SELECT value FROM meta WHERE tenant = %s AND key = %s",
                          (self.location.tenant, ARTIFACT_PREFIX + name))
        return str(rows[0][0]) if rows else None

    def write_artifact(self, name: str, text: str) -> str:
        # in the database, not beside the process: every server process and machine reading this index sees it
        with self._lock:
            _refuse_replica(self._conn, self.location)
            self._set_meta(**{ARTIFACT_PREFIX + name: text})
        return f"{self.location} ({name})"

    def info(self) -> IndexInfo:
        meta = self._read_meta()
        return IndexInfo(backend="postgres", settings=self.settings, encoder_model_id=meta.get("encoder_model_id"),
                         documents=int(meta.get("documents") or 0),
                         chunks={str(k): int(v) for k, v in (meta.get("chunks") or {}).items()},
                         built_at=meta.get("built_at"))

    def _read_meta(self) -> dict[str, Any]:
        return dict(self._rows("SELECT key, value FROM meta WHERE tenant = %s AND key NOT LIKE 'artifact:%%'",
                               (self.location.tenant,)))

    # ---- writes -------------------------------------------------------------------------------------------------

    def apply(self, upserts: Sequence[Document] = (), deletes: Sequence[str] = (),
              progress: Progress | None = None) -> int:
        """Upsert `upserts` and delete `deletes` in one transaction (an id in both is upserted): readers in other
        sessions see all of it or none of it. Returns how many of `deletes` existed."""
        with self._lock:
            _refuse_replica(self._conn, self.location)
        docs = list({d.doc_id: d for d in upserts}.values())
        ids = [d.doc_id for d in docs]
        gone = [d for d in dict.fromkeys(deletes) if d not in set(ids)]
        chunks = chunk_documents(docs, self.settings.views, chunk_context(self.settings, self.cache))
        vectors = self._embed(chunks, progress)  # before the transaction: nothing is held while embedding
        tenant = self.location.tenant
        with self._lock, self._conn.transaction():
            # one writer per tenant at a time: statistics rows are updated in one order, never concurrently
            self._conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"{self.location.schema}/{tenant}",))
            existing = [r[0] for r in self._conn.execute(
                "SELECT doc_id FROM documents WHERE tenant = %s AND doc_id = ANY(%s)", (tenant, gone)).fetchall()]
            if not docs and not existing:
                return 0
            removed = [*ids, *existing]
            stale = self._blocks_of(removed)
            self._remove_stats(removed)
            for table in ("chunks", "units", "documents"):
                self._conn.execute(f"DELETE FROM {table} WHERE tenant = %s AND doc_id = ANY(%s)", (tenant, removed))
            crash_point("store:before-commit")
            self._load(docs, chunks, vectors, progress)
            self._add_stats(ids)
            self._repack(stale | self._blocks_of(ids))
            version = self._conn.execute("SELECT value FROM meta WHERE tenant = %s AND key = 'version'",
                                         (tenant,)).fetchone()
            self._write_counts(version=int(version[0] if version else 0) + 1)
        return len(existing)

    def _embed(self, chunks: list[Chunk], progress: Progress | None) -> dict[str, np.ndarray]:
        return _embed_chunks(self.settings, self.cache, chunks, progress)

    def _load(self, docs: Sequence[Document], chunks: Sequence[Chunk], vectors: dict[str, np.ndarray],
              progress: Progress | None = None, bulk: bool = False) -> None:
        """Write documents, units and chunks (with their BM25 terms and vectors): COPY for a bulk load into new
        tables, INSERT for a write under row-level security (which refuses COPY FROM)."""
        tenant = self.location.tenant
        self._write("documents (tenant, doc_id, title, metadata, units)",
                    ((tenant, d.doc_id, d.title, json.dumps(d.metadata), json.dumps([u.to_row() for u in d.units]))
                     for d in docs), bulk)
        self._write("units (tenant, doc_id, idx, section, page)",
                    ((tenant, d.doc_id, i, json.dumps(list(u.section)), None if u.page is None else json.dumps(u.page))
                     for d in docs for i, u in enumerate(d.units)), bulk)
        self._write_chunks(chunks, vectors, progress, bulk)

    def _write(self, table: str, rows: Iterator[tuple] | Any, bulk: bool) -> None:
        with self._conn.cursor() as cur:
            if bulk:
                with cur.copy(f"COPY {table} FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
                return
            rows = list(rows)
            if rows:
                marks = ", ".join(["%s"] * len(rows[0]))
                cur.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)

    def _write_chunks(self, chunks: Sequence[Chunk], vectors: dict[str, np.ndarray], progress: Progress | None = None,
                      bulk: bool = False, analyzed: dict[str, Counter] | None = None) -> None:
        tenant, sparse = self.location.tenant, set(self.settings.sparse_views)

        def rows() -> Iterator[tuple]:
            for i, c in enumerate(chunks):
                tf = len_ = None
                if c.view in sparse:
                    counts = analyzed.get(c.chunk_id) if analyzed else None
                    if counts is None:
                        counts = Counter(self._analyzer.analyze(c.text))
                    tf, len_ = json.dumps(counts), sum(counts.values())
                vector = vectors.get(c.chunk_id)
                yield (tenant, c.chunk_id, c.doc_id, c.view, c.start, c.end, c.text, c.char_start, c.char_end,
                       json.dumps(list(c.section)) if c.section else None, tf, len_,
                       _vector_text(vector) if vector is not None else None)
                if progress and i % 5000 == 0:
                    progress("loading", i, len(chunks))

        self._write("chunks (tenant, chunk_id, doc_id, view, start, stop, text, char_start, char_end, section, tf, "
                    "len, embedding)", rows(), bulk)
        if progress:
            progress("loading", len(chunks), len(chunks))

    def _remove_stats(self, doc_ids: list[str]) -> None:
        tenant = self.location.tenant
        self._conn.execute("DELETE FROM postings WHERE tenant = %(t)s AND key IN (SELECT key FROM chunks WHERE "
                           "tenant = %(t)s AND doc_id = ANY(%(ids)s))", {"t": tenant, "ids": doc_ids})
        self._conn.execute(
            """UPDATE term_stats ts SET df = ts.df - g.n FROM (
                 SELECT c.view, t.term, count(*) AS n FROM chunks c, jsonb_object_keys(c.tf) AS t(term)
                 WHERE c.tenant = %(t)s AND c.doc_id = ANY(%(ids)s) AND c.tf IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2) g
               WHERE ts.tenant = %(t)s AND ts.view = g.view AND ts.term = g.term""", {"t": tenant, "ids": doc_ids})
        self._conn.execute("DELETE FROM term_stats WHERE tenant = %s AND df <= 0", (tenant,))
        self._conn.execute(
            """UPDATE view_stats vs SET n = vs.n - g.n, total_len = vs.total_len - g.l FROM (
                 SELECT view, count(*) AS n, sum(len) AS l FROM chunks
                 WHERE tenant = %(t)s AND doc_id = ANY(%(ids)s) AND tf IS NOT NULL GROUP BY 1) g
               WHERE vs.tenant = %(t)s AND vs.view = g.view""", {"t": tenant, "ids": doc_ids})

    def _add_stats(self, doc_ids: list[str] | None) -> None:
        """Add the statistics of the chunks of `doc_ids` (None: of every chunk, after a bulk load)."""
        tenant = self.location.tenant
        scope = "" if doc_ids is None else "AND c.doc_id = ANY(%(ids)s)"
        params = {"t": tenant, "ids": doc_ids}
        self._conn.execute(
            f"""INSERT INTO postings (tenant, view, term, key, tf, len)
                SELECT %(t)s, c.view, t.term, c.key, t.tf::int, c.len FROM chunks c, jsonb_each_text(c.tf) AS t(term, tf)
                WHERE c.tenant = %(t)s AND c.tf IS NOT NULL {scope} ORDER BY 2, 3, 4""", params)
        self._conn.execute(
            f"""INSERT INTO term_stats (tenant, view, term, df, max_tf)
                SELECT %(t)s, c.view, t.term, count(*), max(t.tf::real / c.len) FROM chunks c,
                  jsonb_each_text(c.tf) AS t(term, tf)
                WHERE c.tenant = %(t)s AND c.tf IS NOT NULL {scope} GROUP BY 2, 3 ORDER BY 2, 3
                ON CONFLICT (tenant, view, term) DO UPDATE SET df = term_stats.df + excluded.df,
                  max_tf = greatest(term_stats.max_tf, excluded.max_tf)""", params)
        self._conn.execute(
            f"""INSERT INTO view_stats (tenant, view, n, total_len)
                SELECT %(t)s, c.view, count(*), coalesce(sum(c.len), 0) FROM chunks c
                WHERE c.tenant = %(t)s AND c.tf IS NOT NULL {scope} GROUP BY 2 ORDER BY 2
                ON CONFLICT (tenant, view) DO UPDATE SET n = view_stats.n + excluded.n,
                  total_len = view_stats.total_len + excluded.total_len""", params)
        if doc_ids is None:
            self._conn.execute(f"INSERT INTO posting_blocks (tenant, view, term, bucket, data) {PACKED_POSTINGS} "
                               "WHERE p.tenant = %s GROUP BY 1, 2, 3, 4", (tenant,))

    def _blocks_of(self, doc_ids: list[str]) -> set[tuple[str, str, int]]:
        """The (view, term, bucket) of the packed postings the chunks of `doc_ids` are in."""
        if not doc_ids:
            return set()
        rows = self._conn.execute(
            f"""SELECT DISTINCT c.view, t.term, (c.key >> {BUCKET_BITS})::int FROM chunks c, jsonb_object_keys(c.tf) AS t(term)
               WHERE c.tenant = %s AND c.doc_id = ANY(%s) AND c.tf IS NOT NULL""", (self.location.tenant, doc_ids)).fetchall()
        return {(v, t, int(b)) for v, t, b in rows}

    def _repack(self, blocks: set[tuple[str, str, int]]) -> None:
        """Pack `blocks` again from the postings (after a write changed them; one left empty is deleted)."""
        if not blocks:
            return
        views, terms, buckets = (list(x) for x in zip(*sorted(blocks)))
        params = {"t": self.location.tenant, "v": views, "terms": terms, "b": buckets}
        touched = "unnest(%(v)s::text[], %(terms)s::text[], %(b)s::int[]) AS a(view, term, bucket)"
        self._conn.execute(f"""DELETE FROM posting_blocks pb USING {touched} WHERE pb.tenant = %(t)s
                               AND pb.view = a.view AND pb.term = a.term AND pb.bucket = a.bucket""", params)
        self._conn.execute(
            f"""INSERT INTO posting_blocks (tenant, view, term, bucket, data) {PACKED_POSTINGS} JOIN {touched}
                  ON p.view = a.view AND p.term = a.term AND p.key >= (a.bucket::bigint << {BUCKET_BITS})
                  AND p.key < ((a.bucket::bigint + 1) << {BUCKET_BITS})
                WHERE p.tenant = %(t)s GROUP BY 1, 2, 3, 4""", params)

    def _write_counts(self, **extra: Any) -> None:
        tenant = self.location.tenant
        documents = self._conn.execute("SELECT count(*) FROM documents WHERE tenant = %s", (tenant,)).fetchone()[0]
        counts = dict(self._conn.execute(
            "SELECT view, count(*) FROM chunks WHERE tenant = %s GROUP BY view", (tenant,)).fetchall())
        self._set_meta(documents=documents, chunks={v: int(counts.get(v, 0)) for v in self.settings.views}, **extra)

    def _set_meta(self, **values: Any) -> None:
        psycopg = _psycopg()
        with self._conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO meta (tenant, key, value) VALUES (%s, %s, %s) "
                "ON CONFLICT (tenant, key) DO UPDATE SET value = excluded.value",
                [(self.location.tenant, k, psycopg.types.json.Jsonb(v)) for k, v in values.items()])

    # ---- reads --------------------------------------------------------------------------------------------------

    def document(self, doc_id: str) -> Document | None:
        rows = self._rows("SELECT doc_id, title, metadata, units FROM documents WHERE tenant = %s AND doc_id = %s",
                          (self.location.tenant, doc_id))
        return _document(*rows[0]) if rows else None

    def doc_metadata(self, doc_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        rows = dict(self._rows("SELECT doc_id, metadata FROM documents WHERE tenant = %s AND doc_id = ANY(%s)",
                               (self.location.tenant, list(doc_ids))))
        return {d: rows[d] for d in doc_ids if d in rows}

    def doc_ids(self) -> list[str]:
        return [r[0] for r in self._rows("SELECT doc_id FROM documents WHERE tenant = %s ORDER BY doc_id COLLATE \"C\"",
                                         (self.location.tenant,))]

    def count_matching(self, where: Filter) -> int:
        sql, params = document_filter(where)
        return self._rows(f"SELECT count(*) FROM documents d WHERE d.tenant = %s AND {sql}",
                          [self.location.tenant, *params])[0][0]

    _CHUNK = "chunk_id, doc_id, view, start, stop, text, char_start, char_end, section"

    def chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        rows = self._rows(f"SELECT {self._CHUNK} FROM chunks WHERE tenant = %s AND chunk_id = ANY(%s)",
                          (self.location.tenant, list(chunk_ids)))
        found = {r[0]: _chunk(*r) for r in rows}
        return [found[c] for c in chunk_ids if c in found]

    def count_chunks(self, view: str | None = None) -> int:
        if view is None:
            return self._rows("SELECT count(*) FROM chunks WHERE tenant = %s", (self.location.tenant,))[0][0]
        return self._rows("SELECT count(*) FROM chunks WHERE tenant = %s AND view = %s",
                          (self.location.tenant, view))[0][0]

    def view_chunks(self, view: str) -> list[Chunk]:
        rows = self._rows(f"SELECT {self._CHUNK} FROM chunks WHERE tenant = %s AND view = %s ORDER BY key",
                          (self.location.tenant, view))
        return [_chunk(*r) for r in rows]

    def doc_chunks(self, view: str, doc_id: str) -> list[Chunk]:
        rows = self._rows(f"SELECT {self._CHUNK} FROM chunks WHERE tenant = %s AND doc_id = %s AND view = %s "
                          "ORDER BY key", (self.location.tenant, doc_id, view))
        return [_chunk(*r) for r in rows]

    def _require(self, view: str, views: list[str], kind: str) -> None:
        if view not in views:
            raise IndexUnusableError(
                f"this index has no {kind} index for view {view!r} (it has {sorted(views) or 'none'}); "
                "rebuild with the view enabled: ragfunnel index --rebuild"
            )

    def _filter(self, where: Filter | None) -> tuple[str, list[Any], int | None]:
        """SQL over the chunks row `c` for `where`, its parameters, and how many documents its document
        conditions admit (None: no document conditions). The documents are resolved with the compiled conditions
        once per filter and write (the index's version), then given as a list: a 1% filter reaches its chunks by
        the document index instead of testing the conditions on every chunk an index scan passes."""
        if where is None or not where.conditions:
            return "true", [], None
        docs = None
        if where.on_documents:
            docs = self._admitted_docs(Filter(where.on_documents))
            if docs is None:  # every document: no document condition left
                if not where.on_units:
                    return "true", [], None
                sql, params = chunk_filter(Filter(where.on_units))
                return sql, params, None
        sql, params = chunk_filter(where, doc_ids=docs)
        return sql, params, (len(docs) if docs is not None else None)

    def _admitted_docs(self, where: Filter) -> list[str] | None:
        """The documents `where` admits (None: all of them)."""
        version, documents = self._index_state()

        def resolve() -> list[str] | None:
            sql, params = document_filter(where)
            docs = [r[0] for r in self._rows(f"SELECT d.doc_id FROM documents d WHERE d.tenant = %s AND {sql}",
                                             [self.location.tenant, *params])]
            return None if len(docs) == documents else docs

        return self._cached(self._admitted, where, version, resolve)

    def _index_state(self) -> tuple[tuple[Any, Any], int]:
        """What a filter cache entry is valid for (the index's version and build id: a rebuild starts its versions
        again, with new chunk keys) and how many documents the index holds, in one read."""
        meta = dict(self._rows("SELECT key, value FROM meta WHERE tenant = %s AND key IN ('version', 'documents', "
                               "'build_id')", (self.location.tenant,)))
        return (meta.get("version"), meta.get("build_id")), int(meta.get("documents") or -1)

    def _cached(self, cache: OrderedDict, key: Any, version: Any, compute: Callable[[], Any]) -> Any:
        """`cache[key]` if it was computed at `version`, else `compute()` kept there (the last `CACHED_FILTERS`)."""
        with self._lock:
            hit = cache.get(key)
            if hit is not None and hit[0] == version:
                cache.move_to_end(key)
                return hit[1]
        value = compute()
        with self._lock:
            cache[key] = (version, value)
            if len(cache) > CACHED_FILTERS:
                cache.popitem(last=False)
        return value

    # ---- sparse -------------------------------------------------------------------------------------------------

    def analyze(self, text: str) -> list[str]:
        return self._analyzer.analyze(text)

    def count_sparse(self, view: str) -> int:
        self._require(view, self.settings.sparse_views, "BM25")
        rows = self._rows("SELECT n FROM view_stats WHERE tenant = %s AND view = %s", (self.location.tenant, view))
        return int(rows[0][0]) if rows else 0

    def _term_stats(self, view: str, terms: Sequence[str]) -> tuple[int, float, dict[str, tuple[int, float]]]:
        """(chunks in the view, their average length, term -> (document frequency, its highest tf / length))."""
        rows = self._rows(
            """SELECT v.n, v.total_len, t.term, t.df, t.max_tf FROM view_stats v
               LEFT JOIN term_stats t ON t.tenant = v.tenant AND t.view = v.view AND t.term = ANY(%(terms)s)
               WHERE v.tenant = %(t)s AND v.view = %(v)s""",
            {"t": self.location.tenant, "v": view, "terms": list(terms)})
        if not rows:
            return 0, 0.0, {}
        n, total = int(rows[0][0]), int(rows[0][1])
        stats = {term: (int(df), float(mx)) for _, _, term, df, mx in rows if term is not None}
        return n, (total / n if n else 0.0), stats

    def term_idfs(self, view: str, query: str) -> dict[str, float | None]:
        self._require(view, self.settings.sparse_views, "BM25")
        terms = list(dict.fromkeys(self.analyze(query)))
        n, _, stats = self._term_stats(view, terms)
        n = max(n, 1)
        return {t: math.log(1 + (n - stats[t][0] + 0.5) / (stats[t][0] + 0.5)) if t in stats else None for t in terms}

    def search_sparse(self, view: str, query: str, limit: int, where: Filter | None = None) -> list[tuple[str, float]]:
        """BM25 top `limit`, exact. Without a filter: the packed postings of the query's terms, read in one statement
        and scored here (`_score_packed`). Under a filter, in SQL over the chunks it admits: one aggregate over the
        postings of every query term (an index-only scan per term). A query that mixes rare and common terms: the
        commonest terms whose summed upper bounds cannot lift a chunk into the top k (below a lower bound of the
        k-th score, from the rarer terms' postings) are "non-essential" (MaxScore): candidates come from the
        essential terms' postings only, and the non-essential terms are looked up for those candidates, when that
        reads fewer postings than scanning theirs."""
        self._require(view, self.settings.sparse_views, "BM25")
        counts = Counter(self.analyze(query))
        if not counts or limit <= 0:
            return []
        with self._snapshot():
            return self._search_sparse(view, counts, limit, where)

    def _search_sparse(self, view: str, counts: Counter, limit: int, where: Filter | None) -> list[tuple[str, float]]:
        n, avgdl, stats = self._term_stats(view, list(counts))
        terms = [t for t in counts if t in stats]
        if not terms or n == 0:
            return []
        weights = {t: counts[t] * math.log(1 + (n - stats[t][0] + 0.5) / (stats[t][0] + 0.5)) for t in terms}
        filter_sql, filter_params, admitted = self._filter(where)
        if filter_sql == "true":
            return self._score_packed(view, weights, avgdl, limit)
        version, documents = self._index_state()
        share = None if admitted is None else admitted / max(1, documents)
        if share is not None and share < WALK_SHARE:  # a selective document filter: the keys of its chunks
            keys = self._admitted_keys(view, where, filter_sql, filter_params, version)
            return self._score_packed(view, weights, avgdl, limit, admitted_keys=keys)
        top = self._score_packed(view, weights, avgdl, limit, filter_sql, filter_params, share)
        if top is not None:
            return top
        essential = self._essential_terms(view, terms, weights, stats, n, avgdl, limit, filter_sql, filter_params)
        rest = [t for t in terms if t not in essential]
        if rest and sum(stats[t][0] for t in essential) * len(rest) * PROBE_ROWS > sum(stats[t][0] for t in rest):
            essential = terms  # looking the common terms up for every candidate would cost more than reading them
        return self._score(view, essential, weights, avgdl, limit, filter_sql, filter_params)

    def match_sparse(self, view: str, query: str, where: Filter | None = None) -> list[str]:
        """Every chunk holding all the query's terms: the keys whose postings cover every term, among the chunks
        the filter admits (the aggregation path's exhaustive list; unranked)."""
        self._require(view, self.settings.sparse_views, "BM25")
        terms = list(dict.fromkeys(self.analyze(query)))
        if not terms:
            return []
        tenant = self.location.tenant
        filter_sql, filter_params, _ = self._filter(where)
        matched = ("SELECT p.key FROM postings p WHERE p.tenant = %s AND p.view = %s AND p.term = ANY(%s::text[]) "
                   "GROUP BY p.key HAVING count(*) = %s")
        sql = (f"SELECT c.chunk_id FROM ({matched}) m JOIN chunks c ON c.key = m.key "
               f"WHERE c.tenant = %s AND {filter_sql} ORDER BY c.chunk_id")
        rows = self._rows(sql, [tenant, view, terms, len(terms), tenant, *filter_params])
        return sorted(r[0] for r in rows)

    def _score(self, view: str, essential: list[str], weights: dict[str, float], avgdl: float, limit: int,
               filter_sql: str, filter_params: list[Any], partial: bool = False) -> list[tuple[str, float]]:
        """The top `limit` of the chunks holding one of `essential`, scored on every term of `weights` (`partial`:
        on the essential terms only, a lower bound) from the postings, among the chunks the filter admits."""
        terms = list(weights)
        tenant = self.location.tenant
        rest = [] if partial else [t for t in terms if t not in essential]
        weight = "(%s::float8[])[array_position(%s::text[], p.term)]"
        # float8 constants: a bare 2.2 is numeric in SQL, and numeric arithmetic on every posting costs ~5x
        score = (f"sum({weight} * (p.tf * {K1 + 1}::float8) / (p.tf + {K1}::float8 * ({1 - B}::float8 + "
                 f"{B}::float8 * p.len / %s::float8)))")
        per_term = [[weights[t] for t in terms], terms, avgdl]
        # under a filter the postings join the chunks it admits before they are summed (a 1% filter: the admitted
        # chunks are found by the document index, then their postings by key)
        admit = f"JOIN chunks c ON c.key = p.key WHERE c.tenant = %s AND {filter_sql} AND" if filter_sql != "true" else "WHERE"
        admit_params = [tenant, *filter_params] if filter_sql != "true" else []
        scored = (f"SELECT p.key, {score} AS score FROM postings p {admit} p.tenant = %s AND p.view = {_lit(view)} "
                  "AND p.term = ANY(%s::text[]) GROUP BY p.key")
        params: list[Any] = [*per_term, *admit_params, tenant, essential]
        if rest:  # the non-essential terms' contributions, looked up for each candidate
            scored = (f"SELECT cand.key, cand.score + coalesce((SELECT {score} FROM postings p WHERE p.tenant = %s "
                      f"AND p.view = {_lit(view)} AND p.term = ANY(%s::text[]) AND p.key = cand.key), 0) AS score "
                      f"FROM ({scored}) cand")
            params = [*per_term, tenant, rest, *params]
        sql = (f"SELECT c.chunk_id, s.score FROM ({scored} ORDER BY score DESC, key LIMIT %s) s "
               "JOIN chunks c ON c.key = s.key ORDER BY s.score DESC, s.key")
        params.append(limit)
        return [(cid, float(sc)) for cid, sc in self._rows(sql, params) if sc and sc > 0]

    def _score_packed(self, view: str, weights: dict[str, float], avgdl: float, limit: int,
                      filter_sql: str = "true", filter_params: Sequence[Any] = (), admitted_share: float | None = None,
                      admitted_keys: np.ndarray | None = None) -> list[tuple[str, float]] | None:
        """The top `limit` of the chunks holding a term of `weights` (and admitted by the filter), from the terms'
        packed postings: the same sums as `_score` (its float arithmetic in its order), summed per chunk by key.
        A filter is given either as the sorted keys of the chunks it admits, or as SQL: then the chunks are taken
        best first and asked of the filter in growing batches, and None is returned when `MAX_FILTER_CHECKS` of
        them leave fewer than `limit` admitted (`_score` serves that filter)."""
        keys, scores = self._packed_scores(view, weights, avgdl)
        if admitted_keys is not None:
            at = np.minimum(np.searchsorted(admitted_keys, keys), max(len(admitted_keys) - 1, 0))
            admitted = admitted_keys[at] == keys if len(admitted_keys) else np.zeros(len(keys), dtype=bool)
            keys, scores, filter_sql = keys[admitted], scores[admitted], "true"
        walk = filter_sql != "true"
        if not walk:
            batch = limit
        elif admitted_share is not None:
            batch = int(min(MAX_FILTER_CHECKS, max(4 * limit, 2 * limit / max(admitted_share, 1e-9))))
        else:
            batch = 10 * limit
        checked, found = 0, []
        while len(found) < limit and checked < len(keys):
            ranked_keys, ranked_scores = _ranked_prefix(keys, scores, checked + batch)
            new_keys = ranked_keys[checked:].tolist()
            ids = self._chunk_ids(new_keys, filter_sql, filter_params)
            found += [(ids[k], s) for k, s in zip(new_keys, ranked_scores[checked:].tolist()) if k in ids and s > 0]
            checked = len(ranked_keys)
            if not walk:
                break
            if checked >= MAX_FILTER_CHECKS and len(found) < limit and checked < len(keys):
                return None
            batch = min(batch * 4, MAX_FILTER_CHECKS - checked)
        return found[:limit]

    def _admitted_keys(self, view: str, where: Filter, filter_sql: str, filter_params: Sequence[Any],
                       version: Any) -> np.ndarray:
        """The sorted keys of the chunks of `view` that `where` admits, read once per filter and write."""
        def resolve() -> np.ndarray:
            rows = self._rows(f"SELECT c.key FROM chunks c WHERE c.tenant = %s AND c.view = %s AND {filter_sql}",
                              [self.location.tenant, view, *filter_params])
            return np.sort(np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)))

        return self._cached(self._admitted_chunks, (view, where), version, resolve)

    def _packed_scores(self, view: str, weights: dict[str, float], avgdl: float) -> tuple[np.ndarray, np.ndarray]:
        """Every chunk key holding a term of `weights`, and its BM25 score (from one read of the packed postings)."""
        with self._lock, self._conn.cursor(binary=True) as cur:
            # in one order: each chunk sums its terms in the same order, so equal scores are equal to the bit
            rows = cur.execute("SELECT term, bucket, data FROM posting_blocks WHERE tenant = %s AND view = %s "
                               "AND term = ANY(%s::text[]) ORDER BY term, bucket",
                               (self.location.tenant, view, list(weights))).fetchall()
        if not rows:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        packed = [np.frombuffer(data, dtype=PACKED_DTYPE).reshape(-1, 3) for _, _, data in rows]
        sizes = [len(a) for a in packed]
        postings = np.concatenate(packed).astype(np.int64)
        keys = postings[:, 0] + np.repeat([int(b) << BUCKET_BITS for _, b, _ in rows], sizes)
        weight = np.repeat([weights[t] for t, _, _ in rows], sizes)
        tf, length = postings[:, 1].astype(np.float64), postings[:, 2].astype(np.float64)
        scores = weight * (tf * (K1 + 1)) / (tf + K1 * ((1 - B) + B * length / avgdl))
        first, span = int(keys.min()), int(keys.max() - keys.min()) + 1
        if span <= max(4 * len(keys), 1 << 20):  # keys dense enough: sum into an array over their range
            totals = np.bincount(keys - first, weights=scores, minlength=span)
            held = np.flatnonzero(totals)
            return held + first, totals[held]
        chunk_keys, inverse = np.unique(keys, return_inverse=True)
        return chunk_keys, np.bincount(inverse, weights=scores)

    def _chunk_ids(self, keys: list[int], filter_sql: str = "true", filter_params: Sequence[Any] = ()) -> dict[int, str]:
        """key -> chunk id of those of `keys` the filter admits."""
        return dict(self._rows(f"SELECT c.key, c.chunk_id FROM chunks c WHERE c.tenant = %s AND c.key = ANY(%s::bigint[]) "
                               f"AND {filter_sql}", [self.location.tenant, keys, *filter_params]))

    def _essential_terms(self, view: str, terms: list[str], weights: dict[str, float],
                         stats: dict[str, tuple[int, float]], n: int, avgdl: float, limit: int,
                         filter_sql: str, filter_params: list[Any]) -> list[str]:
        """The query terms a top-`limit` chunk must hold one of. Terms are ordered rarest first; when the rarer
        terms' chunks are few, their partial scores (rare terms only) give a lower bound of the k-th score, and the
        commonest terms whose summed upper bounds stay under it are dropped."""
        order = sorted(terms, key=lambda t: stats[t][0])
        if len(order) < 2 or sum(stats[t][0] for t in order[1:]) < 2000:
            return order  # few matches in all: scoring them all is as cheap as pruning
        rare, matches = [order[0]], stats[order[0]][0]
        for t in order[1:]:
            if matches + stats[t][0] > 5000:
                break
            rare.append(t)
            matches += stats[t][0]
        if len(rare) == len(order):
            return order
        top = self._score(view, rare, {t: weights[t] for t in rare}, avgdl, limit, filter_sql, filter_params,
                          partial=True)
        if len(top) < limit:
            return order  # too few chunks hold the rare terms: any chunk of the common ones may enter the top k
        threshold = top[-1][1]
        # a term's upper bound: its weight times the largest tf (k1 + 1) / (tf + k1 (1 - b + b len / avgdl)) over
        # its chunks, bounded through the largest tf / len seen (the score rises with tf and falls with len)
        bound = {t: weights[t] * _tf_bound(stats[t][1], avgdl) for t in terms}
        essential, dropped = list(order), 0.0
        for t in reversed(order):  # drop the commonest while what they could add cannot reach the k-th score
            if dropped + bound[t] >= threshold or len(essential) == 1:
                break
            dropped += bound[t]
            essential.pop()
        return essential

    # ---- dense --------------------------------------------------------------------------------------------------

    def count_dense(self, view: str) -> int:
        self._require(view, self.settings.dense_views, "vector")
        meta = self._read_meta()
        return int((meta.get("chunks") or {}).get(view, 0))

    def search_dense(self, view: str, vector: np.ndarray, limit: int, ef: int | None = None, exact: bool = False,
                     where: Filter | None = None, pool: int | None = None) -> list[tuple[str, float]]:
        self._require(view, self.settings.dense_views, "vector")
        if limit <= 0:
            return []
        query = _vector_text(np.asarray(vector, dtype=np.float32))
        filter_sql, filter_params, admitted = self._filter(where)
        distance = f"c.embedding <=> %s::{self._vector_type}"
        # few admitted documents: their vectors scanned exactly (found by the document index), not the HNSW graph
        exact = exact or limit > MAX_EF or (admitted is not None and admitted <= SCAN_ADMITTED_BELOW)
        order = f"({distance}) + 0" if exact else distance  # an expression HNSW cannot serve: a scan
        sql = (f"SELECT c.chunk_id, 1 - ({distance}) AS score FROM chunks c WHERE c.tenant = %s AND "
               f"c.view = {_lit(view)} AND c.embedding IS NOT NULL AND {filter_sql} ORDER BY {order}, c.key LIMIT %s")
        params = [query, self.location.tenant, *filter_params, query, limit]
        with self._lock, self._conn.transaction():
            if exact:
                self._conn.execute("SET LOCAL enable_indexscan = off")
            else:
                self._conn.execute("SELECT set_config('hnsw.ef_search', %s, true), "
                                   "set_config('hnsw.iterative_scan', 'strict_order', true), "
                                   "set_config('hnsw.max_scan_tuples', %s, true)",
                                   (str(min(max(ef or DEFAULT_EF, limit), MAX_EF)), str(MAX_SCAN_TUPLES)))
            rows = self._conn.execute(sql, params).fetchall()
            if len(rows) < limit and where is not None and not exact:
                # the iterative scan gave up before `limit` admitted rows: scan the admitted rows exactly
                self._conn.execute("SET LOCAL enable_indexscan = off")
                rows = self._conn.execute(sql.replace(f"ORDER BY {distance}", f"ORDER BY ({distance}) + 0"),
                                          params).fetchall()
        return [(cid, float(score)) for cid, score in rows]

    def doc_vectors(self, view: str, doc_id: str) -> np.ndarray:
        self._require(view, self.settings.dense_views, "vector")
        rows = self._rows("SELECT embedding::text FROM chunks WHERE tenant = %s AND doc_id = %s AND view = %s "
                          "ORDER BY key", (self.location.tenant, doc_id, view))
        if not rows:
            return np.zeros((0, self._dim), dtype=np.float32)
        return np.stack([_parse_vector(r[0]) for r in rows])


def _embed_chunks(settings: StoreSettings, cache: EmbeddingCache | None, chunks: Sequence[Chunk],
                  progress: Progress | None) -> dict[str, np.ndarray]:
    """The vectors of the chunks of dense views (through the embedding cache; derived views made from them)."""
    if not any(c.view in settings.dense_views for c in chunks):
        return {}
    if cache is None:
        raise IndexUnusableError("writing vectors needs the embedding cache (a bug: the store was opened without one)")
    return all_vectors(settings, cache, chunks, progress)


# ---- values ---------------------------------------------------------------------------------------------------------------

def _ranked_prefix(keys: np.ndarray, scores: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """The first `m` of (keys, scores) by score descending, then key: an exact prefix of the whole order."""
    if len(keys) > m:
        kth = np.partition(scores, len(scores) - m)[len(scores) - m]
        keep = scores >= kth  # ties at the m-th score all kept, then cut after ordering by key
        keys, scores = keys[keep], scores[keep]
    order = np.lexsort((keys, -scores))[:m]
    return keys[order], scores[order]


def _tf_bound(max_tf_ratio: float, avgdl: float) -> float:
    """An upper bound of tf (k1 + 1) / (tf + k1 (1 - b + b len / avgdl)) over chunks whose tf / len <= ratio
    (tf <= len): at a given ratio r the score rises with len (tf = r len), towards (k1 + 1) r avgdl / (r avgdl + k1 b)
    ... bounded by the k1 + 1 limit."""
    if max_tf_ratio <= 0:
        return 0.0
    r = max_tf_ratio
    # tf = r*len: f(len) = r len (k1+1) / (r len + k1 (1-b) + k1 b len / avgdl), increasing in len; its limit:
    return min(K1 + 1, (K1 + 1) * r / (r + K1 * B / max(avgdl, 1e-9)))


def _vector_text(vector: np.ndarray) -> str:
    v = np.asarray(vector, dtype=np.float32)
    return "[" + ",".join(repr(float(x)) for x in v) + "]"


def _parse_vector(text: str) -> np.ndarray:
    return np.array(json.loads(text), dtype=np.float32)


def _document(doc_id: str, title: str, metadata: dict[str, Any], units: str) -> Document:
    return Document(doc_id, title, tuple(Unit.from_row(u) for u in json.loads(units)), metadata)


def _chunk(chunk_id: str, doc_id: str, view: str, start: int, end: int, text: str, char_start: int, char_end: int,
           section: str | None) -> Chunk:
    return Chunk(chunk_id, doc_id, view, text, start, end, char_start, char_end,
                 tuple(json.loads(section)) if section else ())


# ---- build / open / peek ------------------------------------------------------------------------------------------------

def _schema_exists(conn: Any, schema: str) -> bool:
    return conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone() is not None


def _ensure_role(conn: Any, schema: str) -> None:
    """The role sessions that would bypass row-level security switch to, with rights on the schema's tables."""
    if not PostgresStore._bypasses_rls(conn):
        return
    if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (TENANT_ROLE,)).fetchone():
        try:
            conn.execute(f"CREATE ROLE {TENANT_ROLE} NOLOGIN NOSUPERUSER NOBYPASSRLS")
        except _psycopg().errors.DuplicateObject:
            pass
    conn.execute(f"GRANT {TENANT_ROLE} TO current_user")
    conn.execute(f"GRANT USAGE ON SCHEMA {_ident(schema)} TO {TENANT_ROLE}")
    conn.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {_ident(schema)} TO {TENANT_ROLE}")
    conn.execute(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA {_ident(schema)} TO {TENANT_ROLE}")


def _schema_version(conn: Any, schema: str) -> int:
    version = conn.execute(f"SELECT coalesce(max(version), 0) FROM {_ident(schema)}.schema_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise IndexUnusableError(f"the index in schema {schema} was made by a newer ragfunnel (schema version {version}, "
                          f"this one knows {SCHEMA_VERSION}): upgrade ragfunnel")
    return int(version)


def _in_recovery(conn: Any) -> bool:
    """A hot standby (a read replica): it takes no writes, so no migration and no grants; its primary made them."""
    return bool(conn.execute("SELECT pg_is_in_recovery()").fetchone()[0])


def _refuse_replica(conn: Any, loc: Location) -> None:
    if _in_recovery(conn):
        raise ConfigError(f"the PostgreSQL at {Location(loc.dsn, loc.schema)} is a read replica (hot standby): "
                          "index, sync and migrate on its primary; the replica serves searches")


def _connect_for_writes(loc: Location) -> Any:
    conn = PostgresStore.connect(loc)
    try:
        _refuse_replica(conn, loc)
    except ConfigError:
        conn.close()
        raise
    return conn


def _migrate(conn: Any, schema: str) -> None:
    """Bring the schema to `SCHEMA_VERSION` (versioned migrations, each once, under a lock)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"migrate:{schema}",))
        version = _schema_version(conn, schema)
        for number, statements in MIGRATIONS.items():
            if number > version:
                for statement in statements:
                    conn.execute(statement)
                conn.execute(f"INSERT INTO {_ident(schema)}.schema_version (version) VALUES (%s)", (number,))


# version -> the statements that bring an index of the version before to it (`_tables` makes the newest directly)
MIGRATIONS: dict[int, list[str]] = {
    2: [
        POSTING_BLOCKS,
        # as the owner the policies bind only while FORCEd: every tenant's postings are packed
        "ALTER TABLE postings NO FORCE ROW LEVEL SECURITY",
        f"INSERT INTO posting_blocks (tenant, view, term, bucket, data) {PACKED_POSTINGS} GROUP BY 1, 2, 3, 4",
        "ALTER TABLE postings FORCE ROW LEVEL SECURITY",
        "ALTER TABLE posting_blocks ADD PRIMARY KEY (tenant, view, term, bucket)",
        *_policies("", ["posting_blocks"]),
        "ANALYZE posting_blocks",
    ],
}


def build_postgres(docs: Iterable[Document], location: str | Path, settings: StoreSettings, cache: EmbeddingCache,
                   progress: Progress | None = None, for_sync: bool = False) -> PostgresStore:
    """Build the index of `docs` at `location`. A schema of its own tenant only (or a new one) is built as a new
    schema (tables, COPY, statistics, then the indexes) and swapped in by rename in one transaction: the old index
    serves until then. A tenant of a schema other tenants share is replaced in one transaction."""
    loc = Location.parse(location)
    conn = _connect_for_writes(loc)
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        shared = _schema_exists(conn, loc.schema) and conn.execute(
            f"SELECT 1 FROM {_ident(loc.schema)}.meta WHERE tenant <> %s LIMIT 1", (loc.tenant,)).fetchone() is not None
    except Exception:
        conn.close()
        raise
    docs = list({d.doc_id: d for d in docs}.values())
    encoder = shared_encoder(settings.encoder, settings.max_length)
    if shared:
        conn.close()
        store = open_postgres(loc, cache, check_encoder=False, settings=settings)
        store.apply(docs, [d for d in store.doc_ids() if d not in {x.doc_id for x in docs}], progress)
        with store._lock, store._conn.transaction():
            store._set_meta(settings=settings.model_dump(), encoder_model_id=encoder.model_id,
                            built_at=time.strftime("%Y-%m-%dT%H:%M:%S"), complete=True)
        return store
    conn.close()
    chunks = chunk_documents(docs, settings.views, chunk_context(settings, cache))
    vectors = _embed_chunks(settings, cache, chunks, progress)
    bulk_load(loc, settings, encoder.model_id, encoder.dim or 384, docs, chunks, vectors, progress)
    return open_postgres(loc, cache)


def bulk_load(location: str | Path | Location, settings: StoreSettings, encoder_model_id: str, dim: int,
              docs: Sequence[Document], chunks: Sequence[Chunk], vectors: dict[str, np.ndarray],
              progress: Progress | None = None, built_at: str | None = None) -> None:
    """Write a whole index of given chunks and vectors (nothing chunked or embedded: `ragfunnel migrate`, the
    scale benchmark, a build) into a new schema (`<name>__build`: tables, COPY, statistics and postings, then the
    indexes) swapped in by rename when complete, so readers use the old index until then."""
    loc = location if isinstance(location, Location) else Location.parse(location)
    conn = _connect_for_writes(loc)
    staging = schema_name(f"{loc.schema[:50]}__build")
    vector_type = "halfvec" if settings.vector_dtype == "f16" else "vector"
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        with conn.transaction():
            conn.execute(f"DROP SCHEMA IF EXISTS {_ident(staging)} CASCADE")  # a killed build's leftovers
            conn.execute(f"CREATE SCHEMA {_ident(staging)}")
            conn.execute(f"SET LOCAL search_path = {_ident(staging)}, public")
            conn.execute(_tables(dim, vector_type))
            conn.execute("INSERT INTO schema_version (version) VALUES (%s)", (SCHEMA_VERSION,))
        conn.execute(f"SET search_path = {_ident(staging)}, public")
        store = PostgresStore(Location(loc.dsn, staging, loc.tenant), settings, None, conn,
                              {"vector_type": vector_type, "dim": dim})
        with conn.transaction():
            store._load(docs, chunks, vectors, progress, bulk=True)
            store._add_stats(None)
            store._write_counts(settings=settings.model_dump(), encoder_model_id=encoder_model_id,
                                vector_type=vector_type, dim=dim, built_at=built_at or time.strftime("%Y-%m-%dT%H:%M:%S"),
                                ragfunnel_version=__version__, complete=True, version=1, build_id=uuid.uuid4().hex)
        if progress:
            progress("indexing", 0, 1)
        for statement in [*_indexes(settings, vector_type), *_policies(staging)]:
            conn.execute(statement)
        # the visibility map too: postings are read by index-only scans
        conn.execute("VACUUM ANALYZE postings, posting_blocks, chunks, documents, units, term_stats, view_stats, meta")
        if progress:
            progress("indexing", 1, 1)
        with conn.transaction():  # the swap: readers see the old index until this commits
            conn.execute(f"DROP SCHEMA IF EXISTS {_ident(loc.schema)} CASCADE")
            conn.execute(f"ALTER SCHEMA {_ident(staging)} RENAME TO {_ident(loc.schema)}")
            _ensure_role(conn, loc.schema)
    finally:
        conn.close()


def _open_meta(conn: Any, loc: Location) -> dict[str, Any] | None:
    if not _schema_exists(conn, loc.schema):
        return None
    rows = conn.execute("SELECT key, value FROM meta WHERE tenant = %s", (loc.tenant,)).fetchall()
    meta = dict(rows)
    return meta if meta.get("complete") else None


def open_postgres(location: str | Path | Location, cache: EmbeddingCache | None, check_encoder: bool = True,
                  settings: StoreSettings | None = None) -> PostgresStore:
    loc = location if isinstance(location, Location) else Location.parse(location)
    conn = PostgresStore.connect(loc)
    try:
        if _schema_exists(conn, loc.schema):
            if not _in_recovery(conn):
                _migrate(conn, loc.schema)
                _ensure_role(conn, loc.schema)
            elif _schema_version(conn, loc.schema) < SCHEMA_VERSION:
                raise IndexUnusableError(f"the index at {loc} has an older schema than this ragfunnel's, and this server is "
                                  "a read replica: open it once on the primary, which migrates it")
            PostgresStore._enter_tenant_role(conn)
        meta = _open_meta(conn, loc)
        if meta is None and settings is None:
            raise IndexUnusableError(f"no index at {loc}: build it with `ragfunnel index` (or migrate one: ragfunnel migrate)")
        meta = meta or {}
        stored = StoreSettings.from_stored(meta["settings"]) if meta.get("settings") else settings
        if check_encoder:
            model_id = shared_encoder(stored.encoder, stored.max_length).model_id
            if meta.get("encoder_model_id") != model_id:
                raise IndexUnusableError(f"the index at {loc} was built with the embedding model "
                                  f"{meta.get('encoder_model_id')!r}, not {model_id!r}: rebuild with `ragfunnel index --rebuild`")
        if not meta.get("vector_type"):  # a tenant new to a shared schema: the schema's vector column decides
            row = conn.execute("SELECT value FROM meta WHERE key = 'vector_type' LIMIT 1").fetchone()
            meta["vector_type"] = row[0] if row else "halfvec"
    except Exception:
        conn.close()
        raise
    return PostgresStore(loc, stored, cache, conn, meta)


def peek_postgres(location: str | Path) -> IndexInfo | None:
    """What the complete index at `location` holds, without loading an encoder; None when there is none (or
    no server answers)."""
    try:
        loc = Location.parse(location)
        conn = PostgresStore.connect(loc)
    except ConfigError:
        return None
    try:
        meta = _open_meta(conn, loc)
    finally:
        conn.close()
    if meta is None:
        return None
    return IndexInfo(backend="postgres", settings=StoreSettings.from_stored(meta["settings"]),
                     encoder_model_id=meta.get("encoder_model_id"), documents=int(meta.get("documents") or 0),
                     chunks={str(k): int(v) for k, v in (meta.get("chunks") or {}).items()},
                     built_at=meta.get("built_at"))


