"""Checks on documents before they are indexed: size limits (a long unit is split, a long document cut, each
reported) and duplicate ids (an error naming both places, or keep the first / the last).

A 50 MB utterance made an index build take 13.9 GB and one search response 107 MB (issue 21.2); a repeated scene id
silently replaced the first (issue 21.6)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Literal

from ragfunnel.errors import CorpusError
from ragfunnel.types import Document, Unit

OnDuplicate = Literal["error", "keep-first", "keep-last"]
ON_DUPLICATE = ("error", "keep-first", "keep-last")


def limit_lengths(docs: Iterable[Document], max_unit_chars: int, max_document_chars: int) -> tuple[list[Document], list[str]]:
    """`docs` with every unit longer than `max_unit_chars` split into parts of at most that size (ids `<unit>~2`,
    `<unit>~3`, ...; offsets kept) and every document's units beyond `max_document_chars` left out; and one note per
    change, for the report."""
    out, notes = [], []
    for doc in docs:
        units: list[Unit] = []
        total, changed = 0, False
        for i, unit in enumerate(doc.units):
            if total >= max_document_chars:
                notes.append(f"{doc.doc_id}: over {max_document_chars:,} characters; its last {len(doc.units) - i} "
                             "unit(s) were left out")
                changed = True
                break
            text = unit.text[: max_document_chars - total]
            if len(text) > max_unit_chars:
                parts = [text[at: at + max_unit_chars] for at in range(0, len(text), max_unit_chars)]
                notes.append(f"{unit.unit_id}: {len(unit.text):,} characters, split into {len(parts)} parts of at most "
                             f"{max_unit_chars:,}")
                for n, part in enumerate(parts):
                    start = unit.start + n * max_unit_chars if unit.end else 0
                    units.append(replace(unit, unit_id=unit.unit_id if n == 0 else f"{unit.unit_id}~{n + 1}", text=part,
                                         start=start, end=start + len(part) if unit.end else 0))
                changed = True
            elif len(text) < len(unit.text):
                units.append(replace(unit, text=text, end=unit.start + len(text) if unit.end else 0))
                changed = True
            else:
                units.append(unit)
            total += len(text)
        out.append(replace(doc, units=tuple(units)) if changed else doc)
    return out, notes


def unique_documents(located: Iterable[tuple[Document, str]], on_duplicate: OnDuplicate = "error") -> list[Document]:
    """The documents, one per id. `located` pairs each with where it came from ("file, line 12"): a repeated id is a
    `CorpusError` naming both places (`error`), or the first / the last of them is kept."""
    if on_duplicate not in ON_DUPLICATE:
        raise CorpusError(f"--on-duplicate {on_duplicate!r}: choose one of {', '.join(ON_DUPLICATE)}")
    kept: dict[str, tuple[Document, str]] = {}
    for doc, where in located:
        first = kept.get(doc.doc_id)
        if first is None or on_duplicate == "keep-last":
            kept[doc.doc_id] = (doc, where) if first is None or on_duplicate == "keep-last" else first
            continue
        if on_duplicate == "error":
            raise CorpusError(f"document id {doc.doc_id!r} appears twice: {first[1]} and {where} (fix the data, or "
                              "index with --on-duplicate keep-first / keep-last)")
    return [doc for doc, _ in kept.values()]


def located(docs: Sequence[Document], source: str) -> Iterable[tuple[Document, str]]:
    """Documents whose places are not known more precisely than their order in `source`."""
    return ((doc, f"{source}, document {i}") for i, doc in enumerate(docs, 1))
