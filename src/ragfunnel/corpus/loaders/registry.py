"""Loaders by file extension: `LOADERS` (a `ragfunnel.registry.Registry`) maps an extension (lower-case, with the
dot) to its format module's `load(path, options) -> LoadedFile | Container`, with the modules it needs from the
`files` extra and a one-line description. Each format module has `EXTENSIONS`; adding a format is a module and a
line in `FORMATS`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ragfunnel.corpus.loaders import code, docx, jsonl, pdf
from ragfunnel.corpus.loaders import html, markdown, text
from ragfunnel.corpus.loaders.base import Container, LoadedFile, LoaderOptions
from ragfunnel.registry import Registry

Loader = Callable[[Path, LoaderOptions], LoadedFile | Container]

# the format modules, added as they land: (module, the import names its loader needs, what a file becomes)
FORMATS: tuple = (
    (code, ("tree_sitter",), "source code ({language}): functions and classes as blocks (tree-sitter)"),
    (docx, ("docx",), "DOCX: paragraphs and tables in body order, headings as sections (python-docx)"),
    (jsonl, (), "JSONL / NDJSON: one document per line, its fields as id, title, text and metadata"),
    (pdf, ("pypdfium2",), "PDF: the text of each page, one block per paragraph (pypdfium2, else pypdf)"),
    (html, ("selectolax",), "HTML: the page's main content as blocks, not its navigation (selectolax)"),
    (markdown, ("markdown_it",), "Markdown: front matter as metadata, headings as sections (markdown-it-py)"),
    (text, (), "plain text in any common encoding (charset-normalizer beyond UTF-8), one block per paragraph"),
)
FORMAT_MODULES: tuple = tuple(module for module, _, _ in FORMATS)

LOADERS = Registry("loader")


def _register_formats() -> None:
    for module, needs, description in FORMATS:
        for ext in module.EXTENSIONS:
            grammar = code.GRAMMARS[code.LANGUAGES[ext]] if module is code else None  # its own grammar wheel
            LOADERS.register(ext, module.load, extra="files" if needs else None,
                             modules=needs + ((grammar.module,) if grammar else ()),
                             description=description.format(language=grammar.name if grammar else ""))


_register_formats()


def loader_for(path: Path) -> Loader | None:
    """The loader of `path`'s extension (case-insensitive), or None for an extension no loader reads."""
    ext = path.suffix.lower()
    return LOADERS.get(ext).factory if ext in LOADERS.names() else None
