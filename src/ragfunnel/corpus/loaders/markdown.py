"""Markdown: YAML front matter becomes metadata, headings the section path of the blocks under them.

Parsed with markdown-it-py (CommonMark, plus tables and strikethrough). Blocks, in reading order: each heading's
text (`kind="heading"`, its section path ends with itself), each paragraph, each list item (`kind="list"`: its own
paragraphs; a nested list's items are blocks of their own), each block quote, each fenced or indented code block
(`kind="code"`), each table row (`kind="table"`, cells joined by " | ") and the text of raw HTML blocks. Inline
markup is reduced to its text: links keep their text, images their alt text, inline code its content.

Front matter (`---` ... `---` or `...` at the very start) is read with `yaml.safe_load`; a mapping becomes the
metadata (dates as ISO strings). Front matter that is not valid YAML, or not a mapping, is kept as a text block and
noted as `metadata["front_matter_error"]`: the file still loads. Title: front matter `title`, else the first H1,
else the file name without extension.
"""

from __future__ import annotations

import datetime as dt
import html
import re
from pathlib import Path
from typing import Any

from ragfunnel.corpus.loaders.base import Block, LoadedFile, LoaderOptions, Unreadable
from ragfunnel.corpus.loaders.decode import EMPTY, decode_text, needs, read_bytes
from ragfunnel.registry import importable

EXTENSIONS = (".md", ".markdown")

FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)^(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.DOTALL | re.MULTILINE)
FRONT_MATTER_MAX_VALUES = 10_000  # scalars and containers; more (YAML aliases can multiply them) is "too large"
FRONT_MATTER_MAX_DEPTH = 50
HTML_SKIPPED = re.compile(r"<!--.*?-->|<(script|style)\b.*?</\1\s*>", re.DOTALL | re.IGNORECASE)
HTML_TAG = re.compile(r"<[^>]*>")
BR = re.compile(r"<br\b", re.IGNORECASE)
SPACES = re.compile(r"[ \t\r\f\v]+")


def load(path: Path, options: LoaderOptions) -> LoadedFile:
    if not importable("markdown_it"):
        raise needs("markdown-it-py")
    text, _ = decode_text(read_bytes(path, options))
    if not text.strip():
        raise Unreadable(EMPTY)
    metadata, body, kept = front_matter(text)
    try:
        blocks, first_h1 = parse(body)
    except RecursionError:
        raise Unreadable("nested too deeply to parse") from None
    if kept is not None:
        blocks.insert(0, Block(kept))
    title = metadata.get("title")
    title = str(title).strip() if isinstance(title, (str, int, float)) and str(title).strip() else None
    return LoadedFile.of(title or first_h1 or path.stem, blocks, metadata, format="markdown")


def front_matter(text: str) -> tuple[dict[str, Any], str, str | None]:
    """(metadata, the text after the front matter, the front matter's text when it is kept as text)."""
    found = FRONT_MATTER.match(text)
    if not found:
        return {}, text, None
    raw, body = found.group(1), text[found.end():]
    problem = None
    if not importable("yaml"):
        problem = "needs pyyaml"
    else:
        import yaml

        try:
            parsed = yaml.safe_load(raw)
        except (yaml.YAMLError, RecursionError, ValueError, TypeError):
            problem = "front matter is not valid YAML"
        else:
            if parsed is None:
                return {}, body, None
            if not isinstance(parsed, dict):
                problem = "front matter is not a mapping"
            else:
                try:
                    return json_safe(parsed, [FRONT_MATTER_MAX_VALUES], 0), body, None
                except ValueError as e:
                    problem = str(e)
    return {"front_matter_error": problem}, body, raw


def json_safe(value: Any, budget: list[int], depth: int) -> Any:
    """`value` with only JSON types (dates as ISO strings, other objects as strings); ValueError when it is too
    large or too deep to be metadata."""
    budget[0] -= 1
    if budget[0] < 0 or depth > FRONT_MATTER_MAX_DEPTH:
        raise ValueError("front matter too large")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): json_safe(v, budget, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [json_safe(v, budget, depth + 1) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def parse(body: str) -> tuple[list[Block], str | None]:
    """The blocks of a Markdown text and its first H1's text."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"]).parse(body)
    blocks: list[Block] = []
    headings: list[tuple[int, str]] = []
    containers: list[tuple[str, list[str]]] = []  # open list items and block quotes: (kind, their paragraphs)
    first_h1: str | None = None
    cells: list[str] = []

    def section() -> tuple[str, ...]:
        return tuple(text for _, text in headings)

    def flush() -> None:
        if containers and containers[-1][1]:
            kind, parts = containers[-1]
            blocks.append(Block("\n".join(parts), section(), kind=kind))
            parts.clear()

    for i, token in enumerate(tokens):
        kind = token.type
        if kind == "heading_open":
            flush()
            text = inline_text(tokens[i + 1])
            if text:
                level = int(token.tag[1:]) if token.tag[1:].isdigit() else 1
                while headings and headings[-1][0] >= level:
                    headings.pop()
                headings.append((level, text))
                blocks.append(Block(text, section(), kind="heading"))
                if level == 1 and first_h1 is None:
                    first_h1 = text
        elif kind == "paragraph_open":
            text = inline_text(tokens[i + 1])
            if containers:
                containers[-1][1].append(text)
            else:
                blocks.append(Block(text, section()))
        elif kind in ("list_item_open", "blockquote_open"):
            flush()
            containers.append(("list" if kind == "list_item_open" else "text", []))
        elif kind in ("list_item_close", "blockquote_close"):
            flush()
            if containers:
                containers.pop()
        elif kind in ("bullet_list_open", "ordered_list_open", "table_open"):
            flush()
        elif kind in ("fence", "code_block"):
            flush()
            blocks.append(Block(token.content, section(), kind="code"))
        elif kind == "html_block":
            flush()
            blocks.append(Block(html_text(token.content), section()))
        elif kind == "tr_open":
            cells = []
        elif kind in ("th_open", "td_open"):
            cells.append(inline_text(tokens[i + 1]))
        elif kind == "tr_close":
            blocks.append(Block(" | ".join(cells), section(), kind="table"))
    return blocks, first_h1


def inline_text(token: Any) -> str:
    """The text of an inline token: markup dropped, links' text, images' alt text and inline code kept."""
    parts = []
    for child in token.children or ():
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type == "image":
            parts.append(child.content)
        elif child.type == "softbreak":
            parts.append(" ")
        elif child.type == "hardbreak" or (child.type == "html_inline" and BR.match(child.content)):
            parts.append("\n")
    return "\n".join(SPACES.sub(" ", line).strip() for line in "".join(parts).split("\n")).strip()


def html_text(raw: str) -> str:
    """The text of a raw HTML block: comments, scripts and styles dropped, tags removed, entities decoded."""
    text = html.unescape(HTML_TAG.sub(" ", HTML_SKIPPED.sub(" ", raw)))
    return "\n".join(line for line in (SPACES.sub(" ", line).strip() for line in text.split("\n")) if line)
