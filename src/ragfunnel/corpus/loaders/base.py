"""What a file loader returns, whatever the format: the file's text as ordered blocks, each knowing where it is.

A loader reads one file (bytes on disk) and returns a `LoadedFile`: its title, its metadata (Markdown front matter,
HTML <title>/<meta>, DOCX core properties, a JSONL record's fields...) and its `Block`s in reading order. A block is
the smallest piece worth citing: a paragraph, a list item, a table row, a heading's text, a function of source
code. It keeps the section path it sits under (the headings above it), the page (PDF; 1-based) and its character
offsets in `LoadedFile.text`, the blocks joined by blank lines, so an answer can cite and highlight the exact place.

A file the loader cannot read (empty, not the format its extension says, encrypted, image-only...) raises
`Unreadable` with a short reason; a folder sync reports it and goes on. Loaders never download anything.

Loaders register by file extension in `corpus/loaders/registry.py` (`LOADERS`): a loader is a function
`load(path: Path, options: LoaderOptions) -> LoadedFile | Container`; a `Container` (JSONL, a BEIR corpus) holds one
`LoadedFile` per record, each with its own `key`, and the problems of the records it skipped ("line 7: not JSON").

Text that cannot be written as UTF-8 (a lone surrogate: a JSON or YAML `\\ud800` escape, a PDF's broken text layer)
is repaired, not refused: `repaired` replaces each lone surrogate by U+FFFD (a valid pair becomes its character) in
a file's title, blocks, key and metadata and says where, so one bad character never stops a sync.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

BLOCK_SEPARATOR = "\n\n"


class Unreadable(Exception):
    """The file cannot be indexed; `str()` is the reason, short and safe to show (no traceback, no file contents)."""


@dataclass(frozen=True)
class Block:
    text: str
    section: tuple[str, ...] = ()  # headings above the block, outermost first (code: class, then function)
    page: int | None = None  # 1-based page of a PDF
    kind: str = "text"  # text | heading | list | table | code | title
    start: int = 0  # character offsets in LoadedFile.text (filled by `LoadedFile.of`)
    end: int = 0


@dataclass(frozen=True)
class LoadedFile:
    title: str
    blocks: tuple[Block, ...]
    metadata: dict[str, Any] = field(default_factory=dict)
    format: str = "text"  # markdown | html | text | pdf | docx | jsonl | code | beir
    key: str | None = None  # a record's id inside a container file (JSONL): the document id is `RELPATH#<key>`

    @property
    def text(self) -> str:
        return BLOCK_SEPARATOR.join(b.text for b in self.blocks)

    @classmethod
    def of(cls, title: str, blocks: list[Block], metadata: dict[str, Any] | None = None, format: str = "text",
           key: str | None = None) -> LoadedFile:
        """A file from its blocks in reading order: empty blocks dropped, offsets computed in the joined text.
        No block at all is `Unreadable("no text")`."""
        kept, at = [], 0
        for b in blocks:
            text = b.text.strip()
            if not text:
                continue
            kept.append(Block(text, tuple(b.section), b.page, b.kind, at, at + len(text)))
            at += len(text) + len(BLOCK_SEPARATOR)
        if not kept:
            raise Unreadable("no text")
        return cls(title.strip(), tuple(kept), dict(metadata or {}), format, key)


@dataclass(frozen=True)
class Container:
    """A file that holds many documents: one `LoadedFile` per record (with `key`), and what was skipped, why."""

    files: tuple[LoadedFile, ...]
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class LoaderOptions:
    max_bytes: int = 50_000_000  # larger files are skipped (a setting of the collection)
    jsonl_id: tuple[str, ...] = ("id", "_id")  # the first of these fields a record has is its id
    jsonl_title: str = "title"
    jsonl_text: tuple[str, ...] = ("text",)  # fields joined as the record's text
    jsonl_metadata: tuple[str, ...] | None = None  # None: every other scalar field


_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(text: str) -> tuple[str, int]:
    """`text` as valid Unicode (writable as UTF-8): every lone surrogate replaced by U+FFFD, a surrogate pair joined
    into its character; and how many lone surrogates were replaced."""
    if text.isascii() or not _SURROGATE.search(text):
        return text, 0
    fixed = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return fixed, fixed.count("\ufffd") - text.count("\ufffd")


def valid_value(value: Any, counter: list[int]) -> Any:
    """`value` (JSON-like: strings, numbers, lists, dicts) with every string, keys too, made `valid_text`;
    `counter[0]` counts the lone surrogates replaced."""
    if isinstance(value, str):
        fixed, n = valid_text(value)
        counter[0] += n
        return fixed
    if isinstance(value, dict):
        return {valid_value(k, counter): valid_value(v, counter) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(valid_value(v, counter) for v in value)
    return value


def repaired(loaded: LoadedFile) -> tuple[LoadedFile, list[str]]:
    """`loaded` with every lone surrogate replaced by U+FFFD (see `valid_text`), and one note per part repaired
    ("text: 2 lone surrogates replaced by U+FFFD"); `loaded` itself when there was none. Offsets are recomputed: a
    pair joined into one character shortens a block."""
    counts: dict[str, list[int]] = {}

    def fix(what: str, value: Any) -> Any:
        return valid_value(value, counts.setdefault(what, [0]))

    key = fix("id", loaded.key) if loaded.key is not None else None
    title = fix("title", loaded.title)
    blocks = [Block(fix("text", b.text), tuple(fix("section", list(b.section))), b.page, b.kind) for b in loaded.blocks]
    metadata = fix("metadata", loaded.metadata)
    notes = [f"{what}: {n} lone surrogate{'s' if n > 1 else ''} replaced by U+FFFD" for what, (n,) in counts.items() if n]
    if not notes:
        return loaded, []
    return LoadedFile.of(title, blocks, metadata, loaded.format, key), notes
