"""One bad record or file never stops a sync (issue 35.6): whatever one file of a folder holds (random bytes, a
valid file of its format cut short or with hostile bytes spliced in, a JSONL record of any JSON values with lone
surrogates), the scan never raises, the good files load as before, and the bad file is either skipped with a reason
or loads as text an index can store (valid UTF-8 ids, titles, units, sections and metadata). The named cases the
issue lists then go through `ragfunnel index` end to end: exit 0, the rest indexed, every bad file in the report.

Few examples (HYPOTHESIS_EXAMPLES raises it for a longer run), derandomised so CI is repeatable."""

from __future__ import annotations

import io
import json
import os
import tempfile
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ragfunnel.cli import app
from ragfunnel.corpus.folder import scan
from ragfunnel.corpus.loaders.registry import loader_for
from ragfunnel.store.embedded import _check_text

EXAMPLES = int(os.environ.get("HYPOTHESIS_EXAMPLES", "40"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

GOOD = {
    "guide.md": b"---\ntitle: Espresso guide\ntags: [coffee]\n---\n\n# Espresso\n\nDescale the espresso machine monthly.\n",
    "notes.txt": b"Water the basil every Tuesday morning.\n",
    "records.jsonl": b'{"id": "r1", "text": "The grinder burrs need a weekly clean."}\n',
}
GOOD_DOCS = {"guide.md", "notes.txt", "records.jsonl#r1"}


def _pdf() -> bytes:
    from reportlab.pdfgen import canvas

    out = io.BytesIO()
    c = canvas.Canvas(out)
    c.setTitle("Boiler manual")
    c.drawString(72, 780, "Bleed the radiators before winter.")
    c.showPage()
    c.save()
    return out.getvalue()


def _docx() -> bytes:
    import docx

    document = docx.Document()
    document.add_heading("Bike care", 1)
    document.add_paragraph("Oil the chain after rain.")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


# a valid file of each format, to cut short or splice hostile bytes into
SAMPLES = {
    ".md": GOOD["guide.md"],
    ".txt": GOOD["notes.txt"],
    ".html": b"<html><head><title>Oven</title></head><body><main><h1>Oven</h1><p>Preheat to 200 degrees.</p>"
             b"<table><tr><td>a</td><td>b</td></tr></table></main></body></html>",
    ".jsonl": b'{"id": "a", "title": "T", "text": "one", "n": 1}\n{"id": "b", "text": "two"}\n',
    ".py": b'"""Doc."""\n\nclass Pump:\n    def start(self):\n        """Start it."""\n        return 1\n',
    ".pdf": _pdf(),
    ".docx": _docx(),
}
HOSTILE = [b"\\ud800", b"\\udc00\\ud800", b"\xed\xa0\x80", b"\x00", b"\xff\xfe", b"\xef\xbb\xbf", b"&#xD800;",
           b"&#55296;", b"[" * 3000, b"{\"a\":" * 3000, b"<div>" * 2000, b"> " * 2000, b"\n---\n", b"NaN",
           b"1" * 5000, b"\r", b"\n\n", b"\"", b"\\", b"%PDF-", b"PK\x03\x04", b"\x1b[31m", "\u2028".encode()]

texts = st.one_of(
    st.text(max_size=30),
    st.text(alphabet=st.characters(codec=None, min_codepoint=0, max_codepoint=0x10FFFF), max_size=20),  # surrogates too
    st.sampled_from(["\ud800", "\udcff", "a\ud83d", "\x00", "", " ", "\n\n", "x" * 3000]),
)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(), texts)
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(texts, inner, max_size=3)), max_leaves=10)
records = st.one_of(
    values,
    st.fixed_dictionaries({"id": st.one_of(texts, st.integers(), values), "text": st.one_of(texts, values)},
                          optional={"title": values, "_id": values, "extra": values}),
)


@st.composite
def bad_files(draw) -> tuple[str, bytes]:
    """(extension, bytes) of one file that may be broken any way."""
    ext = draw(st.sampled_from(sorted(SAMPLES)))
    sample = SAMPLES[ext]
    how = draw(st.sampled_from(["bytes", "cut", "splice", "records"] if ext == ".jsonl" else ["bytes", "cut", "splice"]))
    if how == "bytes":
        return ext, draw(st.binary(max_size=3000))
    if how == "cut":
        return ext, sample[: draw(st.integers(0, len(sample)))]
    if how == "splice":
        data = sample
        for _ in range(draw(st.integers(1, 3))):
            at = draw(st.integers(0, len(data)))
            cut = draw(st.integers(0, 8))
            data = data[:at] + draw(st.sampled_from(HOSTILE)) + data[at + cut:]
        return ext, data
    lines = draw(st.lists(records, min_size=1, max_size=4))
    return ext, b"\n".join(json.dumps(r, allow_nan=True).encode() for r in lines) + b"\n"


def assert_storable(docs) -> None:
    """What the store and sources.json need: ids, titles, units, sections and metadata that are valid UTF-8."""
    _check_text(docs)
    for doc in docs:
        for unit in doc.units:
            "".join(unit.section).encode("utf-8")
            assert doc.doc_id and unit.text
        json.dumps(doc.metadata, ensure_ascii=False).encode("utf-8")


@FUZZ
@given(bad=bad_files())
def test_one_bad_file_never_stops_a_scan(bad):
    ext, data = bad
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name, good in GOOD.items():
            (root / name).write_bytes(good)
        (root / f"bad{ext}").write_bytes(data)
        result = scan([root])  # never raises
        docs = [d for rel in result.documents for d in result.documents[rel]]
        assert GOOD_DOCS <= {d.doc_id for d in docs}
        state = result.states[f"bad{ext}"]
        if state.skipped is not None:
            assert isinstance(state.skipped, str) and state.skipped
        else:
            assert state.docs
        assert_storable(docs)
        json.dumps({rel: s.to_json() for rel, s in result.states.items()}, ensure_ascii=False).encode("utf-8")


# ---- end to end: the cases named in the issue --------------------------------------------------------------------


def _named_cases() -> dict[str, bytes]:
    pdf, docx_bytes = SAMPLES[".pdf"], SAMPLES[".docx"]
    return {
        "surrogate.jsonl": b'{"id": "ok", "text": "The kettle whistles when the water boils."}\n'
                           b'{"id": "bad", "text": "The toaster \\ud800 burns bread on setting five."}\n',
        "not-object.jsonl": b'[1, 2]\n"a string"\n{"id": "fine", "text": "The fridge hums at night."}\n',
        "deep.jsonl": b"[" * 100_000 + b"\n",
        "surrogate-bytes.md": b"# Heater\n\nThe heater \xed\xa0\x80 clicks twice.\n",
        "surrogate-front-matter.md": b'---\ntitle: "Lamp \\ud800"\n---\n\nThe lamp flickers when the bulb is loose.\n',
        "invalid-utf8.txt": b"caf\xe9 \xff\xfe au lait\n",
        "nul.txt": b"text\x00with\x00nul\x00bytes\n",
        "empty.md": b"",
        "truncated.pdf": pdf[: len(pdf) // 2],
        "truncated.docx": docx_bytes[: len(docx_bytes) // 2],
        "huge-line.txt": b"word " * 400_000,
        "zip-bomb-ish.docx": _zip_of(b"x" * 1000),
    }


def _zip_of(data: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("word/document.xml", data)
    return out.getvalue()


def test_a_folder_of_bad_files_indexes_the_rest_and_exits_0(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGFUNNEL_HOME", str(tmp_path / "home"))
    root = tmp_path / "house"
    root.mkdir()
    for name, data in {**GOOD, **_named_cases()}.items():
        (root / name).write_bytes(data)
    try:
        Path(os.fsdecode(os.fsencode(root) + b"/caf\xe9.txt")).write_bytes(b"The caf\xc3\xa9 opens at nine.\n")
    except OSError:
        pass  # a file system that refuses names that are not UTF-8
    runner = CliRunner()
    result = runner.invoke(app, ["index", str(root), "--collection", "house", "--json", "-q"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert set(report["skipped"]) == {"deep.jsonl", "nul.txt", "empty.md", "truncated.pdf", "truncated.docx",
                                      "zip-bomb-ish.docx"}
    assert all(isinstance(why, str) and why for why in report["skipped"].values())
    assert report["problems"]["surrogate.jsonl"] == ["line 2: text: 1 lone surrogate replaced by U+FFFD"]
    assert report["problems"]["surrogate-front-matter.md"] == ["title: 1 lone surrogate replaced by U+FFFD",
                                                               "metadata: 1 lone surrogate replaced by U+FFFD"]
    assert report["problems"]["not-object.jsonl"][0] == "line 1: not a JSON object (a list)"
    for indexed in ("guide.md", "notes.txt", "records.jsonl", "surrogate.jsonl", "surrogate-bytes.md",
                    "invalid-utf8.txt", "huge-line.txt"):
        assert indexed in report["added"]
    found = runner.invoke(app, ["search", "--collection", "house", "toaster burns bread", "--json", "--mode", "bm25"])
    assert found.exit_code == 0, found.output
    assert json.loads(found.stdout)["results"][0]["id"] == "surrogate.jsonl#bad"
    again = runner.invoke(app, ["index", "--collection", "house", "--json", "-q"])  # a sync: nothing to redo
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["action"] == "none"

