"""DOCX (python-docx): paragraphs and tables in body order, headings as sections, table rows and list items as
blocks.

The body's XML children are walked in order (content controls, `w:sdt`, are walked into), so a table sits where it
is between paragraphs. A paragraph styled "Title" (level 0) or "Heading 1".."Heading 9" (a custom style based on
one counts, and so does an outline level) is a block of kind "title" / "heading" and opens a section: the section
path of every block under it, its own included, is the headings above it, outermost first. A table row is one
block of kind "table", its cells joined " | " (a horizontally merged cell once; a vertically merged one repeats
its text on each row it spans, so every row reads alone). A numbered or bulleted paragraph (or a "List ..." style)
is a block of kind "list". The title is the core properties' title, else the "Title" paragraph, else the first
heading, else the file name.
"""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path
from typing import Any

from ragfunnel.corpus.loaders.base import Block, LoadedFile, LoaderOptions, Unreadable
from ragfunnel.corpus.loaders.decode import needs, read_bytes
from ragfunnel.registry import importable

EXTENSIONS = (".docx",)

NOT_A_DOCX = "not a readable DOCX"
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # an encrypted DOCX, or a legacy .doc renamed
EXPANSION = 20  # the document part may unpack to at most this many times the size limit (a zip bomb is not read)

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def load(path: Path, options: LoaderOptions) -> LoadedFile:
    data = read_bytes(path, options)  # the size limit; an empty file is Unreadable("empty file")
    if data.startswith(OLE_MAGIC):
        raise Unreadable("not a readable DOCX (encrypted, or a legacy .doc)")
    if not importable("docx"):
        raise needs("python-docx")
    _check_zip(data, options)
    import docx

    try:
        document = docx.Document(io.BytesIO(data))
        blocks, title_paragraph, first_heading = _blocks(document)
        metadata, core_title = _core(document)
    except Unreadable:
        raise
    except Exception:  # noqa: BLE001 - a hostile file may fail in any way; the reason is what matters
        raise Unreadable(NOT_A_DOCX) from None
    title = core_title or title_paragraph or first_heading or path.stem
    return LoadedFile.of(title, blocks, metadata, format="docx")


def _check_zip(data: bytes, options: LoaderOptions) -> None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = {info.filename: info for info in archive.infolist()}
    except Exception:  # noqa: BLE001 - BadZipFile, but also odd headers
        raise Unreadable(NOT_A_DOCX) from None
    if "word/document.xml" not in names and not any(n.endswith("/document.xml") for n in names):
        raise Unreadable(NOT_A_DOCX)
    if sum(info.file_size for info in names.values()) > EXPANSION * max(options.max_bytes, 1):
        raise Unreadable(f"unpacks to more than {EXPANSION} x {options.max_bytes} bytes")


# ----------------------------------------------------------------------------------------------- body


def _blocks(document: Any) -> tuple[list[Block], str | None, str | None]:
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    blocks: list[Block] = []
    stack: list[tuple[int, str]] = []  # (level, text) of the open headings
    title_paragraph = first_heading = None
    levels: dict[str, int | None] = {}  # style id -> heading level, cached

    def section() -> tuple[str, ...]:
        return tuple(text for _, text in stack)

    for element in _body_children(document.element.body):
        if element.tag == W + "p":
            paragraph = Paragraph(element, document)
            text = _paragraph_text(paragraph)
            if not text:
                continue
            level = _heading_level(paragraph, levels)
            if level is not None:
                heading = re.sub(r"\s+", " ", text)
                while stack and stack[-1][0] >= level:
                    stack.pop()
                stack.append((level, heading))
                if level == 0:
                    title_paragraph = title_paragraph or heading
                else:
                    first_heading = first_heading or heading
                blocks.append(Block(heading, section(), kind="title" if level == 0 else "heading"))
            else:
                blocks.append(Block(text, section(), kind="list" if _is_list(paragraph) else "text"))
        elif element.tag == W + "tbl":
            for row in _table_rows(Table(element, document)):
                blocks.append(Block(row, section(), kind="table"))
    return blocks, title_paragraph, first_heading


def _body_children(parent: Any):
    """The paragraphs and tables of `parent` in order, walking into content controls (w:sdt/w:sdtContent)."""
    for child in parent.iterchildren():
        if child.tag in (W + "p", W + "tbl"):
            yield child
        elif child.tag == W + "sdt":
            content = child.find(W + "sdtContent")
            if content is not None:
                yield from _body_children(content)


def _paragraph_text(paragraph: Any) -> str:
    return re.sub(r"[ \t\u00a0]+", " ", paragraph.text.replace("\r", "\n")).strip()


def _heading_level(paragraph: Any, cache: dict[str, int | None]) -> int | None:
    """0 for a "Title" paragraph, 1..9 for a heading, None for anything else."""
    p_pr = paragraph._p.pPr
    style_id = p_pr.style if p_pr is not None and p_pr.style else ""
    if style_id not in cache:
        cache[style_id] = _style_level(paragraph.style)
    level = cache[style_id]
    if level is None and p_pr is not None:
        outline = p_pr.find(W + "outlineLvl")
        value = outline.get(W + "val") if outline is not None else None
        if value is not None and value.isdigit() and int(value) < 9:
            level = int(value) + 1
    return level


def _style_level(style: Any) -> int | None:
    seen = 0
    while style is not None and seen < 10:  # a custom style based on "Heading 2" is a heading 2
        name = (style.name or "").strip().lower()
        if name == "title":
            return 0
        m = re.fullmatch(r"heading\s*([1-9])", name)
        if m:
            return int(m.group(1))
        outline = style.element.find(f"{W}pPr/{W}outlineLvl")
        value = outline.get(W + "val") if outline is not None else None
        if value is not None and value.isdigit() and int(value) < 9:
            return int(value) + 1
        style, seen = style.base_style, seen + 1
    return None


def _is_list(paragraph: Any) -> bool:
    p_pr = paragraph._p.pPr
    if p_pr is not None and p_pr.numPr is not None:
        return True
    style, seen = paragraph.style, 0
    while style is not None and seen < 10:
        if (style.name or "").lower().startswith("list") or style.element.find(f"{W}pPr/{W}numPr") is not None:
            return True
        style, seen = style.base_style, seen + 1
    return False


def _table_rows(table: Any) -> list[str]:
    """Each row's non-empty cells joined " | ": a cell spanning columns once, a vertically merged cell's text on
    each of its rows. Read from the XML (python-docx's `row.cells` rebuilds the whole grid for each row)."""
    from docx.table import _Cell

    rows, above = [], {}  # grid column -> text of the cell that starts a vertical merge there
    for tr in table._tbl.tr_lst:
        column, cells = tr.grid_before, []
        for tc in tr.tc_lst:
            span = max(tc.grid_span, 1)
            if tc.vMerge == "continue":
                text = above.get(column, "")
            else:
                text = re.sub(r"\s+", " ", _Cell(tc, table).text).strip()
                above[column] = text
            if text:
                cells.append(text)
            column += span
        if cells:
            rows.append(" | ".join(cells))
    return rows


# ----------------------------------------------------------------------------------------------- core properties


def _core(document: Any) -> tuple[dict[str, Any], str | None]:
    try:
        core = document.core_properties
    except Exception:  # noqa: BLE001 - a broken docProps/core.xml loses only the metadata
        return {}, None
    metadata: dict[str, Any] = {}
    for name in ("author", "subject", "keywords", "category", "created", "modified"):
        try:
            value = getattr(core, name)
        except Exception:  # noqa: BLE001, S112 - e.g. a date that does not parse: that field is left out
            continue
        if hasattr(value, "isoformat"):
            value = value.isoformat()
        value = re.sub(r"\s+", " ", str(value or "")).strip()
        if value:
            metadata[name] = value
    try:
        title = re.sub(r"\s+", " ", core.title or "").strip() or None
    except Exception:  # noqa: BLE001
        title = None
    return metadata, title
