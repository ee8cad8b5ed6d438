"""Metadata filters (store/filters.py) compiled to SQL for the PostgreSQL store, with the same meaning.

A condition on a document field becomes an EXISTS over the field's values (`jsonb_array_elements` of the value,
a list's elements, nothing when missing), each compared with the SQL helpers of `FUNCTIONS` the way
`filters._compare` compares them in Python: text ignoring case (code-point order), numbers as numbers (numeric
text counts), dates at the precision of the wanted value, booleans as text, globs as anchored regular expressions.
A negation (`ne`, `nin`) is a NOT EXISTS of its positive. Unit conditions (`section`, `page`) are an EXISTS over
the `units` rows of the chunk's unit range (one unit must satisfy all of them).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from ragfunnel.store.filters import NEGATIONS, Condition, Filter

# Installed into each store's schema by its first migration. IMMUTABLE SQL functions: the planner inlines them.
FUNCTIONS = r"""
CREATE FUNCTION rf_arr(j jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN j IS NULL OR jsonb_typeof(j) = 'null' THEN '[]'::jsonb
              WHEN jsonb_typeof(j) = 'array' THEN j ELSE jsonb_build_array(j) END $$;
CREATE FUNCTION rf_text(j jsonb) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN jsonb_typeof(j) IN ('string', 'number', 'boolean') THEN lower(j #>> '{}') END $$;
CREATE FUNCTION rf_num(j jsonb) RETURNS float8 LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN jsonb_typeof(j) = 'number' THEN (j #>> '{}')::float8
              WHEN jsonb_typeof(j) = 'string' AND btrim(j #>> '{}') ~ '^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$'
                   AND pg_input_is_valid(btrim(j #>> '{}'), 'float8') THEN btrim(j #>> '{}')::float8 END $$;
CREATE FUNCTION rf_stamp_text(j jsonb) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN jsonb_typeof(j) = 'string' AND (
      btrim(j #>> '{}') ~ '^\d{4}-\d{2}-\d{2}$' OR
      btrim(j #>> '{}') ~ '^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$')
      AND pg_input_is_valid(btrim(j #>> '{}'), 'timestamptz') THEN btrim(j #>> '{}') END $$;
-- the wall-clock time of a date or date-time (its zone, if any, dropped)
CREATE FUNCTION rf_wall(j jsonb) RETURNS timestamp LANGUAGE sql IMMUTABLE AS $$
  SELECT (regexp_replace(rf_stamp_text(j), '(Z|[+-]\d{2}:?\d{2})$', ''))::timestamp $$;
CREATE FUNCTION rf_zoned(j jsonb) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
  SELECT rf_stamp_text(j) ~ '(Z|[+-]\d{2}:?\d{2})$' AND rf_stamp_text(j) ~ '[T ]' $$;
"""


class _Params:
    def __init__(self) -> None:
        self.values: list[Any] = []

    def add(self, value: Any) -> str:
        self.values.append(value)
        return "%s"


def _glob_regex(pattern: str) -> str:
    """A shell glob as an anchored POSIX regular expression (`*` crosses `/`, as fnmatch)."""
    out, i = ["^"], 0
    while i < len(pattern):
        ch = pattern[i]
        i += 1
        if ch == "*":
            out.append(".*")
        elif ch == "?":
            out.append(".")
        elif ch == "[":
            j = i
            if j < len(pattern) and pattern[j] == "!":
                j += 1
            if j < len(pattern) and pattern[j] == "]":
                j += 1
            while j < len(pattern) and pattern[j] != "]":
                j += 1
            if j >= len(pattern):
                out.append("\\[")
            else:
                body = pattern[i:j].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                elif body.startswith("^"):
                    body = "\\" + body
                out.append(f"[{body}]")
                i = j + 1
        else:
            out.append("\\" + ch if not ch.isalnum() and ch != " " and ord(ch) < 128 else ch)
    out.append("$")
    return "".join(out)


def _compare(v: str, op: str, wanted: Any, p: _Params) -> str:
    """SQL that is true when the jsonb value `v` compares to `wanted` as `op` (eq, gt, gte, lt, lte, glob)."""
    sql_op = {"eq": "=", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}.get(op)
    if op == "glob":
        return f"rf_text({v}) ~ {p.add(_glob_regex(wanted))}"
    if isinstance(wanted, bool):
        return f"rf_text({v}) COLLATE \"C\" {sql_op} {p.add('true' if wanted else 'false')}"
    if isinstance(wanted, (int, float)):
        return f"rf_num({v}) {sql_op} {p.add(float(wanted))}::float8"
    if isinstance(wanted, dt.datetime):
        if wanted.tzinfo is None:  # wall-clock times on both sides
            return f"rf_wall({v}) {sql_op} {p.add(wanted)}::timestamp"
        offset = wanted.utcoffset() or dt.timedelta(0)
        # a zoned value: compare instants; a value without a zone: its wall clock in the wanted value's zone
        return (f"(CASE WHEN rf_zoned({v}) THEN rf_stamp_text({v})::timestamptz "
                f"ELSE (rf_wall({v}) - {p.add(offset)}::interval) AT TIME ZONE 'UTC' END) {sql_op} {p.add(wanted)}::timestamptz")
    if isinstance(wanted, dt.date):
        return f"rf_wall({v})::date {sql_op} {p.add(wanted)}::date"
    return f"rf_text({v}) COLLATE \"C\" {sql_op} lower({p.add(str(wanted))}) COLLATE \"C\""


def _positive(c: Condition, v: str, p: _Params) -> str:
    op = NEGATIONS.get(c.op, c.op)
    if op == "in":
        return "(" + " OR ".join(_compare(v, "eq", w, p) for w in c.value) + ")"
    wanted = c.value
    return _compare(v, op, wanted, p)


def _document_values(field: str, p: _Params) -> str:
    """SQL (over the documents row `d`) for the jsonb array of the document's values of `field`."""
    if field == "id":
        return "jsonb_build_array(to_jsonb(d.doc_id))"
    parts = field.split(".")
    if len(parts) == 1:
        return f"rf_arr(d.metadata -> {p.add(field)})"
    sql = "rf_arr(CASE WHEN d.metadata ? %s THEN d.metadata -> %s ELSE d.metadata #> %s::text[] END)"
    p.values += [field, field, parts]
    return sql


def _condition(c: Condition, values_sql: str, p: _Params) -> str:
    exists = "NOT EXISTS" if c.op in NEGATIONS else "EXISTS"
    body = _positive(c, "fv.v", p)
    return f"{exists} (SELECT 1 FROM jsonb_array_elements({values_sql}) AS fv(v) WHERE {body})"


def document_sql(where: Filter, p: _Params) -> str:
    """A condition over the documents row `d`: its document conditions hold ("true" when there are none)."""
    parts = []
    for c in where.on_documents:
        values = _document_values(c.field, p)
        parts.append(_condition(c, values, p))
    return " AND ".join(parts) or "true"


def unit_sql(where: Filter, p: _Params) -> str:
    """A condition over the units row `u`: every unit condition holds."""
    parts = []
    for c in where.on_units:
        values = "coalesce(u.section, '[]'::jsonb)" if c.field == "section" else "rf_arr(u.page)"
        parts.append(_condition(c, values, p))
    return " AND ".join(parts) or "true"


def chunk_filter(where: Filter | None, alias: str = "c", doc_ids: list[str] | None = None) -> tuple[str, list[Any]]:
    """SQL over the chunks row `alias` admitting what `where` admits (its document matches, then one unit of its
    range matches the unit conditions), and its parameters. `doc_ids`: the documents the document conditions
    admit, resolved already (a list the chunk's document must be in, instead of the conditions)."""
    if where is None or not where.conditions:
        return "true", []
    p = _Params()
    parts = []
    if doc_ids is not None:
        parts.append(f"{alias}.doc_id = ANY({p.add(doc_ids)}::text[])")
    elif where.on_documents:
        parts.append(f"EXISTS (SELECT 1 FROM documents d WHERE d.tenant = {alias}.tenant AND d.doc_id = {alias}.doc_id "
                     f"AND {document_sql(where, p)})")
    if where.on_units:
        parts.append(f"EXISTS (SELECT 1 FROM units u WHERE u.tenant = {alias}.tenant AND u.doc_id = {alias}.doc_id "
                     f"AND u.idx >= {alias}.start AND u.idx < {alias}.stop AND {unit_sql(where, p)})")
    return " AND ".join(parts), p.values


def document_filter(where: Filter) -> tuple[str, list[Any]]:
    """SQL over the documents row `d`: the documents `where` admits (`count_matching`)."""
    p = _Params()
    sql = document_sql(where, p)
    if where.on_units:
        sql += (f" AND EXISTS (SELECT 1 FROM units u WHERE u.tenant = d.tenant AND u.doc_id = d.doc_id "
                f"AND {unit_sql(where, p)})")
    return sql, p.values
