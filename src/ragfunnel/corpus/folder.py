"""A corpus of the user's own files: every file under the given paths that a loader reads (corpus/loaders/).

A file's document id is its path relative to the PATH given, with forward slashes (`reviews/cardio/med-10.pdf`); a
record of a container file (JSONL) is `RELPATH#<record id>`. A single file given as PATH is named by its file name.
Each block of a file becomes a unit (`<doc id>:<n>`) that keeps its section path, page and character offsets, so
an answer can cite the exact passage. A file no loader can read is never fatal: `walk` reports it as skipped with
the reason (unknown extension, empty, not the format its extension says, encrypted, over the size limit, a loader's
own failure...). Text that is not valid Unicode (a lone surrogate) is repaired with U+FFFD and reported as a problem
of its file; a file name that is not UTF-8 gets an id with its bytes escaped (`caf\\xe9.md`).

`scan` is the walk of a sync: given the `FileState`s of the last one it parses only what changed. A file whose size
and time stamp are as remembered is not opened; one whose stamp changed is read and hashed, and parsed only when its
bytes changed.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from ragfunnel.corpus.base import BaseCorpus
from ragfunnel.corpus.loaders.base import Container, LoadedFile, LoaderOptions, Unreadable, repaired, valid_text
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
            candidates = [(root, _file_id(root.name))]
        elif root.is_dir():
            candidates = []
            for folder, dirs, files in os.walk(root):
                dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.startswith("."))
                for name in sorted(files):
                    if name.startswith("."):
                        continue
                    path = Path(folder) / name
                    candidates.append((path, _file_id(path.relative_to(root).as_posix())))
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


def _file_id(rel: str) -> str:
    """A relative path as a document id: a name that is not UTF-8 (Python holds its bytes as lone surrogates, which
    no index can store) keeps its bytes escaped, `caf\\xe9.md`, so two such names stay two ids."""
    if rel.isascii() or valid_text(rel)[1] == 0:
        return rel
    return os.fsencode(rel).decode("utf-8", "backslashreplace")


def to_document(doc_id: str, loaded: LoadedFile, rel: str) -> Document:
    units = tuple(
        Unit(f"{doc_id}:{n:04d}", b.text, section=b.section, page=b.page, start=b.start, end=b.end)
        for n, b in enumerate(loaded.blocks, 1)
    )
    metadata = {k: v for k, v in loaded.metadata.items() if k not in ("path", "format", "label")}
    metadata.update(path=rel, format=loaded.format, label=doc_id)
    return Document(doc_id, loaded.title or rel.rsplit("/", 1)[-1], units, metadata)


@dataclass(frozen=True)
class FileState:
    """What a sync remembers of one file, so that the next one can tell it unchanged without reading it: its size
    and modification time (then, when those changed, the sha256 of its bytes), the documents it gave, the parts it
    skipped, or why it was skipped as a whole."""

    size: int
    mtime_ns: int | None  # None: modified too close to the scan to trust (a later write may keep the same stamp)
    sha256: str | None = None  # None: skipped before it was read (no loader, too large, not readable)
    docs: tuple[str, ...] = ()  # the document ids it gave (one; a container's records: RELPATH#<id>)
    problems: tuple[str, ...] = ()  # parts skipped inside it (a JSONL line...)
    skipped: str | None = None  # why it gave no document

    def to_json(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items() if v not in (None, ())}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FileState:
        return cls(int(data["size"]), data.get("mtime_ns"), data.get("sha256"), tuple(data.get("docs", ())),
                   tuple(data.get("problems", ())), data.get("skipped"))


@dataclass
class ScanResult:
    states: dict[str, FileState] = field(default_factory=dict)  # every file found, as it is now, in walk order
    documents: dict[str, list[Document]] = field(default_factory=dict)  # the files parsed this time (new, changed)
    duplicates: list[Skipped] = field(default_factory=list)  # a second file with an id already taken

    @property
    def unchanged(self) -> list[str]:
        """Files found as `known` said (same stat, or same bytes): not parsed again."""
        return [rel for rel in self.states if rel not in self.documents]


# A file modified less than this before the scan may be written again within the same time stamp (file systems
# keep seconds, or ticks of a few ms): it is remembered without its stamp, so the next scan reads and hashes it.
RACY_NS = 2_000_000_000


def _scan_file(source: SourceFile, options: LoaderOptions, old: FileState | None,
               now_ns: int) -> tuple[FileState, list[Document] | None]:
    """The state of one file and its documents, or None for them when `old` still describes it (same size and time
    stamp, or same bytes): then nothing is parsed. A file that cannot be read is a state with `skipped`."""
    try:
        status = source.path.stat()
    except OSError as exc:
        return FileState(0, None, skipped=f"cannot read: {exc.strerror or type(exc).__name__}"), []
    if old is not None and old.mtime_ns is not None and (old.size, old.mtime_ns) == (status.st_size,
                                                                                     status.st_mtime_ns):
        return old, None
    stamp = status.st_mtime_ns if status.st_mtime_ns < now_ns - RACY_NS else None
    loader = loader_for(source.path)
    if loader is None:
        suffix = Path(source.rel).suffix or "files without an extension"
        return FileState(status.st_size, stamp, skipped=f"no loader for {suffix}"), []
    try:
        # the loaders' own check of the size limit, empty files and file-system errors, before anything is parsed
        digest = hashlib.sha256(read_bytes(source.path, options)).hexdigest()
    except Unreadable as exc:
        return FileState(status.st_size, stamp, skipped=str(exc)), []
    if old is not None and old.sha256 == digest:  # touched, not changed
        return replace(old, size=status.st_size, mtime_ns=stamp), None
    state = FileState(status.st_size, stamp, digest)
    try:
        loaded = loader(source.path, options)
    except Unreadable as exc:
        return replace(state, skipped=valid_text(str(exc))[0]), []
    except Exception as exc:  # a loader's bug (or its library's) must not stop a sync: the file is skipped
        return replace(state, skipped=f"could not be read ({type(exc).__name__})"), []
    if isinstance(loaded, Container):
        files, problems = [], [valid_text(p)[0] for p in loaded.problems]
        for f in loaded.files:
            f, notes = repaired(f)
            files.append(f)
            problems.extend(f"{f.key}: {note}" for note in notes)
        docs = _unique([to_document(f"{source.rel}#{f.key}", f, source.rel) for f in files], problems)
    else:
        loaded, notes = repaired(loaded)
        docs, problems = [to_document(source.rel, loaded, source.rel)], notes
    return replace(state, docs=tuple(d.doc_id for d in docs), problems=tuple(problems)), docs


def _unique(docs: list[Document], problems: list[str]) -> list[Document]:
    """The first document of each id (two records whose ids differed only by a repaired character now share one)."""
    seen: set[str] = set()
    out = []
    for doc in docs:
        if doc.doc_id in seen:
            problems.append(f"{doc.doc_id}: a second record with this id, skipped")
            continue
        seen.add(doc.doc_id)
        out.append(doc)
    return out


def scan(paths: Iterable[str | Path], include: Sequence[str] = (), exclude: Sequence[str] = (),
         options: LoaderOptions | None = None, known: Mapping[str, FileState] | None = None) -> ScanResult:
    """Every file under `paths` with its state; only files that are new or changed since `known` (the states of the
    last scan) are parsed. What cannot be read is a state with the reason, never raised (a missing PATH is)."""
    options, known = options or LoaderOptions(), known or {}
    result = ScanResult()
    seen: dict[str, str] = {}
    now_ns = time.time_ns()
    for source in source_files(paths, include, exclude):
        if source.rel in seen:
            result.duplicates.append(Skipped(source.rel, f"the same id as {seen[source.rel]} (two PATHs hold it)"))
            continue
        seen[source.rel] = str(source.path)
        state, docs = _scan_file(source, options, known.get(source.rel), now_ns)
        result.states[source.rel] = state
        if docs is not None:
            result.documents[source.rel] = docs
    return result


def walk(paths: Iterable[str | Path], include: Sequence[str] = (), exclude: Sequence[str] = (),
         options: LoaderOptions | None = None) -> WalkResult:
    """Load every file under `paths`; what cannot be read is reported, never raised (but a missing PATH is)."""
    scanned = scan(paths, include, exclude, options)
    result = WalkResult(skipped=list(scanned.duplicates))
    for rel, state in scanned.states.items():
        if state.skipped is not None:
            result.skipped.append(Skipped(rel, state.skipped))
            continue
        result.documents.extend(scanned.documents[rel])
        result.problems.extend(Skipped(rel, p) for p in state.problems)
        result.hashes[rel] = state.sha256
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
