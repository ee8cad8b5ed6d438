"""Plain text in any common encoding: UTF-8 (with or without BOM), UTF-16/32 with BOM, cp1252/Latin-1 and what
charset-normalizer recognises (decode.py). Bytes that are not text (NUL bytes outside UTF-16/32, no plausible
encoding) are `Unreadable("not text (binary?)")`.

Blocks are the paragraphs, split on blank lines (lines of only spaces count as blank), their line breaks kept.
Title: the first non-empty line when it is short (under 120 characters), else the file name without extension.
Metadata: {"encoding": the encoding the text was read with}. reStructuredText is read as plain text too.
"""

from __future__ import annotations

import re
from pathlib import Path

from ragfunnel.corpus.loaders.base import Block, LoadedFile, LoaderOptions, Unreadable
from ragfunnel.corpus.loaders.decode import EMPTY, decode_text, read_bytes

EXTENSIONS = (".txt", ".text", ".rst")

TITLE_MAX_CHARS = 120
BLANK_LINE = re.compile(r"\n[ \t\f\v]*\n")
NEWLINES = re.compile(r"\r\n?")


def load(path: Path, options: LoaderOptions) -> LoadedFile:
    text, encoding = decode_text(read_bytes(path, options))
    text = NEWLINES.sub("\n", text)
    if not text.strip():
        raise Unreadable(EMPTY)
    first = text.lstrip().split("\n", 1)[0].strip()
    title = first if len(first) < TITLE_MAX_CHARS else path.stem
    blocks = [Block(paragraph) for paragraph in BLANK_LINE.split(text)]
    return LoadedFile.of(title, blocks, {"encoding": encoding}, format="text")
