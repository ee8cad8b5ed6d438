"""Loaders by file extension. Each format module has `EXTENSIONS` (lower-case, with the dot) and
`load(path, options) -> LoadedFile | Container`; adding a format is a module and a line here."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ragfunnel.corpus.loaders import code, docx, jsonl, pdf
from ragfunnel.corpus.loaders import html, markdown, text
from ragfunnel.corpus.loaders.base import Container, LoadedFile, LoaderOptions

Loader = Callable[[Path, LoaderOptions], LoadedFile | Container]

FORMAT_MODULES: tuple = (code, docx, jsonl, pdf, html, markdown, text)  # the format modules, added as they land

LOADERS: dict[str, Loader] = {ext: module.load for module in FORMAT_MODULES for ext in module.EXTENSIONS}


def loader_for(path: Path) -> Loader | None:
    """The loader of `path`'s extension (case-insensitive), or None for an extension no loader reads."""
    return LOADERS.get(path.suffix.lower())
