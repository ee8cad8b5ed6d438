"""The JSONL loader: one record per line with configurable id/title/text/metadata fields, and every broken line a
problem of its own ("line N: why") while the rest of the file loads; a file with no good line is `Unreadable`."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from ragfunnel.corpus.loaders import jsonl
from ragfunnel.corpus.loaders.base import Container, LoadedFile, LoaderOptions, Unreadable
from ragfunnel.corpus.loaders.registry import loader_for

OPTIONS = LoaderOptions()


def check_offsets(loaded: LoadedFile) -> None:
    for b in loaded.blocks:
        assert loaded.text[b.start:b.end] == b.text


def write(path: Path, lines: list) -> Path:
    """Each item a record (dumped as JSON) or a raw line (str or bytes)."""
    raw = [item if isinstance(item, bytes) else (item if isinstance(item, str) else json.dumps(item)).encode()
           for item in lines]
    path.write_bytes(b"\n".join(raw) + b"\n")
    return path


def test_registered_for_jsonl_and_ndjson():
    assert loader_for(Path("a/b.JSONL")) is jsonl.load
    assert loader_for(Path("b.ndjson")) is jsonl.load


def test_records_with_id_title_text_and_scalar_metadata(tmp_path):
    path = write(tmp_path / "docs.jsonl", [
        {"id": "a1", "title": "First", "text": "One paragraph.\n\nAnother one.\r\n  \r\nA third.", "year": 2020,
         "score": 0.5, "ok": True, "tags": ["x"], "nested": {"k": 1}, "none": None},
        {"_id": 7, "title": "Second", "text": "Only text."},
    ])
    container = jsonl.load(path, OPTIONS)
    assert isinstance(container, Container) and container.problems == ()
    first, second = container.files
    assert (first.key, first.title, first.format) == ("a1", "First", "jsonl")
    assert [b.text for b in first.blocks] == ["One paragraph.", "Another one.", "A third."]
    assert first.metadata == {"year": 2020, "score": 0.5, "ok": True}
    assert (second.key, second.text, second.metadata) == ("7", "Only text.", {})
    check_offsets(first)


def test_configured_fields(tmp_path):
    path = write(tmp_path / "docs.jsonl", [
        {"doc": "x", "id": "ignored", "name": "Named", "abstract": "Abstract.", "body": "Body.", "year": 1,
         "lang": "en"},
        {"id": "only-id", "abstract": "no doc field"},
    ])
    options = LoaderOptions(jsonl_id=("doc",), jsonl_title="name", jsonl_text=("abstract", "body"),
                            jsonl_metadata=("lang", "missing"))
    container = jsonl.load(path, options)
    (record,) = container.files
    assert (record.key, record.title, record.text) == ("x", "Named", "Abstract.\n\nBody.")
    assert record.metadata == {"lang": "en"}
    assert container.problems == ("line 2: no id (field 'doc')",)


def test_broken_lines_are_problems_and_the_rest_loads(tmp_path):
    path = write(tmp_path / "mixed.jsonl", [
        {"id": 1, "text": "good one"},
        "{not json",
        "[1, 2]",
        {"title": "no id", "text": "x"},
        {"id": 2, "title": "no text"},
        {"id": 2, "text": "   "},
        b'{"id": 3, "text": "caf\xe9"}',  # Latin-1, not UTF-8
        "",
        {"id": 1, "text": "duplicate"},
        {"id": {"a": 1}, "text": "id is an object"},
        "   ",
        {"id": 4, "text": "good two"},
    ])
    container = jsonl.load(path, OPTIONS)
    assert [f.key for f in container.files] == ["1", "4"]
    problems = container.problems
    assert [p.split(":")[0] for p in problems] == [f"line {n}" for n in (2, 3, 4, 5, 6, 7, 9, 10)]
    assert problems[0].startswith("line 2: not JSON")
    assert problems[1] == "line 3: not a JSON object (a list)"
    assert problems[2] == "line 4: no id (field 'id' or '_id')"
    assert problems[3] == problems[4].replace("line 6", "line 5") == "line 5: no text (field 'text')"
    assert problems[5].startswith("line 7: not UTF-8")
    assert problems[6] == "line 9: duplicate id '1' (first on line 1)"
    assert "not a string or number" in problems[7]


def test_bom_crlf_and_unicode_line_separator(tmp_path):
    text = "before\u2028after"  # U+2028 inside a string is not a line break of the file
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"id": "a", "text": text}, ensure_ascii=False).encode() + b"\r\n"
                     + json.dumps({"id": "b", "text": "two"}).encode() + b"\r\n")
    container = jsonl.load(path, OPTIONS)
    assert [f.key for f in container.files] == ["a", "b"] and container.problems == ()
    assert container.files[0].text == text


@pytest.mark.parametrize("content, reason", [
    (b"", "empty file"),
    (b"  \n\n \n", "empty file"),
    (b"{bad\n[1]\n", "no record loaded (first problem: line 1: not JSON"),
    (b'{"id": "x"}\n', "no record loaded (first problem: line 1: no text"),
])
def test_files_with_no_record_are_unreadable(tmp_path, content, reason):
    path = tmp_path / "f.jsonl"
    path.write_bytes(content)
    with pytest.raises(Unreadable) as err:
        jsonl.load(path, OPTIONS)
    assert str(err.value).startswith(reason)


def test_random_bytes_are_unreadable(tmp_path):
    path = tmp_path / "noise.jsonl"
    path.write_bytes(random.Random(17).randbytes(20_000))
    with pytest.raises(Unreadable, match="no record loaded"):
        jsonl.load(path, OPTIONS)


def test_deep_nesting_is_a_problem_of_its_line(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    deep_object = '{"id": "d", "text": "t", "x": ' + "{\"a\": " * 100_000 + "1" + "}" * 100_001
    path = write(tmp_path / "deep.jsonl", [deep, deep_object, {"id": "ok", "text": "fine"}])
    container = jsonl.load(path, OPTIONS)
    assert [f.key for f in container.files] == ["ok"]
    assert container.problems == ("line 1: JSON nested too deeply", "line 2: JSON nested too deeply")


def test_a_5_mb_line_loads_and_a_broken_one_is_a_problem(tmp_path):
    big = "word " * 1_000_000
    path = write(tmp_path / "big.jsonl", [{"id": "big", "text": big}, '{"id": "cut", "text": "' + "x" * 5_000_000,
                                          {"id": "small", "text": "s"}])
    container = jsonl.load(path, OPTIONS)
    assert [f.key for f in container.files] == ["big", "small"]
    assert len(container.files[0].text) == len(big.strip())
    assert container.problems[0].startswith("line 2: not JSON")


def test_size_limit(tmp_path):
    path = write(tmp_path / "docs.jsonl", [{"id": 1, "text": "x" * 200}])
    with pytest.raises(Unreadable, match="larger than 100 bytes"):
        jsonl.load(path, LoaderOptions(max_bytes=100))


def test_problems_are_capped(tmp_path):
    path = write(tmp_path / "many.jsonl", ["nope"] * 250 + [{"id": 1, "text": "ok"}])
    container = jsonl.load(path, OPTIONS)
    assert len(container.files) == 1
    assert len(container.problems) == jsonl.MAX_PROBLEMS + 1
    assert container.problems[-1] == f"... and {250 - jsonl.MAX_PROBLEMS} more lines skipped"


def test_a_lone_surrogate_is_repaired_with_a_problem_and_the_record_loads(tmp_path):
    # json.dumps escapes a lone surrogate as "\ud800": valid JSON, but not text (issue 35.6: it stopped the sync)
    path = write(tmp_path / "surrogates.jsonl", [
        {"id": "a", "text": "good"},
        {"id": "b", "text": "bad \ud800 here", "title": "t\udc00", "tag": "x\udfff"},
        {"id": "c\ud800", "text": "id"},
        {"id": "d", "text": "a pair \ud83d\ude00 written as two escapes is its character"},
        {"id": "c\udbff", "text": "the same id once repaired"},
    ])
    container = jsonl.load(path, OPTIONS)
    assert [f.key for f in container.files] == ["a", "b", "c\ufffd", "d"]
    b = container.files[1]
    assert (b.text, b.title, b.metadata) == ("bad \ufffd here", "t\ufffd", {"tag": "x\ufffd"})
    assert container.files[3].text == "a pair \U0001F600 written as two escapes is its character"
    check_offsets(b)
    assert container.problems == (
        "line 2: title: 1 lone surrogate replaced by U+FFFD", "line 2: text: 1 lone surrogate replaced by U+FFFD",
        "line 2: metadata: 1 lone surrogate replaced by U+FFFD", "line 3: id: 1 lone surrogate replaced by U+FFFD",
        "line 5: id: 1 lone surrogate replaced by U+FFFD", "line 5: duplicate id 'c\ufffd' (first on line 3)")
    for f in container.files:
        (f.key + f.title + f.text + json.dumps(f.metadata, ensure_ascii=False)).encode("utf-8")
