"""The PDF loader: paragraphs per page with page numbers, de-hyphenation, title and metadata, the pypdf fallback,
and hostile files (encrypted, image-only, empty, random, truncated) as `Unreadable`, never another exception."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pytest

from ragfunnel.corpus.loaders import pdf
from ragfunnel.corpus.loaders.base import LoadedFile, LoaderOptions, Unreadable
from ragfunnel.corpus.loaders.registry import loader_for

pytest.importorskip("reportlab")
from reportlab.lib import pdfencrypt
from reportlab.pdfgen import canvas

OPTIONS = LoaderOptions()

# pages of paragraphs, each paragraph a list of lines as drawn (a blank gap between paragraphs)
PAGES = [
    [["Quarterly Findings"],
     ["The committee reviewed every submission received during the spring",
      "term and found that the most common problem was an incomplete exam-",
      "ple section in the appendix of each report."],
     ["A second paragraph follows after a gap."]],
    [["Page two starts with this paragraph, which talks about budgets."],
     ["It continues here with a closing remark."]],
    [["The third page has one line only."]],
]


def write_pdf(path: Path, pages: list[list[list[str]]], title: str | None = None, author: str | None = None,
              encrypt=None) -> Path:
    c = canvas.Canvas(str(path), encrypt=encrypt)
    if title is not None:
        c.setTitle(title)
    if author is not None:
        c.setAuthor(author)
    for page in pages:
        y = 780
        for paragraph in page:
            for line in paragraph:
                c.drawString(72, y, line)
                y -= 14
            y -= 14  # a blank line's gap between paragraphs
        c.showPage()
    c.save()
    return path


def check_offsets(loaded: LoadedFile) -> None:
    for b in loaded.blocks:
        assert loaded.text[b.start:b.end] == b.text


@pytest.fixture(params=["pypdfium2", "pypdf"])
def backend(request, monkeypatch):
    """Each test runs with pypdfium2, then with the pure-Python pypdf fallback (pypdfium2 hidden)."""
    if request.param == "pypdf":
        pytest.importorskip("pypdf")
        monkeypatch.setattr(pdf, "importable", lambda module: module != "pypdfium2")
    else:
        pytest.importorskip("pypdfium2")
    return request.param


def test_paragraphs_pages_title_metadata(tmp_path, backend):
    path = write_pdf(tmp_path / "report.pdf", PAGES, title="Annual Review 2024", author="Ann Author")
    loaded = pdf.load(path, OPTIONS)
    assert loaded.format == "pdf"
    assert loaded.title == "Annual Review 2024"
    assert loaded.metadata["pages"] == 3
    assert loaded.metadata["author"] == "Ann Author"
    assert loaded.metadata["created"].startswith(("19", "20"))  # ISO 8601 from the PDF date
    assert "subject" not in loaded.metadata  # reportlab's placeholder "unspecified" is dropped
    expected = [
        (1, "Quarterly Findings"),
        (1, ("The committee reviewed every submission received during the spring term and found that the most "
             "common problem was an incomplete example section in the appendix of each report.")),
        (1, "A second paragraph follows after a gap."),
        (2, "Page two starts with this paragraph, which talks about budgets."),
        (2, "It continues here with a closing remark."),
        (3, "The third page has one line only."),
    ]
    got = [(b.page, b.text) for b in loaded.blocks]
    if backend == "pypdfium2":
        assert got == expected
    else:  # pypdf gives no line positions: a gap after a full-width line is not seen, the text per page is the same
        assert expected[1] in got
        for page in (1, 2, 3):
            assert " ".join(t for p, t in got if p == page) == " ".join(t for p, t in expected if p == page)
    assert all(b.kind == "text" and b.section == () for b in loaded.blocks)
    check_offsets(loaded)


def test_title_falls_back_to_first_line_then_stem(tmp_path, backend):
    loaded = pdf.load(write_pdf(tmp_path / "a.pdf", PAGES), OPTIONS)  # reportlab's default title is "untitled"
    assert loaded.title == "Quarterly Findings"
    long_first = [[[("This first line is far too long to be a title because it goes on and on and on, well past "
                     "what anyone would call a heading.")]]]
    assert pdf.load(write_pdf(tmp_path / "minutes-2024.pdf", long_first), OPTIONS).title == "minutes-2024"
    assert pdf.load(write_pdf(tmp_path / "b.pdf", PAGES, title="report_final.docx"), OPTIONS).title == \
        "Quarterly Findings"  # a file name is not a title


def test_encrypted_pdf(tmp_path, backend):
    path = write_pdf(tmp_path / "locked.pdf", PAGES, encrypt=pdfencrypt.StandardEncryption("secret"))
    with pytest.raises(Unreadable, match="^encrypted PDF$"):
        pdf.load(path, OPTIONS)


def test_owner_password_only_is_read(tmp_path, backend):
    """Restrictions with an empty user password: any reader opens it, so it is indexed."""
    encrypt = pdfencrypt.StandardEncryption("", ownerPassword="owner", canCopy=0)
    loaded = pdf.load(write_pdf(tmp_path / "restricted.pdf", PAGES[1:2], encrypt=encrypt), OPTIONS)
    assert loaded.blocks[0].text.startswith("Page two starts")


def test_image_only_pdf(tmp_path, backend):
    path = tmp_path / "scan.pdf"
    c = canvas.Canvas(str(path))
    c.rect(100, 100, 300, 400, fill=1)
    c.showPage()
    c.rect(50, 50, 100, 100)
    c.showPage()
    c.save()
    with pytest.raises(Unreadable, match=r"^no text layer \(image-only PDF\?\)$"):
        pdf.load(path, OPTIONS)


def test_hostile_files_are_unreadable(tmp_path, backend):
    good = write_pdf(tmp_path / "good.pdf", PAGES).read_bytes()
    rng = random.Random(7)
    cases = {
        "empty.pdf": b"",
        "spaces.pdf": b"  \n ",
        "random.pdf": bytes(rng.getrandbits(8) for _ in range(4000)),
        "header_only.pdf": b"%PDF-1.4\n",
        "truncated.pdf": good[: len(good) // 3],
        "html.pdf": b"<html><body>not a pdf</body></html>",
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(Unreadable):
            pdf.load(tmp_path / name, OPTIONS)
    with pytest.raises(Unreadable, match="not a readable PDF"):
        pdf.load(tmp_path / "random.pdf", OPTIONS)


def test_size_limit(tmp_path):
    path = write_pdf(tmp_path / "big.pdf", PAGES)
    with pytest.raises(Unreadable, match="^larger than 100 bytes$"):
        pdf.load(path, LoaderOptions(max_bytes=100))


def test_missing_packages_name_the_extra(tmp_path, monkeypatch):
    monkeypatch.setattr(pdf, "importable", lambda module: False)
    with pytest.raises(Unreadable, match=r"needs pypdfium2: pip install 'ragfunnel\[files\]'"):
        pdf.load(write_pdf(tmp_path / "x.pdf", PAGES), OPTIONS)


def test_three_hundred_pages_load_fast(tmp_path):
    pytest.importorskip("pypdfium2")
    lines = [f"Line {i} of a long page of text that wraps across the width of the page here" for i in range(40)]
    path = write_pdf(tmp_path / "book.pdf", [[lines[:20], lines[20:]]] * 300)
    started = time.perf_counter()
    loaded = pdf.load(path, OPTIONS)
    assert time.perf_counter() - started < 5 * (2 if os.environ.get("CI") else 1)
    assert loaded.metadata["pages"] == 300
    assert {b.page for b in loaded.blocks} == set(range(1, 301))
    assert len(loaded.blocks) == 600


def test_paragraph_rules():
    lines = lambda *texts: [(t, None) for t in texts]
    # blank lines separate paragraphs; wrapped lines joined; a hyphen at a line end joined only before lower case
    assert pdf.paragraphs(lines("", "one exam-", "ple here", "", "Two", "lines", "")) == ["one example here",
                                                                                       "Two lines"]
    assert pdf.paragraphs(lines("See Smith-", "Jones", "")) == ["See Smith-Jones"]
    assert pdf.paragraphs(lines("a line that is long enough to be the full width", "Short end.",
                                "Next paragraph starts here and runs long as well", "and ends.")) == [
        "a line that is long enough to be the full width Short end.",
        "Next paragraph starts here and runs long as well and ends."]
    # pdfium's joined-hyphen marker and control characters
    assert pdf.paragraphs(lines("an exam\ufffeple\x00 of  spacing")) == ["an example of spacing"]
    assert pdf.paragraphs([]) == []
    # a bullet starts an item even after a full-width line
    assert pdf.paragraphs(lines("\u2022 the first item is a long line that fills the width", "\u2022 second")) == [
        "\u2022 the first item is a long line that fills the width", "\u2022 second"]


def test_paragraphs_from_line_boxes():
    """With boxes (pypdfium2), a gap wider than the page's usual one ends a paragraph even after a full line; a
    line higher up than the previous one (a new column) too."""
    full = "a full line of text that runs across the whole width of the page"
    tops = [800, 786, 772, 744, 730, 790]  # 14 apart; a blank line's gap before the 4th; the 6th: next column
    lines = [(f"{full} {i}", (top, top - 10, 10.0)) for i, top in enumerate(tops)]
    assert pdf.paragraphs(lines) == [" ".join(f"{full} {i}" for i in (0, 1, 2)),
                                     " ".join(f"{full} {i}" for i in (3, 4)), f"{full} 5"]


def test_pdf_dates():
    assert pdf.pdf_date("D:20240131120005+01'00'") == "2024-01-31T12:00:05+01:00"
    assert pdf.pdf_date("D:20240131") == "2024-01-31T00:00:00"
    assert pdf.pdf_date("D:20241331") is None  # month 13
    assert pdf.pdf_date("yesterday") is None


def test_registered_by_extension():
    assert loader_for(Path("x/Report.PDF")) is pdf.load
