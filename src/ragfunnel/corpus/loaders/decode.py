"""Bytes on disk to text, for every loader: `read_bytes` checks the size limit before reading anything, and
`decode_text` finds the encoding (a BOM, an encoding the file declares, UTF-8, Western legacy text, then
charset-normalizer's detection) or says the bytes are not text.

Why not charset-normalizer alone: on a short Latin-1 or cp1252 file ("café Müller") it guesses an encoding that
decodes without error but reads as another script (cp1006, Urdu), and accents silently turn into other letters.
Western legacy text is recognised first by what it decodes to: letters and punctuation of the Latin ranges, the
accented ones a minority among mostly ASCII letters; text in other scripts does not look like that in cp1252.
"""

from __future__ import annotations

import codecs
import re
import stat
import unicodedata
from collections import Counter
from pathlib import Path

from ragfunnel.corpus.loaders.base import LoaderOptions, Unreadable
from ragfunnel.registry import importable, install_hint

NOT_TEXT = "not text (binary?)"
EMPTY = "empty file"

# longest BOMs first: UTF-32 LE's BOM begins with UTF-16 LE's
BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
WESTERN_PUNCTUATION = set("\u00a0¡¢£¤¥¦§¨©ª«¬\u00ad®¯°±²³´µ¶·¸¹º»¼½¾¿×÷€‚ƒ„…†‡ˆ‰‹›‘’“”•–—˜™")
CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")  # tab, newline, form feed and CR are text
MAX_CONTROL_SHARE = 0.01
# a symbol between two letters ("Za¿ó³æ": Polish cp1250 read as cp1252) is a letter of another code page
INSIDE_WORD = re.compile(r"[^\W\d_][¡¢£¤¥¦§¨©ª«¬®¯°±²³´¶¸¹º»¼½¾¿×÷ƒ„…†‡ˆ‰‹›“”•˜™][^\W\d_]")
MAX_ACCENTED_SHARE = 0.4  # of the letters: French, German, Spanish... stay far below; other scripts far above
UTF16_MIN_NUL_SHARE = 0.2  # of the byte pairs
UTF16_MAX_OTHER_SIDE = 0.05  # of the NULs on the main side
SHORT_LETTERS = 16  # fewer letters than this ("Ça", "é") say too little for the share to mean anything
DECLARED_SNIFF_BYTES = 4096
META_CHARSET = re.compile(rb"""<meta[^>]+?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


def needs(package: str) -> Unreadable:
    """The failure of a loader whose optional package is not installed."""
    return Unreadable(f"needs {package}: {install_hint('files')}")


def read_bytes(path: Path, options: LoaderOptions) -> bytes:
    """The file's bytes, never more than `options.max_bytes` read: a larger file is `Unreadable` before it is
    opened, an empty or whitespace-only one (ASCII whitespace) is `Unreadable("empty file")`, and an error of the
    file system (missing, a folder, no permission) is `Unreadable` with its reason."""
    limit = options.max_bytes
    too_large = Unreadable(f"larger than {limit} bytes")
    try:
        status = path.stat()
        if not stat.S_ISREG(status.st_mode):
            raise Unreadable("not a regular file")
        if status.st_size > limit:
            raise too_large
        with path.open("rb") as f:
            data = f.read(limit + 1)  # one byte more tells a file that grew since stat
    except OSError as e:
        raise Unreadable(f"cannot read: {e.strerror or type(e).__name__}") from None
    if len(data) > limit:
        raise too_large
    if not data or data.isspace():
        raise Unreadable(EMPTY)
    return data


def codec_name(encoding: str) -> str | None:
    """Python's name of a text encoding ('ISO-8859-1' -> 'iso8859-1'), None for one Python does not know or that
    is not a text encoding ('rot13', 'zlib')."""
    try:
        info = codecs.lookup(encoding.strip())
    except (LookupError, ValueError, TypeError):
        return None
    return info.name if getattr(info, "_is_text_encoding", True) else None


def html_declared_charset(data: bytes) -> str | None:
    """The charset an HTML page declares in its first bytes (<meta charset> or http-equiv Content-Type)."""
    found = META_CHARSET.search(data[:DECLARED_SNIFF_BYTES])
    return found.group(1).decode("ascii", "ignore") if found else None


def decode_text(data: bytes, declared: str | None = None) -> tuple[str, str]:
    """(text, encoding) of `data`, or `Unreadable(NOT_TEXT)`. In order: a BOM (UTF-8, UTF-16, UTF-32); NUL bytes
    (binary unless they are UTF-16 without BOM: NULs on one side of the pairs, and detection agrees); UTF-8 (bytes that decode as UTF-8 and are not ASCII are
    UTF-8 whatever a page declares); the `declared` encoding when it decodes (Latin-1 and ASCII read as cp1252, as
    browsers do); Western legacy text (cp1252); charset-normalizer's detection."""
    for bom, encoding in BOMS:
        if data.startswith(bom):
            try:
                return checked(data[len(bom):].decode(encoding), encoding + ("-sig" if encoding == "utf-8" else ""))
            except UnicodeDecodeError:
                break  # a BOM by chance (random bytes): the steps below decide
    if b"\x00" in data:
        if not utf16_shaped(data):
            raise Unreadable(NOT_TEXT)
        return detected(data, only=("utf_16",))
    try:
        return checked(data.decode("utf-8"), "utf-8")
    except UnicodeDecodeError:
        pass
    if declared and (name := codec_name(declared)) and not name.startswith(("utf-", "utf_")):  # (as browsers)
        if name in ("iso8859-1", "ascii"):
            return western(data) or checked(data.decode("latin-1"), "iso8859-1")
        try:
            return checked(data.decode(name), name)
        except UnicodeDecodeError:
            pass
    return western(data) or detected(data)


def utf16_shaped(data: bytes) -> bool:
    """NUL bytes as UTF-16 text without BOM has them: many on even offsets (big-endian) or on odd ones (little-
    endian), almost none on the other side (CJK text has fewer, but then the ASCII spaces and digits bring some)."""
    even, odd = data[0::2].count(0), data[1::2].count(0)
    pairs = len(data) // 2 or 1
    many, few = max(even, odd), min(even, odd)
    return many >= UTF16_MIN_NUL_SHARE * pairs and few <= UTF16_MAX_OTHER_SIDE * many


def checked(text: str, encoding: str) -> tuple[str, str]:
    """`text` unless control characters make more than 1% of it (a binary file that happened to decode)."""
    if text and len(CONTROL.findall(text)) > MAX_CONTROL_SHARE * len(text):
        raise Unreadable(NOT_TEXT)
    return text, encoding


def western(data: bytes) -> tuple[str, str] | None:
    """`data` read as cp1252 when it reads as Western European text: every non-ASCII character a Latin letter or
    common punctuation, no symbol inside a word, accented letters a minority of the letters. (Latin-1 text is
    cp1252 text: the two differ only in 0x80-0x9F, control characters in Latin-1.)"""
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError:
        return None
    letters = accented = 0
    for ch, count in Counter(text).items():
        if ch.isalpha():
            letters += count
        if ch < "\x80" or ch in WESTERN_PUNCTUATION:
            continue
        if not (unicodedata.category(ch).startswith("L") and "LATIN" in unicodedata.name(ch, "")):
            return None
        accented += count
    if not letters or INSIDE_WORD.search(text):
        return None
    if letters >= SHORT_LETTERS and accented > MAX_ACCENTED_SHARE * letters:
        return None
    try:
        return checked(text, "cp1252")
    except Unreadable:
        return None


def detected(data: bytes, only: tuple[str, ...] = ()) -> tuple[str, str]:
    """charset-normalizer's best guess (restricted to encodings starting with one of `only` when given)."""
    if not importable("charset_normalizer"):
        raise needs("charset-normalizer")
    from charset_normalizer import from_bytes

    best = from_bytes(data).best()
    if best is None or (only and not best.encoding.startswith(only)):
        raise Unreadable(NOT_TEXT)
    return checked(str(best), codec_name(best.encoding) or best.encoding)
