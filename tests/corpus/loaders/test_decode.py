"""Bytes to text: the size limit checked before reading, encodings found (accents survive), binary refused."""

from __future__ import annotations

import codecs
import random
from pathlib import Path

import pytest

from ragfunnel.corpus.loaders import decode
from ragfunnel.corpus.loaders.base import LoaderOptions, Unreadable
from ragfunnel.corpus.loaders.decode import (
    EMPTY, NOT_TEXT, codec_name, decode_text, html_declared_charset, needs, read_bytes, western,
)

WESTERN = "Le café de Müller\n\nGrüße aus Zürich, naïve façade, señor Ångström.\n"
CP1252_ONLY = "Müller’s café – “quoted” at 5 € in Paris–Berlin… ¿qué? ¡Sí! 25 °C © «façade»"
ENCODINGS = {
    "utf-8": lambda s: s.encode("utf-8"),
    "utf-8-bom": lambda s: codecs.BOM_UTF8 + s.encode("utf-8"),
    "utf-16-le-bom": lambda s: codecs.BOM_UTF16_LE + s.encode("utf-16-le"),
    "utf-16-be-bom": lambda s: codecs.BOM_UTF16_BE + s.encode("utf-16-be"),
    "utf-32-le-bom": lambda s: codecs.BOM_UTF32_LE + s.encode("utf-32-le"),
    "latin-1": lambda s: s.encode("latin-1"),
    "cp1252": lambda s: s.encode("cp1252"),
}


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_the_same_text_in_every_encoding_decodes_to_the_same_string(name):
    text, encoding = decode_text(ENCODINGS[name](WESTERN))
    assert text == WESTERN
    assert codec_name(encoding)


@pytest.mark.parametrize("sample", ["café Müller", "Grüße", "é", "Ça va? Où est la gare?"])
def test_short_latin1_keeps_its_accents(sample):
    # charset-normalizer alone reads these few bytes as cp1006 (Urdu)
    assert decode_text(sample.encode("latin-1"))[0] == sample


def test_cp1252_punctuation_and_euro():
    assert decode_text(CP1252_ONLY.encode("cp1252")) == (CP1252_ONLY, "cp1252")


@pytest.mark.parametrize("sample, encoding", [
    ("Zażółć gęślą jaźń, mówił Łukasz w Łodzi.", "cp1250"),
    ("Привет, как дела? Это тестовый текст на русском языке.", "cp1251"),
])
def test_other_code_pages_are_not_mistaken_for_cp1252(sample, encoding):
    data = sample.encode(encoding)
    assert western(data) is None
    assert decode_text(data)[0] == sample


def test_names_of_the_encodings():
    assert decode_text(b"plain")[1] == "utf-8"
    assert decode_text(codecs.BOM_UTF8 + b"x")[1] == "utf-8-sig"
    assert decode_text(codecs.BOM_UTF16_LE + "x".encode("utf-16-le"))[1] == "utf-16-le"
    assert decode_text("café".encode("latin-1"))[1] == "cp1252"


def test_utf16_without_bom_is_detected_not_binary():
    sample = "Hello café Müller, this is a longer line of text.\n" * 4
    assert decode_text(sample.encode("utf-16-le"))[0] == sample


@pytest.mark.parametrize("data", [
    b"text with a NUL \x00 byte in the middle of it",
    b"\x00\x01\x02 some NUL bytes",  # charset-normalizer alone calls this UTF-16
    random.Random(1).randbytes(4096),
    random.Random(2).randbytes(4096).replace(b"\x00", b"\x01"),  # no NUL at all
    random.Random(3).randbytes(64).replace(b"\x00", b"\x01"),
    bytes(range(1, 32)) * 20,  # control characters
    codecs.BOM_UTF16_LE + b"\x00\xd8",  # a BOM, then a lone surrogate: not UTF-16 after all
])
def test_binary_is_not_text(data):
    with pytest.raises(Unreadable, match=r"not text \(binary\?\)"):
        decode_text(data)
    assert NOT_TEXT == "not text (binary?)"


def test_html_declared_charset():
    assert html_declared_charset(b'<html><head><meta charset="windows-1252">') == "windows-1252"
    assert html_declared_charset(b"<meta charset=ISO-8859-1 />") == "ISO-8859-1"
    assert html_declared_charset(
        b'<meta http-equiv="Content-Type" content="text/html; charset=iso-8859-15">') == "iso-8859-15"
    assert html_declared_charset(b"<p>no declaration</p>") is None
    assert html_declared_charset(b" " * 5000 + b'<meta charset="latin1">') is None  # only the first bytes count


def test_declared_encoding_is_honoured_and_latin1_read_as_cp1252():
    assert decode_text("naïve".encode("iso8859-15"), declared="iso-8859-15")[0] == "naïve"
    assert decode_text("“quoted” €".encode("cp1252"), declared="ISO-8859-1")[0] == "“quoted” €"  # as browsers do
    # a wrong or useless declaration does not break the text
    assert decode_text("café".encode("utf-8"), declared="latin-1")[0] == "café"  # (cp1252 "cafÃ©" is refused)
    assert decode_text("café".encode("latin-1"), declared="utf-8")[0] == "café"
    assert decode_text(b"plain ascii", declared="utf-16")[0] == "plain ascii"
    assert decode_text(b"plain ascii", declared="rot13")[0] == "plain ascii"
    assert decode_text(b"plain ascii", declared="no-such-charset")[0] == "plain ascii"


def test_codec_name():
    assert codec_name("ISO-8859-1") == "iso8859-1"
    assert codec_name("UTF8") == "utf-8"
    assert codec_name("zlib") is None and codec_name("nonsense") is None


def test_without_charset_normalizer_western_text_still_decodes(monkeypatch):
    monkeypatch.setattr(decode, "importable", lambda module: False)
    assert decode_text("café Müller".encode("latin-1"))[0] == "café Müller"
    assert decode_text(WESTERN.encode("utf-8"))[0] == WESTERN
    with pytest.raises(Unreadable, match=r"needs charset-normalizer: pip install 'ragfunnel\[files\]'"):
        decode_text("Привет, как дела? Это тестовый текст.".encode("cp1251"))


def test_needs_names_the_package_and_the_extra():
    assert str(needs("selectolax")) == "needs selectolax: pip install 'ragfunnel[files]'"


def test_read_bytes(tmp_path: Path):
    f = tmp_path / "a.txt"
    f.write_bytes(b"x" * 100)
    assert read_bytes(f, LoaderOptions(max_bytes=100)) == b"x" * 100
    with pytest.raises(Unreadable, match=r"^larger than 99 bytes$"):
        read_bytes(f, LoaderOptions(max_bytes=99))


def test_read_bytes_checks_the_size_before_opening(tmp_path: Path, monkeypatch):
    f = tmp_path / "big.txt"
    f.write_bytes(b"x" * 1000)

    def never(*args, **kwargs):
        raise AssertionError("opened a file over the limit")

    monkeypatch.setattr(Path, "open", never)
    with pytest.raises(Unreadable, match="larger than 10 bytes"):
        read_bytes(f, LoaderOptions(max_bytes=10))


@pytest.mark.parametrize("content", [b"", b"   \n\t\r\n  "])
def test_read_bytes_empty(tmp_path: Path, content):
    f = tmp_path / "e.txt"
    f.write_bytes(content)
    with pytest.raises(Unreadable, match=f"^{EMPTY}$"):
        read_bytes(f, LoaderOptions())


def test_read_bytes_missing_file_or_folder(tmp_path: Path):
    with pytest.raises(Unreadable, match="cannot read"):
        read_bytes(tmp_path / "missing.txt", LoaderOptions())
    with pytest.raises(Unreadable, match="not a regular file"):
        read_bytes(tmp_path, LoaderOptions())
