"""The folder corpus: ids are relative paths with forward slashes (records: RELPATH#id), include/exclude globs,
hidden and tool folders left out, and every file that cannot be read is reported with its reason, never raised."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ragfunnel.corpus import make_corpus
from ragfunnel.corpus.folder import FolderCorpus, source_files, walk
from tests.helpers import add_loader
from ragfunnel.corpus.loaders.base import Block, Container, LoadedFile, LoaderOptions, Unreadable
from ragfunnel.errors import CorpusError


def load_note(path: Path, options: LoaderOptions) -> LoadedFile:
    """A toy format for these tests: one block a line; a first line '#title' names the file; 'BROKEN' fails."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if lines and lines[0] == "BROKEN":
        raise Unreadable("not a note")
    title = lines[0][1:] if lines and lines[0].startswith("#") else path.stem
    return LoadedFile.of(title, [Block(line, section=("notes",)) for line in lines if not line.startswith("#")],
                         {"lines": len(lines)}, format="note")


def load_notes(path: Path, options: LoaderOptions) -> Container:
    files, problems = [], []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        key, _, text = line.partition("=")
        if not text:
            problems.append(f"line {n}: no text")
            continue
        files.append(LoadedFile.of(key, [Block(text)], format="notes", key=key))
    return Container(tuple(files), tuple(problems))


@pytest.fixture
def notes(monkeypatch, tmp_path):
    add_loader(monkeypatch, ".note", load_note)
    add_loader(monkeypatch, ".notes", load_notes)
    root = tmp_path / "docs"
    (root / "cardio" / "deep").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "a.note").write_text("#First\nThe heart pumps blood.\nValves keep it one way.\n")
    (root / "cardio" / "deep" / "b.note").write_text("Arteries carry blood away from the heart.\n")
    (root / "cardio" / "records.notes").write_text("r1=Aspirin thins the blood.\nbroken line\nr2=Statins lower cholesterol.\n")
    (root / "empty.note").write_text("")
    (root / "bad.note").write_text("BROKEN\nwhatever\n")
    (root / "photo.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really")
    (root / ".hidden.note").write_text("secret\n")
    (root / ".git" / "config.note").write_text("[core]\n")
    return root


def test_ids_are_relative_paths_and_records_are_path_hash_id(notes):
    result = walk([notes])
    ids = [d.doc_id for d in result.documents]
    assert ids == ["a.note", "cardio/deep/b.note", "cardio/records.notes#r1", "cardio/records.notes#r2"]
    first = result.documents[0]
    assert first.title == "First" and first.metadata == {"lines": 3, "path": "a.note", "format": "note", "label": "a.note"}
    assert [u.unit_id for u in first.units] == ["a.note:0001", "a.note:0002"]
    text = "\n\n".join(u.text for u in first.units)
    assert all(text[u.start:u.end] == u.text and u.section == ("notes",) for u in first.units)
    assert result.documents[2].metadata["path"] == "cardio/records.notes"
    assert set(result.hashes) == {"a.note", "cardio/deep/b.note", "cardio/records.notes"}


def test_what_cannot_be_read_is_reported_with_its_reason(notes):
    result = walk([notes])
    assert {(s.rel, s.reason) for s in result.skipped} == {
        ("empty.note", "empty file"), ("bad.note", "not a note"), ("photo.jpg", "no loader for .jpg")}
    assert [(p.rel, p.reason) for p in result.problems] == [("cardio/records.notes", "line 2: no text")]


def test_size_limit_and_a_loader_bug_are_skips(notes, monkeypatch):
    result = walk([notes], options=LoaderOptions(max_bytes=30))
    assert ("a.note", "larger than 30 bytes") in {(s.rel, s.reason) for s in result.skipped}

    def crash(path, options):
        raise ValueError("a bug in a loader")

    add_loader(monkeypatch, ".note", crash)
    assert ("a.note", "could not be read (ValueError)") in {(s.rel, s.reason) for s in walk([notes]).skipped}


def test_include_and_exclude_globs_match_the_path_or_the_name(notes):
    rels = [s.rel for s in source_files([notes], include=["*.note"], exclude=["cardio/deep/*"])]
    assert rels == ["a.note", "bad.note", "empty.note"]
    assert [s.rel for s in source_files([notes], include=["cardio/*"])] == ["cardio/deep/b.note", "cardio/records.notes"]
    assert [s.rel for s in source_files([notes], exclude=["*.notes", "*.jpg", "*.note"])] == []


def test_a_single_file_is_named_by_its_name_and_a_missing_path_is_an_error(notes, tmp_path):
    assert [d.doc_id for d in walk([notes / "cardio" / "deep" / "b.note"]).documents] == ["b.note"]
    with pytest.raises(CorpusError, match="no such file or folder"):
        walk([tmp_path / "nowhere"])


def test_the_folder_corpus_is_registered(notes):
    corpus = make_corpus("files", notes)
    assert isinstance(corpus, FolderCorpus) and corpus.query_filter("in season 8") is None
    assert len(list(corpus.documents())) == 4 and len(corpus.last_walk.skipped) == 3


def test_any_exception_of_a_loader_is_a_skip(notes, monkeypatch):
    def crash(path, options):
        raise KeyError("a library's bug")  # not one of the errors a loader is expected to raise

    add_loader(monkeypatch, ".note", crash)
    result = walk([notes])
    assert ("a.note", "could not be read (KeyError)") in {(s.rel, s.reason) for s in result.skipped}
    assert [d.doc_id for d in result.documents] == ["cardio/records.notes#r1", "cardio/records.notes#r2"]


def test_text_that_is_not_unicode_is_repaired_and_reported(notes, monkeypatch):
    def surrogates(path, options):  # what a loader may return: a PDF's text layer, YAML's "\ud800" escape
        return LoadedFile.of("t\ud800", [Block("one \udc00 two", section=("s\udfff",)), Block("ok")],
                             {"k\ud800": ["v\ud800"]}, format="note")

    add_loader(monkeypatch, ".note", surrogates)
    result = walk([notes / "a.note"])
    (doc,) = result.documents
    assert doc.title == "t\ufffd" and doc.units[0].text == "one \ufffd two" and doc.units[0].section == ("s\ufffd",)
    assert doc.metadata["k\ufffd"] == ["v\ufffd"]
    assert [(p.rel, p.reason) for p in result.problems] == [
        ("a.note", "title: 1 lone surrogate replaced by U+FFFD"), ("a.note", "text: 1 lone surrogate replaced by U+FFFD"),
        ("a.note", "section: 1 lone surrogate replaced by U+FFFD"),
        ("a.note", "metadata: 2 lone surrogates replaced by U+FFFD")]


def test_a_file_name_that_is_not_utf8_gets_an_escaped_id(notes):
    raw = os.fsencode(notes) + b"/caf\xe9.note"
    try:
        with open(raw, "wb") as f:
            f.write(b"Latin-1 name\n")
    except OSError:
        pytest.skip("this file system refuses names that are not UTF-8")
    result = walk([notes], include=["*.note"])
    assert "caf\\xe9.note" in [d.doc_id for d in result.documents]
    assert ("caf\\xe9.note", "empty file") not in {(s.rel, s.reason) for s in result.skipped}
    assert [d.doc_id for d in walk([os.fsdecode(raw)]).documents] == ["caf\\xe9.note"]
