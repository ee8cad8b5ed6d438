"""Chunk views: whole documents, single units, sliding windows (counts, stride, tail coverage, ids, aliases)."""

from __future__ import annotations

import math

import pytest

from ragfunnel.chunking import ChunkView, canonical_view, chunk_documents, parse_view
from ragfunnel.errors import ConfigError
from ragfunnel.types import Chunk, Document
from tests.helpers import make_doc


def numbered_doc(n: int, doc_id: str = "s01_e01_c01") -> Document:
    return make_doc(doc_id, [(f"Speaker {i % 3}", f"line {i}") for i in range(n)])


@pytest.mark.parametrize(
    "name, size, stride",
    [("scene", None, 1), ("utt", 1, 1), ("w3s1", 3, 1), ("w5s2", 5, 2), ("w4s4", 4, 4), ("w12s3", 12, 3)],
)
def test_parse_view(name, size, stride):
    assert parse_view(name) == ChunkView(name, size, stride)


@pytest.mark.parametrize("alias, name", [("doc", "scene"), ("unit", "utt")])
def test_generic_names_are_aliases_of_the_index_names(alias, name):
    """`doc` / `unit` resolve to the same view as `scene` / `utt`: same chunks, same ids (`#scene/`, `#utt/`)."""
    assert parse_view(alias) == parse_view(name) and canonical_view(alias) == name
    doc = numbered_doc(5)
    assert list(parse_view(alias).chunks(doc)) == list(parse_view(name).chunks(doc))
    assert all(f"#{name}/" in c.chunk_id for c in parse_view(alias).chunks(doc))


def test_existing_view_names_and_chunk_ids_do_not_change():
    doc = numbered_doc(4)
    assert [c.chunk_id for c in chunk_documents([doc], ["scene", "utt", "w3s1"])] == [
        "s01_e01_c01#scene/0000",
        *[f"s01_e01_c01#utt/{n:04d}" for n in range(4)],
        "s01_e01_c01#w3s1/0000", "s01_e01_c01#w3s1/0001",
    ]
    assert all(canonical_view(v) == v for v in ("scene", "utt", "w3s1", "w5s2"))


def test_an_alias_beside_its_name_is_one_view():
    doc = numbered_doc(3)
    assert chunk_documents([doc], ["doc", "scene", "unit", "utt"]) == chunk_documents([doc], ["scene", "utt"])


@pytest.mark.parametrize("name", ["", "window", "W3S1", "w3", "s1", "w0s1", "w3s0", "w3s4", "w-1s1", "w3s1 ", "sentence"])
def test_invalid_view_names_are_config_errors(name):
    with pytest.raises(ConfigError, match="unknown chunk view"):
        parse_view(name)


def test_chunk_documents_rejects_invalid_view():
    with pytest.raises(ConfigError):
        chunk_documents([numbered_doc(4)], ["scene", "w2s3"])


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 10, 13])
@pytest.mark.parametrize("view", ["w1s1", "w2s1", "w3s1", "w3s2", "w3s3", "w4s3", "w5s2", "w6s4"])
def test_window_counts_stride_and_tail(n, view):
    size, stride = parse_view(view).size, parse_view(view).stride
    doc = numbered_doc(n)
    chunks = list(parse_view(view).chunks(doc))
    expected = 1 if n <= size else math.ceil((n - size) / stride) + 1
    assert len(chunks) == expected
    assert all(c.end - c.start == min(size, n) for c in chunks)  # every window is full (clipped to short docs)
    assert chunks[0].start == 0 and chunks[-1].end == n  # the tail is always covered
    starts = [c.start for c in chunks]
    assert starts == sorted(set(starts))
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    assert all(g == stride for g in gaps[:-1]) and all(1 <= g <= stride for g in gaps[-1:])
    covered = set().union(*(range(c.start, c.end) for c in chunks))
    assert covered == set(range(n))


def test_window_example():
    chunks = list(parse_view("w3s2").chunks(numbered_doc(10)))
    assert [(c.start, c.end) for c in chunks] == [(0, 3), (2, 5), (4, 7), (6, 9), (7, 10)]


def test_chunk_ids_encode_parent_view_and_position():
    docs = [numbered_doc(6, "s01_e01_c01"), numbered_doc(4, "s10_e17_c12")]
    chunks = chunk_documents(docs, ["scene", "utt", "w3s1"])
    assert len({c.chunk_id for c in chunks}) == len(chunks)
    for c in chunks:
        assert Chunk.parent_of(c.chunk_id) == c.doc_id
        assert c.chunk_id.startswith(f"{c.doc_id}#{c.view}/")
    per = {}
    for c in chunks:
        per.setdefault((c.doc_id, c.view), []).append(c.chunk_id)
    for (doc_id, view), ids in per.items():
        assert ids == [Chunk.make_id(doc_id, view, n) for n in range(len(ids))]
    assert Chunk.make_id("s01_e01_c01", "w3s1", 7) == "s01_e01_c01#w3s1/0007"
    assert Chunk.parent_of("s01_e01_c01#w3s1/0007") == "s01_e01_c01"
    # order: document by document, view by view
    assert [(c.doc_id, c.view) for c in chunks][:8] == [("s01_e01_c01", "scene")] + [("s01_e01_c01", "utt")] * 6 + [
        ("s01_e01_c01", "w3s1")
    ]


def test_chunk_text_keeps_speakers_and_marks_directions():
    doc = make_doc(
        "s01_e01_c05",
        [
            "[Scene: Central Perk]",
            ("Monica Geller", "Are you okay, sweetie?"),
            ("Joey Tribbiani & Chandler Bing", "Hey!"),
            "Rachel enters in a wedding dress",
            ("", "(unattributed line)"),
        ],
    )
    (scene,) = parse_view("scene").chunks(doc)
    assert scene.text == doc.render()
    assert scene.text.splitlines() == [
        "[Scene: Central Perk]",
        "Monica Geller: Are you okay, sweetie?",
        "Joey Tribbiani & Chandler Bing: Hey!",
        "(Rachel enters in a wedding dress)",
        "(unattributed line)",
    ]
    assert (scene.start, scene.end) == (0, 5)
    windows = list(parse_view("w2s1").chunks(doc))
    assert windows[1].text == "Monica Geller: Are you okay, sweetie?\nJoey Tribbiani & Chandler Bing: Hey!"
    for w in windows:
        assert w.text == "\n".join(u.render() for u in doc.units[w.start : w.end])
    utts = list(parse_view("utt").chunks(doc))
    assert [u.text for u in utts] == scene.text.splitlines()


def test_empty_document_has_no_chunks():
    empty = Document("s01_e01_c09", "", ())
    assert chunk_documents([empty], ["scene", "utt", "w3s1"]) == []


@pytest.mark.integration
def test_real_scenes_chunk_consistently(small_docs):
    chunks = chunk_documents(small_docs, ["scene", "w3s1", "utt"])
    by_view = {}
    for c in chunks:
        by_view.setdefault(c.view, []).append(c)
    n_units = sum(len(d.units) for d in small_docs)
    assert len(by_view["scene"]) == len(small_docs)
    assert len(by_view["utt"]) == n_units
    assert len(by_view["w3s1"]) == sum(max(len(d.units) - 2, 1) for d in small_docs)
    ids = {d.doc_id for d in small_docs}
    assert all(Chunk.parent_of(c.chunk_id) in ids for c in chunks)
