"""Metadata filters, applied inside the index: a `Filter` is a conjunction of `Condition`s (field, operator, value)
that a store's sparse and dense search take as `where=`, so a filter that matches 1% of the documents still
returns k results (docs/filters.md).

Fields
- `id`: the document id; `section` and `page`: facts of a unit (a paragraph's heading path, a PDF page);
- anything else: a key of the document's metadata (`path`, `format`, `title`, front-matter and JSONL fields,
  Friends' `season` / `episode`), a dotted name (`author.name`) reaching into a nested object.

A chunk matches when its document matches the document conditions and at least one of its units matches every
unit condition (the same unit: `section=Methods` with `page=3` wants a Methods paragraph on page 3). A chunk that
spans units (a window, a whole document) therefore matches when any unit inside it does.

Operators: `eq`, `ne`, `in`, `gt`, `gte`, `lt`, `lte`, `glob`. Values are read the same way from the command line
and from JSON: numbers are numbers, `2020-01-01` (optionally with a time) a date, true / false booleans, anything
else text. Text compares ignoring case; numbers compare with numbers (a numeric string in the metadata counts),
dates with dates (at the precision of the wanted value: `date<=2020-01-01` includes that whole day). A list in
the metadata (front-matter `tags`) matches when any element does (`ne`: when none equals). A missing field matches
only `ne`. Globs are shell-style as in `--include`: `*` also crosses `/`, so `path=reviews/*` is every file below
reviews/.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ragfunnel.errors import QueryError
from ragfunnel.types import Unit

ID_FIELD = "id"
UNIT_FIELDS = ("section", "page")
GLOB_CHARS = frozenset("*?[")
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$")
_FIELD = re.compile(r"^[A-Za-z_][\w.\-]*$")
# FIELD OP VALUE on the command line; ` in ` / ` not in ` need the spaces, the symbols do not
_EXPRESSION = re.compile(r"^\s*(?P<field>[^\s=<>!]+?)\s*(?P<op>>=|<=|!=|==|=|>|<|\s(?:not\s+in|in)\s)\s*(?P<value>.*?)\s*$", re.IGNORECASE)
_SYMBOLS = {"=": "eq", "==": "eq", "!=": "ne", ">": "gt", ">=": "gte", "<": "lt", "<=": "lte", "in": "in", "not in": "nin"}
FILTER_HELP = ("write FIELD=VALUE, FIELD!=VALUE, FIELD>=VALUE (>, <, <=), 'FIELD in A,B' or 'FIELD not in A,B'; "
               "a VALUE with * ? [ is a glob (path=reviews/*)")


class FilterError(QueryError):
    """A filter that cannot be read (the message says how to write it)."""


# ---- values ---------------------------------------------------------------------------------------------------------

def literal(value: Any) -> Any:
    """A value as a filter reads it: numbers, dates and booleans out of text; other JSON scalars as they are."""
    if isinstance(value, (bool, int, float)):
        return value
    if not isinstance(value, str):
        raise FilterError(f"a filter value must be text, a number or a boolean, not {json_name(value)}")
    text = value.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]  # quoted: text as written
    if _NUMBER.match(text):
        number = float(text)
        return int(number) if number.is_integer() and "." not in text and "e" not in text.lower() else number
    if _DATE.match(text) or _DATETIME.match(text):
        try:
            return dt.date.fromisoformat(text) if _DATE.match(text) else dt.datetime.fromisoformat(text)
        except ValueError:
            raise FilterError(f"{text!r} is not a valid date (write YYYY-MM-DD)") from None
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    return text


def json_name(value: Any) -> str:
    return {dict: "an object", list: "a list", type(None): "null"}.get(type(value), type(value).__name__)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and _NUMBER.match(value.strip()):
        return float(value)
    return None


def _moment(value: Any, like: dt.date) -> dt.date | None:
    """`value` as a date (or a date-time when `like` is one), comparable with `like`."""
    if isinstance(value, dt.datetime):
        moment: dt.date = value
    elif isinstance(value, dt.date):
        moment = value
    elif isinstance(value, str) and (_DATE.match(value.strip()) or _DATETIME.match(value.strip())):
        try:
            moment = literal(value)
        except FilterError:
            return None
    else:
        return None
    if isinstance(like, dt.datetime):
        if not isinstance(moment, dt.datetime):
            moment = dt.datetime.combine(moment, dt.time())
        if (moment.tzinfo is None) != (like.tzinfo is None):  # compare wall-clock times when one side has no zone
            moment = moment.replace(tzinfo=like.tzinfo)
        return moment
    return moment.date() if isinstance(moment, dt.datetime) else moment


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, (dict, list)):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value).casefold()


def _compare(actual: Any, wanted: Any) -> int | None:
    """-1, 0 or 1 as `actual` is below, equal to or above `wanted`; None when they cannot be compared."""
    if isinstance(wanted, bool):
        left, right = _text(actual), _text(wanted)
        return None if left is None else (left > right) - (left < right)
    if isinstance(wanted, (int, float)):
        number = _number(actual)
        return None if number is None else (number > wanted) - (number < wanted)
    if isinstance(wanted, dt.date):
        moment = _moment(actual, wanted)
        return None if moment is None else (moment > wanted) - (moment < wanted)
    left, right = _text(actual), wanted.casefold()
    return None if left is None else (left > right) - (left < right)


@lru_cache(maxsize=256)
def _glob(pattern: str) -> re.Pattern[str]:
    return re.compile(fnmatch.translate(pattern.casefold()))


def _equal(actual: Any, wanted: Any) -> bool:
    return _compare(actual, wanted) == 0


OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "eq": _equal,
    "in": lambda actual, wanted: any(_equal(actual, w) for w in wanted),
    "gt": lambda actual, wanted: (_compare(actual, wanted) or 0) > 0,
    "gte": lambda actual, wanted: _compare(actual, wanted) in (0, 1),
    "lt": lambda actual, wanted: (_compare(actual, wanted) or 0) < 0,
    "lte": lambda actual, wanted: _compare(actual, wanted) in (0, -1),
    "glob": lambda actual, wanted: (text := _text(actual)) is not None and bool(_glob(wanted).fullmatch(text)),
}
# Negations: true when no value of the field (and so also a missing field) has the positive one.
NEGATIONS = {"ne": "eq", "nin": "in"}
RANGES = ("gt", "gte", "lt", "lte")
OPERATOR_NAMES = (*OPERATORS, *NEGATIONS)
_SYMBOL_OF = {"eq": "=", "ne": "!=", "gt": ">", "gte": ">=", "lt": "<", "lte": "<=", "in": " in ", "nin": " not in ", "glob": "="}


# ---- conditions and filters -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Condition:
    """`field op value`; `value` is a tuple for `in` / `nin`, a lower-cased pattern for `glob`."""

    field: str
    op: str
    value: Any

    @classmethod
    def make(cls, field: str, op: str, value: Any) -> Condition:
        if not isinstance(field, str) or not _FIELD.match(field):
            raise FilterError(f"filter field {field!r}: use a metadata key (letters, digits, _ . -), id, section or page")
        if op not in OPERATOR_NAMES:
            raise FilterError(f"unknown filter operator {op!r} on {field}: use one of {', '.join(OPERATOR_NAMES)}")
        if op in ("in", "nin"):
            values = value if isinstance(value, (list, tuple)) else [value]
            if not values:
                raise FilterError(f"'{field} {op}' needs at least one value")
            value = tuple(literal(v) for v in values)
        elif op == "glob":
            if not isinstance(value, str) or not value:
                raise FilterError(f"a glob on {field} must be non-empty text")
            value = value.strip().casefold()
        else:
            value = literal(value)
            if op in RANGES and isinstance(value, bool):
                raise FilterError(f"'{field} {_SYMBOL_OF[op].strip()} {str(value).lower()}': a range needs a number, a date or text")
        if field == "page" and op != "glob":
            for v in value if isinstance(value, tuple) else (value,):
                if not isinstance(v, (int, float)) or isinstance(v, bool):
                    raise FilterError(f"page is a page number, not {v!r}")
        return cls(field, op, value)

    @property
    def on_units(self) -> bool:
        return self.field in UNIT_FIELDS

    def test(self, values: Iterable[Any]) -> bool:
        """Whether the field's values (one, several for a list, none when missing) satisfy the condition."""
        if self.op in NEGATIONS:
            positive = OPERATORS[NEGATIONS[self.op]]
            return not any(positive(v, self.value) for v in values)
        check = OPERATORS[self.op]
        return any(check(v, self.value) for v in values)

    def describe(self) -> str:
        if self.op in ("in", "nin"):
            shown = ",".join(_show(v) for v in self.value)
        else:
            shown = _show(self.value)
        return f"{self.field}{_SYMBOL_OF[self.op]}{shown}"

    def to_json(self) -> Any:
        if isinstance(self.value, tuple):
            return {self.op: [_jsonable(v) for v in self.value]}
        return {self.op: _jsonable(self.value)}


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def _jsonable(value: Any) -> Any:
    return value.isoformat() if isinstance(value, dt.date) else value


def _values(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def document_values(field: str, doc_id: str, metadata: Mapping[str, Any]) -> list[Any]:
    """The values a document has for `field`: its id, a metadata key, or a dotted path into nested metadata."""
    if field == ID_FIELD:
        return [doc_id]
    if field in metadata:
        return _values(metadata[field])
    node: Any = metadata
    for part in field.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return []
        node = node[part]
    return _values(node)


def unit_values(field: str, unit: Unit) -> list[Any]:
    if field == "section":
        return list(unit.section)  # any heading of its path: section=Methods holds for Methods > Statistics
    return _values(unit.page)


@dataclass(frozen=True)
class Filter:
    """Every condition must hold (AND); `in` is the OR of one field. Hashable: stores cache what a filter allows."""

    conditions: tuple[Condition, ...]

    @property
    def on_documents(self) -> tuple[Condition, ...]:
        return tuple(c for c in self.conditions if not c.on_units)

    @property
    def on_units(self) -> tuple[Condition, ...]:
        return tuple(c for c in self.conditions if c.on_units)

    def matches_document(self, doc_id: str, metadata: Mapping[str, Any]) -> bool:
        return all(c.test(document_values(c.field, doc_id, metadata)) for c in self.on_documents)

    def matches_unit(self, unit: Unit) -> bool:
        return all(c.test(unit_values(c.field, unit)) for c in self.on_units)

    def matches_units(self, units: Sequence[Unit]) -> bool:
        """Whether a chunk made of `units` passes the unit conditions: one of them satisfies all (always, without)."""
        return not self.on_units or any(self.matches_unit(u) for u in units)

    def describe(self) -> str:
        return ", ".join(c.describe() for c in self.conditions)

    def to_json(self) -> dict[str, Any]:
        """The filter as the API's JSON form (`Filter.from_json` reads it back)."""
        out: dict[str, Any] = {}
        for c in self.conditions:
            out.setdefault(c.field, {}).update(c.to_json())
        return out

    # ---- reading ----------------------------------------------------------------------------------------------------

    @classmethod
    def parse(cls, expressions: str | Sequence[str] | None) -> Filter | None:
        """A filter from command-line expressions (`format=pdf`, `year>=2019`, `season in 8,9`), all of which must
        hold; None when there are none."""
        if isinstance(expressions, str):
            expressions = [expressions]
        conditions = [_parse_expression(e) for e in expressions or () if e.strip()]
        return cls(tuple(conditions)) if conditions else None

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Filter | None:
        """A filter from the API's JSON: `{"format": "pdf", "year": {"gte": 2019}, "path": {"glob": "reviews/*"},
        "season": [8, 9]}` (a plain value: equal, or a glob when it has * ? [; a list: one of them; an object:
        operator -> value). None when empty."""
        if data is None:
            return None
        if not isinstance(data, Mapping):
            raise FilterError(f"the filter must be an object of field -> value, not {json_name(data)}")
        conditions: list[Condition] = []
        for field, spec in data.items():
            if isinstance(spec, Mapping):
                if not spec:
                    raise FilterError(f"filter field {field!r}: an empty object (use e.g. {{\"gte\": 2019}})")
                for op, value in spec.items():
                    if op not in OPERATOR_NAMES:
                        raise FilterError(f"unknown filter operator {op!r} on {field}: use one of "
                                          f"{', '.join(OPERATOR_NAMES)} (a nested field is written {field}.{op})")
                    conditions.append(Condition.make(field, op, value))
            elif isinstance(spec, list):
                conditions.append(Condition.make(field, "in", spec))
            elif spec is None:
                raise FilterError(f"filter field {field!r} is null: give a value, or leave the field out")
            else:
                conditions.append(Condition.make(field, _plain_op(spec), spec))
        return cls(tuple(conditions)) if conditions else None

    @classmethod
    def equal(cls, values: Mapping[str, Any] | None) -> Filter | None:
        """Equality on every value that is set (a corpus's query filter: Friends' {"season": 8}); None if none is."""
        conditions = [Condition.make(k, "eq", v) for k, v in (values or {}).items() if v is not None]
        return cls(tuple(conditions)) if conditions else None

    @staticmethod
    def combine(*filters: Filter | None) -> Filter | None:
        """All conditions of all the filters given (None ones ignored); None when there are none."""
        conditions = tuple(dict.fromkeys(c for f in filters if f is not None for c in f.conditions))
        return Filter(conditions) if conditions else None


def _plain_op(value: Any) -> str:
    return "glob" if isinstance(value, str) and GLOB_CHARS & set(value) else "eq"


def _parse_expression(text: str) -> Condition:
    match = _EXPRESSION.match(text)
    if not match or not match.group("value"):
        raise FilterError(f"cannot read the filter {text!r}: {FILTER_HELP}")
    field, value = match.group("field"), match.group("value")
    symbol = " ".join(match.group("op").lower().split())
    op = _SYMBOLS[symbol]
    try:
        if op in ("in", "nin"):
            return Condition.make(field, op, [v for v in (p.strip() for p in value.split(",")) if v])
        return Condition.make(field, _plain_op(value) if op == "eq" else op, value)
    except FilterError as exc:
        raise FilterError(f"the filter {text!r}: {exc}") from None
