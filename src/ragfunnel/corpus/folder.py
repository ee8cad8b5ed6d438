"""A corpus of the user's own files: every file under the given paths that a loader reads (corpus/loaders/).

A file's document id is its path relative to the PATH given, with forward slashes (`reviews/cardio/med-10.pdf`); a
record of a container file (JSONL) is `RELPATH#<record id>`. A single file given as PATH is named by its file name.
Each block of a file becomes a unit (`<doc id>:<n>`) that keeps its section path, page and character offsets, so
an answer can cite the exact passage. A file no loader can read is never fatal: `walk` reports it as skipped with
the reason (unknown extension, empty, not the format its extension says, encrypted, over the size limit...).
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ragfunnel.corpus.base import BaseCorpus
from ragfunnel.corpus.loaders.base import Container, LoadedFile, LoaderOptions, Unreadable
from ragfunnel.corpus.loaders.decode import read_bytes
from ragfunnel.corpus.loaders.registry import loader_for
from ragfunnel.errors import CorpusError
from ragfunnel.types import Document, Unit

SKIPPED_DIRS = {".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", ".tox", ".mypy_cache"}


@dataclass(frozen=True)
class SourceFile:
    path: Path  # on disk
    rel: str  # the document id: relative to the PATH given, forward slashes


@dataclass
class Skipped:
    rel: str
    reason: str


@dataclass
class WalkResult:
    documents: list[Document] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)  # whole files, with the reason
    problems: list[Skipped] = field(default_factory=list)  # parts of files that loaded (a JSONL line, ...)
    hashes: dict[str, str] = field(default_factory=dict)  # file id -> sha256 of its bytes


def _matches(rel: str, patterns: Sequence[str]) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(name, p) for p in patterns)


def source_files(paths: Iterable[str | Path], include: Sequence[str] = (), exclude: Sequence[str] = ()) -> Iterator[SourceFile]:
    """Every regular file under `paths` (recursively, sorted, hidden and tool folders left out) whose id matches an
    `include` glob (when any is given) and no `exclude` glob; a glob matches the relative path or the file name."""
    for given in paths:
        root = Path(given).expanduser()
        if root.is_file():
            candidates = [(root, root.name)]
        elif root.is_dir():
            candidates = []
            for folder, dirs, files in os.walk(root):
                dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.startswith("."))
                for name in sorted(files):
                    if name.startswith("."):
                        continue
                    path = Path(folder) / name
                    candidates.append((path, path.relative_to(root).as_posix()))
            candidates.sort(key=lambda c: c[1])
        else:
            raise CorpusError(f"{root}: no such file or folder")
        for path, rel in candidates:
            if path.is_symlink() and not path.resolve().is_file():
                continue
            if include and not _matches(rel, include):
                continue
            if exclude and _matches(rel, exclude):
                continue
            yield SourceFile(path, rel)


def to_document(doc_id: str, loaded: LoadedFile, rel: str) -> Document:
    units = tuple(
        Unit(f"{doc_id}:{n:04d}", b.text, section=b.section, page=b.page, start=b.start, end=b.end)
        for n, b in enumerate(loaded.blocks, 1)
    )
    metadata = {k: v for k, v in loaded.metadata.items() if k not in ("path", "format", "label")}
    metadata.update(path=rel, format=loaded.format, label=doc_id)
    return Document(doc_id, loaded.title or rel.rsplit("/", 1)[-1], units, metadata)


def load_file(source: SourceFile, options: LoaderOptions) -> tuple[list[Document], list[Skipped], str]:
    """The documents of one file, the problems of the parts it skipped and the sha256 of its bytes; `Unreadable`
    when nothing loads."""
    loader = loader_for(source.path)
    if loader is None:
        raise Unreadable(f"no loader for {source.path.suffix or 'files without an extension'}")
    # the loaders' own check of the size limit, empty files and file-system errors, before anything is parsed
    digest = hashlib.sha256(read_bytes(source.path, options)).hexdigest()
    loaded = loader(source.path, options)
    if isinstance(loaded, Container):
        docs = [to_document(f"{source.rel}#{f.key}", f, source.rel) for f in loaded.files]
        return docs, [Skipped(source.rel, p) for p in loaded.problems], digest
    return [to_document(source.rel, loaded, source.rel)], [], digest


def walk(paths: Iterable[str | Path], include: Sequence[str] = (), exclude: Sequence[str] = (),
         options: LoaderOptions | None = None) -> WalkResult:
    """Load every file under `paths`; what cannot be read is reported, never raised (but a missing PATH is)."""
    options = options or LoaderOptions()
    result = WalkResult()
    seen: dict[str, str] = {}
    for source in source_files(paths, include, exclude):
        if source.rel in seen:
            result.skipped.append(Skipped(source.rel, f"the same id as {seen[source.rel]} (two PATHs hold it)"))
            continue
        seen[source.rel] = str(source.path)
        try:
            docs, problems, digest = load_file(source, options)
        except Unreadable as exc:
            result.skipped.append(Skipped(source.rel, str(exc)))
            continue
        except (OSError, ValueError, RecursionError, MemoryError) as exc:  # a loader's bug must not stop a sync
            result.skipped.append(Skipped(source.rel, f"could not be read ({type(exc).__name__})"))
            continue
        result.documents.extend(docs)
        result.problems.extend(problems)
        result.hashes[source.rel] = digest
    return result


class FolderCorpus(BaseCorpus):
    """The files under one or more paths, as a `Corpus` (generic domain, no question sets, no query filter)."""

    name = "files"

    def __init__(self, paths: str | Path | Sequence[str | Path], include: Sequence[str] = (),
                 exclude: Sequence[str] = (), options: LoaderOptions | None = None):
        self.paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
        self.include, self.exclude, self.options = list(include), list(exclude), options or LoaderOptions()
        self.last_walk: WalkResult | None = None

    def documents(self) -> Iterator[Document]:
        self.last_walk = walk(self.paths, self.include, self.exclude, self.options)
        return iter(self.last_walk.documents)
