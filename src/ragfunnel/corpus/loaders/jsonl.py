"""JSONL (and NDJSON): one document per line, each a `LoadedFile` of the `Container` the file becomes.

A record's id is the first of `options.jsonl_id` it has (default `id`, then `_id`), as a string; its title is the
`options.jsonl_title` field; its text is the `options.jsonl_text` fields in that order, each split into paragraph
blocks on blank lines; its metadata is the `options.jsonl_metadata` fields, or (None) every other scalar field.

A broken line (not UTF-8, not JSON, nested too deeply, not an object, no id, no text, an id already seen in the file)
is skipped with a problem "line N: why" and the rest of the file still loads; a file where no line loads is
`Unreadable`. A lone surrogate (a `\\ud800` escape: not text) in a record's id, title, text or metadata is replaced
by U+FFFD, with a problem "line N: text: 1 lone surrogate replaced by U+FFFD", and the record loads. Lines are split
on "\\n" only (a JSON string cannot hold a raw newline, while U+2028 can appear inside one), a "\\r" before it is
dropped, blank lines are ignored and a UTF-8 byte order mark is tolerated.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ragfunnel.corpus.loaders.base import Block, Container, LoadedFile, LoaderOptions, Unreadable, repaired
from ragfunnel.corpus.loaders.decode import EMPTY, read_bytes

EXTENSIONS = (".jsonl", ".ndjson")

MAX_PROBLEMS = 100  # problems kept per file; the rest are counted in one last line
_PARAGRAPH_BREAK = re.compile(r"\n[ \t\f\v]*\n")
_ID_SHOWN = 80  # characters of an id shown in a problem


def load(path: Path, options: LoaderOptions) -> Container:
    return parse(read_bytes(path, options), options)


def parse(data: bytes, options: LoaderOptions, metadata_field: str | None = None) -> Container:
    """The records of JSONL `data`. `metadata_field` (BEIR's "metadata") names an object field whose scalar fields
    join the record's metadata."""
    return parse_lines(data.split(b"\n"), options, metadata_field)


def parse_lines(lines: Iterable[bytes], options: LoaderOptions, metadata_field: str | None = None) -> Container:
    """As `parse`, from the file's lines (bytes, as a file opened in binary mode yields them: a large file streams)."""
    files: list[LoadedFile] = []
    problems = _Problems()
    seen: dict[str, int] = {}
    for number, raw in enumerate(lines, start=1):
        if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        raw = raw.strip()
        if not raw:
            continue
        try:
            loaded = _loaded(_record(raw), options, metadata_field)
        except (_Skip, Unreadable) as skip:
            problems.add(f"line {number}: {skip}")
            continue
        loaded, notes = repaired(loaded)  # a JSON "\\ud800" escape: U+FFFD in its place, said in a problem
        for note in notes:
            problems.add(f"line {number}: {note}")
        if loaded.key in seen:
            problems.add(f"line {number}: duplicate id {_show(loaded.key)} (first on line {seen[loaded.key]})")
            continue
        seen[loaded.key] = number
        files.append(loaded)
    if not files:
        raise Unreadable(f"no record loaded (first problem: {problems.first})" if problems.first else EMPTY)
    return Container(tuple(files), problems.result())


def paragraphs(text: str) -> list[str]:
    """`text` split on blank lines (line endings normalised), empty pieces dropped."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return [p.strip() for p in _PARAGRAPH_BREAK.split(text) if p.strip()]


class _Skip(Exception):
    """Why a line is skipped."""


class _Problems:
    def __init__(self) -> None:
        self.kept: list[str] = []
        self.more = 0

    @property
    def first(self) -> str:
        return self.kept[0] if self.kept else ""

    def add(self, problem: str) -> None:
        if len(self.kept) < MAX_PROBLEMS:
            self.kept.append(problem)
        else:
            self.more += 1

    def result(self) -> tuple[str, ...]:
        return tuple(self.kept) + ((f"... and {self.more} more lines skipped",) if self.more else ())


def _record(raw: bytes) -> dict[str, Any]:
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Skip(f"not UTF-8 (byte {exc.start + 1})") from None
    try:
        record = json.loads(line)
    except RecursionError:
        raise _Skip("JSON nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise _Skip(f"not JSON ({exc.msg} at column {exc.colno})") from None
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        raise _Skip(f"not JSON ({str(exc)[:80]})") from None
    if not isinstance(record, dict):
        raise _Skip(f"not a JSON object (a {_json_type(record)})")
    return record


def _loaded(record: dict[str, Any], options: LoaderOptions, metadata_field: str | None) -> LoadedFile:
    id_field, key = _id(record, options.jsonl_id)
    texts = [t for t in (_text(record.get(f)) for f in options.jsonl_text) if t]
    if not texts:
        raise _Skip(f"no text (field {' or '.join(repr(f) for f in options.jsonl_text)})")
    blocks = [Block(p, kind="text") for t in texts for p in paragraphs(t)]
    title = record.get(options.jsonl_title)
    title = title if isinstance(title, str) else ""
    used = {id_field, options.jsonl_title, *options.jsonl_text}
    if options.jsonl_metadata is not None:
        metadata = {f: record[f] for f in options.jsonl_metadata if f in record and record[f] is not None}
    else:
        metadata = _scalars((k, v) for k, v in record.items() if k not in used and k != metadata_field)
    if metadata_field and isinstance(record.get(metadata_field), dict):
        metadata = {**_scalars(record[metadata_field].items()), **metadata}
    return LoadedFile.of(title, blocks, metadata, format="jsonl", key=key)


def _id(record: dict[str, Any], fields: Iterable[str]) -> tuple[str, str]:
    for f in fields:
        value = record.get(f)
        if value is None or isinstance(value, bool):
            continue
        if isinstance(value, (dict, list)):
            raise _Skip(f"id field {f!r} is not a string or number")
        key = str(value).strip()
        if key:
            return f, key
    raise _Skip(f"no id (field {' or '.join(repr(f) for f in fields)})")


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return ""


def _scalars(items: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    return {k: v for k, v in items if isinstance(v, (str, int, float, bool))}


def _json_type(value: Any) -> str:
    return {list: "list", str: "string", bool: "boolean", type(None): "null"}.get(type(value), "number")


def _show(key: str) -> str:
    return repr(key if len(key) <= _ID_SHOWN else key[:_ID_SHOWN] + "...")
