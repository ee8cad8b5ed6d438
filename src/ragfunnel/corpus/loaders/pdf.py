"""PDF: the text of each page (pypdfium2; pypdf, pure Python, when pypdfium2 is not installed), one block per
paragraph, each with its 1-based page.

A page's text comes as lines. Where the page has blank lines they separate paragraphs; otherwise a paragraph ends
after a short line (well under the page's full line width) unless the next line starts in lower case, before a
bulleted line, or where the next line starts after a gap wider than the page's usual one between lines (pypdfium2
gives each line's box; pypdf does not, so its paragraphs are coarser). The wrapped lines of a paragraph are joined
with a space, and a word hyphenated across a line break ("exam-" / "ple") is joined back. The title is the
document's /Title when it looks like one, else the first line of page 1 when short, else the file name.

Encrypted (with a user password), image-only (no text layer) and unparsable files are `Unreadable`.
pdfium is not thread-safe: every call into it holds one module-wide lock.
"""

from __future__ import annotations

import io
import itertools
import logging
import re
import statistics
import threading
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from ragfunnel.corpus.loaders.base import Block, LoadedFile, LoaderOptions, Unreadable
from ragfunnel.corpus.loaders.decode import needs, read_bytes
from ragfunnel.registry import importable

EXTENSIONS = (".pdf",)

NOT_A_PDF = "not a readable PDF"
ENCRYPTED = "encrypted PDF"
IMAGE_ONLY = "no text layer (image-only PDF?)"

_PDFIUM_LOCK = threading.Lock()
_PDFIUM_PASSWORD_ERROR = 4  # FPDF_ERR_PASSWORD

SHORT_LINE = 0.7  # a line shorter than this share of the page's full line width ends its paragraph
GAP = 0.25  # a gap between two lines wider than the page's usual one by this share of the line height: a paragraph
# a line starting with a bullet starts a paragraph (a list item)
BULLET = re.compile(r"[\u2022\u25aa\u25cf\u25e6\u2023\u2043\u2219\u00b7\u25a0\u25a1\u27a2\uf0b7]\s")
TITLE_MAX = 150  # characters of a sensible title
PLACEHOLDERS = {"untitled", "unspecified", "anonymous", "unknown", "none", "null", "title", "document", "n/a"}


# A page as the backends give it: its lines, and for each line (top, bottom, height of one line) when known.
Line = tuple[str, tuple[float, float, float] | None]


def load(path: Path, options: LoaderOptions) -> LoadedFile:
    data = read_bytes(path, options)  # the size limit; an empty file is Unreadable("empty file")
    if importable("pypdfium2"):
        pages, info = _pdfium_pages(data)
    elif importable("pypdf"):
        pages, info = _pypdf_pages(data)
    else:
        raise needs("pypdfium2")
    blocks = [Block(text, page=number, kind="text")
              for number, lines in enumerate(pages, start=1) for text in paragraphs(lines)]
    if not any(b.text.strip() for b in blocks):
        raise Unreadable(IMAGE_ONLY if pages else "no pages")
    metadata = _metadata(info, len(pages))
    return LoadedFile.of(_title(info.get("Title"), blocks, path), blocks, metadata, format="pdf")


# ----------------------------------------------------------------------------------------------- backends


def _pdfium_pages(data: bytes) -> tuple[list[list[Line]], dict[str, str]]:
    import pypdfium2 as pdfium

    with _PDFIUM_LOCK:
        try:
            document = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as e:
            raise Unreadable(ENCRYPTED if getattr(e, "err_code", None) == _PDFIUM_PASSWORD_ERROR else NOT_A_PDF) from None
        except Exception:  # noqa: BLE001 - a hostile file may fail in any way; the reason is what matters
            raise Unreadable(NOT_A_PDF) from None
        try:
            try:
                info = {k: v for k, v in document.get_metadata_dict(skip_empty=True).items() if isinstance(v, str)}
            except Exception:  # noqa: BLE001
                info = {}
            pages = []
            for index in range(len(document)):
                try:
                    page = document[index]
                except Exception:  # noqa: BLE001 - one broken page does not lose the others
                    pages.append([])
                    continue
                try:
                    textpage = page.get_textpage()
                    try:
                        pages.append(_pdfium_lines(textpage))
                    finally:
                        textpage.close()
                except Exception:  # noqa: BLE001
                    pages.append([])
                finally:
                    page.close()
            return pages, info
        finally:
            document.close()


def _pdfium_lines(textpage: Any) -> list[Line]:
    text = textpage.get_text_range()
    boxed = len(text) == textpage.count_chars()  # then text offsets are character indices
    lines: list[Line] = []
    for m in re.finditer(r"[^\r\n]+", text):
        raw, box = m.group(), None
        # pdfium joins a line broken at a hyphen to the next, marking the place with U+FFFE: the line's top is that
        # of its first visual line, its bottom that of its last. Each is read from the box of a letter or digit
        # (a bullet's glyph has a box of its own font).
        last = max(raw.rfind("\ufffe"), raw.rfind("\x02")) + 1
        first_char = re.search(r"\w", raw) or re.search(r"\S", raw)
        last_char = re.search(r"\w", raw[last:]) or re.search(r"\S", raw[last:])
        if boxed and first_char and last_char:
            try:
                _, _, _, top = textpage.get_charbox(m.start() + first_char.start(), loose=True)
                _, bottom, _, last_top = textpage.get_charbox(m.start() + last + last_char.start(), loose=True)
                box = (top, bottom, last_top - bottom)
            except Exception:  # noqa: BLE001
                box = None
        lines.append((raw, box))
    return lines


def _pypdf_pages(data: bytes) -> tuple[list[list[Line]], dict[str, str]]:
    logger = logging.getLogger("pypdf")  # a broken file is a reason in the report, not lines of pypdf warnings
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        return _pypdf_read(data)
    finally:
        logger.setLevel(level)


def _pypdf_read(data: bytes) -> tuple[list[list[Line]], dict[str, str]]:
    import pypdf

    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            try:
                if not reader.decrypt(""):
                    raise Unreadable(ENCRYPTED)
            except Unreadable:
                raise
            except Exception:  # noqa: BLE001 - e.g. an unsupported cipher without cryptography installed
                raise Unreadable(ENCRYPTED) from None
        count = len(reader.pages)
    except Unreadable:
        raise
    except Exception:  # noqa: BLE001
        raise Unreadable(NOT_A_PDF) from None
    try:
        info = {str(k).lstrip("/"): str(v) for k, v in (reader.metadata or {}).items() if isinstance(v, str)}
    except Exception:  # noqa: BLE001
        info = {}
    pages = []
    for index in range(count):
        try:
            text = reader.pages[index].extract_text() or ""
        except Exception:  # noqa: BLE001
            text = ""
        pages.append([(line, None) for line in text.splitlines()])
    return pages, info


# ----------------------------------------------------------------------------------------------- paragraphs

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _clean(line: str) -> str:
    # pdfium marks a hyphen it joined across a line break with U+FFFE (older builds: \x02): the word is whole again
    line = line.replace("\ufffe", "").replace("\x02", "").replace("\u00ad", "")
    return re.sub(r"[ \t\u00a0]+", " ", _CONTROL.sub("", line)).strip()


def paragraphs(lines: list[Line]) -> list[str]:
    """A page's paragraphs from its lines (see the module's docstring)."""
    # a line's width is that of its last visual line: pdfium puts a line it joined at a hyphen on one line
    cleaned = [(_clean(text), box, len(_clean(re.split("[\ufffe\x02]", text)[-1]))) for text, box in lines]
    while cleaned and not cleaned[0][0]:
        cleaned.pop(0)
    if any(not text for text, _, _ in cleaned):
        groups, current = [], []
        for text, _, _ in cleaned:
            if text:
                current.append(text)
            elif current:
                groups.append(current)
                current = []
        if current:
            groups.append(current)
        return [_join(g) for g in groups]
    if not cleaned:
        return []
    widths = sorted(width for _, _, width in cleaned)
    # the page's full line width (with enough lines, robust to a long outlier such as a URL)
    full = widths[int(0.9 * (len(widths) - 1))] if len(widths) >= 10 else widths[-1]
    gaps = [g for g in (_gap(a[1], b[1]) for a, b in itertools.pairwise(cleaned)) if g is not None]
    finite = [g for g, _ in gaps if g != float("inf")]
    usual = statistics.median(finite) if finite else 0.0  # the page's gap between two lines of a paragraph
    groups, current = [], []
    for i, (text, box, width) in enumerate(cleaned):
        current.append(text)
        if i == len(cleaned) - 1:
            groups.append(current)
            break
        following = cleaned[i + 1]
        gap = _gap(box, following[1])
        # the usual gap, capped: on a page of one-line paragraphs the median gap is a paragraph's
        wide_gap = gap is not None and gap[0] > max(min(usual, 0.5 * gap[1]), 0.0) + GAP * gap[1]
        short = width < SHORT_LINE * full and not following[0][:1].islower()  # "exam-" / "ple": one word
        if wide_gap or short or BULLET.match(following[0]):
            groups.append(current)
            current = []
    return [_join(g) for g in groups]


def _gap(box: tuple[float, ...] | None, following: tuple[float, ...] | None) -> tuple[float, float] | None:
    """The vertical gap between a line and the next, and their (smaller) line height; an infinite gap where the
    next line is higher up (a new column, a text box elsewhere); None where the boxes are unknown."""
    if box is None or following is None:
        return None
    top, bottom, height = box
    next_top, _, next_height = following
    height = min(height, next_height)
    if height <= 0:
        return None
    if next_top > top + 0.5 * height:
        return float("inf"), height
    return bottom - next_top, height


def _join(lines: list[str]) -> str:
    out = lines[0]
    for line in lines[1:]:
        if re.search(r"[^\W\d_]-$", out) and line[:1].islower():
            out = out[:-1] + line  # "exam-" + "ple"
        elif re.search(r"[^\W\d_]-$", out) and line[:1].isalpha():
            out = out + line  # "Smith-" + "Jones"
        else:
            out = f"{out} {line}"
    return out


# ----------------------------------------------------------------------------------------------- title, metadata


def _sensible(title: str | None) -> str | None:
    if not title:
        return None
    title = re.sub(r"\s+", " ", _CONTROL.sub("", title)).strip()
    title = re.sub(r"^Microsoft (Word|PowerPoint|Excel) - ", "", title)
    if (not title or len(title) > TITLE_MAX or title.lower() in PLACEHOLDERS or not re.search(r"[^\W\d_]", title)
            or re.search(r"\.(pdf|docx?|rtf|odt|tex|dvi|ps|indd|pptx?|xlsx?|html?|txt)$", title, re.IGNORECASE)
            or re.fullmatch(r"[\w\-]*\d[\w\-]*", title)):  # a file or job name such as "scan_0042" or "doc-12a"
        return None
    return title


def _title(meta_title: str | None, blocks: list[Block], path: Path) -> str:
    title = _sensible(meta_title)
    if title:
        return title
    first = next((b for b in blocks if b.text.strip()), None)
    if first is not None and first.page == 1:
        line = first.text.strip().split("\n")[0]
        if len(line) <= 100 and _sensible(line):
            return line
    return path.stem


_METADATA = {"Author": "author", "Subject": "subject", "Keywords": "keywords", "Creator": "creator",
             "Producer": "producer", "CreationDate": "created", "ModDate": "modified"}


def _metadata(info: dict[str, str], pages: int) -> dict[str, Any]:
    out: dict[str, Any] = {"pages": pages}
    for key, name in _METADATA.items():
        value = re.sub(r"\s+", " ", _CONTROL.sub("", str(info.get(key) or ""))).strip()
        if not value or value.lower() in PLACEHOLDERS:
            continue
        if name in ("created", "modified"):
            value = pdf_date(value)
            if value is None:
                continue
        out[name] = value
    return out


def pdf_date(value: str) -> str | None:
    """A PDF date ("D:20240131120000+01'00'") as ISO 8601, or None when it is not one."""
    m = re.match(r"^(?:D:)?(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?\s*(?:([+\-Z])(\d{2})?'?(\d{2})?'?)?", value)
    if not m:
        return None
    year, month, day, hour, minute, second, sign, tz_h, tz_m = m.groups()
    try:
        tz = None
        if sign == "Z" or (sign and not tz_h):
            tz = UTC
        elif sign:
            offset = timedelta(hours=int(tz_h), minutes=int(tz_m or 0))
            tz = timezone(offset if sign == "+" else -offset)
        moment = datetime(int(year), int(month or 1), int(day or 1), int(hour or 0), int(minute or 0),
                          int(second or 0), tzinfo=tz)
    except (ValueError, OverflowError):
        return None
    return moment.isoformat()
