"""The DOCX loader: body order with tables where they are, headings as section paths, table rows and list items
as blocks, title and core properties, and hostile files as `Unreadable`, never another exception."""

from __future__ import annotations

import datetime as dt
import io
import random
import zipfile
from pathlib import Path

import pytest

from ragfunnel.corpus.loaders import docx as docx_loader
from ragfunnel.corpus.loaders.base import LoadedFile, LoaderOptions, Unreadable
from ragfunnel.corpus.loaders.registry import loader_for

docx = pytest.importorskip("docx")

OPTIONS = LoaderOptions()


def check_offsets(loaded: LoadedFile) -> None:
    for b in loaded.blocks:
        assert loaded.text[b.start:b.end] == b.text


def sample(path: Path, core_title: str = "", with_title: bool = True) -> Path:
    document = docx.Document()
    core = document.core_properties
    core.title = core_title
    core.author = "Bea Writer"
    core.subject = "Loaders"
    core.keywords = "docx, tests"
    core.created = dt.datetime(2024, 3, 1, 9, 30, tzinfo=dt.UTC)
    if with_title:
        document.add_heading("Field Guide", 0)
    document.add_paragraph("An opening paragraph.")
    document.add_heading("Birds", 1)
    document.add_paragraph("Before the table.")
    table = document.add_table(rows=3, cols=3)
    for i, row in enumerate(table.rows):
        for j, cell in enumerate(row.cells):
            cell.text = f"r{i}c{j}"
    table.cell(0, 0).merge(table.cell(0, 1)).text = "Name"  # spans two columns: once in the row
    table.cell(1, 2).merge(table.cell(2, 2)).text = "tall"  # spans two rows: on each
    document.add_paragraph("After the table.")
    document.add_heading("Songbirds", 2)
    document.add_paragraph("Robin", style="List Bullet")
    document.add_paragraph("Wren", style="List Number")
    document.add_paragraph("")  # empty paragraphs are dropped
    document.add_heading("Fish", 1)
    document.add_paragraph("Trout live in cold water.")
    document.save(str(path))
    return path


def test_body_order_sections_kinds(tmp_path):
    loaded = docx_loader.load(sample(tmp_path / "guide.docx"), OPTIONS)
    assert loaded.format == "docx"
    got = [(b.kind, b.text, b.section) for b in loaded.blocks]
    title, birds, songbirds, fish = ("Field Guide",), ("Field Guide", "Birds"), \
        ("Field Guide", "Birds", "Songbirds"), ("Field Guide", "Fish")
    assert got == [
        ("title", "Field Guide", title),
        ("text", "An opening paragraph.", title),
        ("heading", "Birds", birds),
        ("text", "Before the table.", birds),
        ("table", "Name | r0c2", birds),
        ("table", "r1c0 | r1c1 | tall", birds),
        ("table", "r2c0 | r2c1 | tall", birds),
        ("text", "After the table.", birds),
        ("heading", "Songbirds", songbirds),
        ("list", "Robin", songbirds),
        ("list", "Wren", songbirds),
        ("heading", "Fish", fish),
        ("text", "Trout live in cold water.", fish),
    ]
    assert all(b.page is None for b in loaded.blocks)
    check_offsets(loaded)


def test_title_and_metadata(tmp_path):
    loaded = docx_loader.load(sample(tmp_path / "a.docx", core_title="Core Title"), OPTIONS)
    assert loaded.title == "Core Title"
    assert loaded.metadata["author"] == "Bea Writer"
    assert loaded.metadata["subject"] == "Loaders"
    assert loaded.metadata["keywords"] == "docx, tests"
    assert loaded.metadata["created"] == "2024-03-01T09:30:00+00:00"
    assert docx_loader.load(sample(tmp_path / "b.docx"), OPTIONS).title == "Field Guide"  # the Title paragraph
    assert docx_loader.load(sample(tmp_path / "c.docx", with_title=False), OPTIONS).title == "Birds"  # 1st heading
    plain = docx.Document()
    plain.add_paragraph("Only a paragraph.")
    plain.save(str(tmp_path / "meeting-notes.docx"))
    assert docx_loader.load(tmp_path / "meeting-notes.docx", OPTIONS).title == "meeting-notes"


def test_custom_heading_style_and_nested_levels(tmp_path):
    document = docx.Document()
    from docx.enum.style import WD_STYLE_TYPE

    custom = document.styles.add_style("Chapter Heading", WD_STYLE_TYPE.PARAGRAPH)
    custom.base_style = document.styles["Heading 1"]
    document.add_paragraph("Chapter A", style="Chapter Heading")
    document.add_heading("Deep", 3)
    document.add_paragraph("Under deep.")
    document.add_heading("Shallower", 2)
    document.add_paragraph("Under shallower.")
    document.save(str(tmp_path / "custom.docx"))
    loaded = docx_loader.load(tmp_path / "custom.docx", OPTIONS)
    assert [(b.kind, b.section) for b in loaded.blocks] == [
        ("heading", ("Chapter A",)),
        ("heading", ("Chapter A", "Deep")),
        ("text", ("Chapter A", "Deep")),
        ("heading", ("Chapter A", "Shallower")),
        ("text", ("Chapter A", "Shallower")),
    ]


def zip_bytes(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return buffer.getvalue()


def test_hostile_files_are_unreadable(tmp_path):
    good = sample(tmp_path / "good.docx").read_bytes()
    rng = random.Random(3)
    flipped = bytearray(good)
    for _ in range(30):
        flipped[rng.randrange(len(flipped))] = rng.randrange(256)
    content_types = '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>'
    cases = {
        "empty.docx": b"",
        "random.docx": bytes(rng.getrandbits(8) for _ in range(4000)),
        "text.docx": b"just some text, not a zip at all",
        "no_document.docx": zip_bytes({"[Content_Types].xml": content_types, "hello.txt": "hi"}),
        "no_relationship.docx": zip_bytes({"[Content_Types].xml": content_types, "word/document.xml": "<x/>"}),
        "truncated.docx": good[: len(good) // 2],
        "flipped.docx": bytes(flipped),
        "legacy.docx": bytes.fromhex("d0cf11e0a1b11ae1") + bytes(500),
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(Unreadable):
            docx_loader.load(tmp_path / name, OPTIONS)
    for name in ("random.docx", "text.docx", "no_document.docx", "no_relationship.docx", "truncated.docx"):
        with pytest.raises(Unreadable, match="^not a readable DOCX$"):
            docx_loader.load(tmp_path / name, OPTIONS)


def test_empty_document_has_no_text(tmp_path):
    document = docx.Document()
    document.add_paragraph("   ")
    document.add_table(rows=2, cols=2)  # empty cells
    document.save(str(tmp_path / "blank.docx"))
    with pytest.raises(Unreadable, match="^no text$"):
        docx_loader.load(tmp_path / "blank.docx", OPTIONS)


def test_size_limit_and_zip_bomb(tmp_path):
    path = sample(tmp_path / "big.docx")
    with pytest.raises(Unreadable, match="^larger than 100 bytes$"):
        docx_loader.load(path, LoaderOptions(max_bytes=100))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", " " * 3_000_000)
    (tmp_path / "bomb.docx").write_bytes(buffer.getvalue())
    with pytest.raises(Unreadable, match="unpacks to more than"):
        docx_loader.load(tmp_path / "bomb.docx", LoaderOptions(max_bytes=100_000))


def test_missing_package_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setattr(docx_loader, "importable", lambda module: False)
    with pytest.raises(Unreadable, match=r"needs python-docx: pip install 'ragfunnel\[files\]'"):
        docx_loader.load(sample(tmp_path / "x.docx"), OPTIONS)


def test_registered_by_extension():
    assert loader_for(Path("notes/Minutes.DOCX")) is docx_loader.load
