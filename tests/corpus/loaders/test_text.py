"""Plain text: paragraphs as blocks with offsets, the title rule, any common encoding, and hostile files refused
with a reason, never a traceback."""

from __future__ import annotations

import codecs
import random
from pathlib import Path

import pytest

from ragfunnel.corpus.loaders import text
from ragfunnel.corpus.loaders.base import LoadedFile, LoaderOptions, Unreadable
from ragfunnel.corpus.loaders.registry import loader_for

OPTIONS = LoaderOptions()
SAMPLE = "Notes du café\n\nLe café de Müller ouvre à huit heures.\nIl ferme tard.\n\n  \t\nGrüße aus Zürich.\n"


def load(path: Path, options: LoaderOptions = OPTIONS) -> LoadedFile:
    return text.load(path, options)


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def loads_or_unreadable(path: Path, options: LoaderOptions = OPTIONS) -> LoadedFile | Unreadable:
    try:
        return load(path, options)
    except Unreadable as e:
        return e


def test_registered_for_text_extensions():
    for name in ("a.txt", "A.TXT", "b.text", "c.rst"):
        assert loader_for(Path(name)) is text.load


def test_paragraphs_are_blocks_with_offsets(tmp_path):
    loaded = load(write(tmp_path, "notes.txt", SAMPLE.encode()))
    assert [b.text for b in loaded.blocks] == [
        "Notes du café", "Le café de Müller ouvre à huit heures.\nIl ferme tard.", "Grüße aus Zürich."]
    assert all(loaded.text[b.start:b.end] == b.text for b in loaded.blocks)
    assert loaded.title == "Notes du café"
    assert loaded.format == "text"
    assert loaded.metadata == {"encoding": "utf-8"}


def test_crlf_and_cr_line_ends(tmp_path):
    loaded = load(write(tmp_path, "w.txt", b"one\r\ntwo\r\n\r\nthree\rfour\r\rfive"))
    assert [b.text for b in loaded.blocks] == ["one\ntwo", "three\nfour", "five"]


def test_title_is_the_file_stem_when_the_first_line_is_long(tmp_path):
    loaded = load(write(tmp_path, "long-line.txt", ("word " * 40 + "\n\nmore").encode()))
    assert loaded.title == "long-line"
    assert load(write(tmp_path, "lead.txt", b"\n\n   Short title  \nbody")).title == "Short title"


ENCODED = {
    "utf-8": SAMPLE.encode("utf-8"),
    "utf-8-bom": codecs.BOM_UTF8 + SAMPLE.encode("utf-8"),
    "utf-16-le-bom": codecs.BOM_UTF16_LE + SAMPLE.encode("utf-16-le"),
    "utf-16-be-bom": codecs.BOM_UTF16_BE + SAMPLE.encode("utf-16-be"),
    "latin-1": SAMPLE.encode("latin-1"),
    "cp1252": SAMPLE.encode("cp1252"),
}


@pytest.mark.parametrize("name", sorted(ENCODED))
def test_every_encoding_gives_the_same_text(tmp_path, name):
    reference = load(write(tmp_path, "ref.txt", SAMPLE.encode()))
    loaded = load(write(tmp_path, f"{name}.txt", ENCODED[name]))
    assert loaded.text == reference.text
    assert "café" in loaded.text and "Müller" in loaded.text
    assert loaded.metadata["encoding"]


def test_cp1252_quotes_and_euro(tmp_path):
    loaded = load(write(tmp_path, "q.txt", "“Prix” : 5 € – d’accord".encode("cp1252")))
    assert loaded.text == "“Prix” : 5 € – d’accord"
    assert loaded.metadata == {"encoding": "cp1252"}


@pytest.mark.parametrize("data, reason", [
    (b"", "empty file"),
    (b" \n\t\r\n ", "empty file"),
    (codecs.BOM_UTF16_LE + " \n ".encode("utf-16-le"), "empty file"),
    (codecs.BOM_UTF8, "empty file"),
    (b"some text\x00with a NUL byte", "not text (binary?)"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01", "not text (binary?)"),
])
def test_unreadable_with_a_reason(tmp_path, data, reason):
    with pytest.raises(Unreadable) as raised:
        load(write(tmp_path, "bad.txt", data))
    assert str(raised.value) == reason


@pytest.mark.parametrize("seed", range(5))
def test_random_bytes_are_not_text(tmp_path, seed):
    data = random.Random(seed).randbytes(2048)
    result = loads_or_unreadable(write(tmp_path, "random.txt", data))
    assert isinstance(result, Unreadable) and str(result) == "not text (binary?)"


def test_a_file_over_the_limit_is_not_read(tmp_path):
    path = write(tmp_path, "big.txt", b"a" * 2000)
    with pytest.raises(Unreadable, match="^larger than 1000 bytes$"):
        load(path, LoaderOptions(max_bytes=1000))
    assert load(path, LoaderOptions(max_bytes=2000)).text == "a" * 2000


def test_a_3mb_single_line_loads(tmp_path):
    loaded = load(write(tmp_path, "one-line.txt", b"lorem ipsum " * 262_144))
    assert len(loaded.blocks) == 1 and len(loaded.text) > 3_000_000
    assert loaded.title == "one-line"
    latin = load(write(tmp_path, "latin.txt", "café ".encode("latin-1") * 600_000))
    assert latin.text.startswith("café café") and latin.metadata == {"encoding": "cp1252"}


def test_missing_file_is_unreadable(tmp_path):
    with pytest.raises(Unreadable, match="cannot read"):
        load(tmp_path / "gone.txt")
