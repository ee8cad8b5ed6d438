"""The text a reranker reads for a candidate: the matched window, the window with context, or the whole scene;
the span comes from the best small (non-scene) chunk; truncation."""

from __future__ import annotations

import pytest

from ragfunnel.rerank.passages import matched_span, passage_text
from ragfunnel.types import Candidate, Chunk
from tests.helpers import make_doc

DOC = make_doc(
    "s09_e05_c01",
    [
        "[Scene: Central Perk, everyone is there]",
        ("Joey Tribbiani", "line one about pizza"),
        ("Chandler Bing", "line two about jokes"),
        ("Ross Geller", "line three about dinosaurs"),
        ("Rachel Green", "line four about fashion"),
        ("Monica Geller", "line five about cooking"),
        ("Phoebe Buffay", "line six about songs"),
        ("Joey Tribbiani & Chandler Bing", "line seven together"),
        "(They all leave)",
        ("Gunther", "line nine about Rachel"),
    ],
)
SHORT = make_doc("s09_e05_c02", [("Ross Geller", "hi"), ("Rachel Green", "hello")])


class FakeStore:
    """Just what passages.py needs: `chunks(ids)` in the order asked, unknown ids skipped."""

    def __init__(self, docs):
        self.by_id: dict[str, Chunk] = {}
        self.asked: list[list[str]] = []
        for doc in docs:
            n = len(doc.units)
            self.add(doc, "scene", 0, 0, n)
            for i in range(max(n - 2, 1)):
                self.add(doc, "w3s1", i, i, min(i + 3, n))
            for i in range(n):
                self.add(doc, "utt", i, i, i + 1)
            self.add(doc, "w20s1", 0, 0, n)  # a window view wider than the scene: covers it all

    def add(self, doc, view, n, start, end):
        cid = Chunk.make_id(doc.doc_id, view, n)
        text = "\n".join(u.render() for u in doc.units[start:end])
        self.by_id[cid] = Chunk(cid, doc.doc_id, view, text, start, end)

    def chunks(self, chunk_ids):
        self.asked.append(list(chunk_ids))
        return [self.by_id[c] for c in chunk_ids if c in self.by_id]


def cand(*chunks: str, doc=DOC) -> Candidate:
    return Candidate(doc.doc_id, 1.0, 1, {"r": (1, 1.0)}, tuple(f"{doc.doc_id}#{c}" for c in chunks))


def lines(doc, start, end) -> str:
    return "\n".join(u.render() for u in doc.units[start:end])


@pytest.fixture
def store():
    return FakeStore([DOC, SHORT])


# ---- matched_span ------------------------------------------------------------------------------------------------


def test_span_of_the_best_window(store):
    assert matched_span(store, DOC, cand("w3s1/0004")) == (4, 7)
    assert matched_span(store, DOC, cand("utt/0008")) == (8, 9)


def test_scene_chunks_are_skipped_for_the_best_small_chunk(store):
    # the scene (and a window as wide as the scene) matched best, the window only third: the window decides
    assert matched_span(store, DOC, cand("scene/0000", "w20s1/0000", "w3s1/0005")) == (5, 8)


def test_the_first_small_chunk_in_best_chunks_order_wins(store):
    assert matched_span(store, DOC, cand("utt/0008", "w3s1/0001")) == (8, 9)
    assert matched_span(store, DOC, cand("w3s1/0001", "utt/0008")) == (1, 4)


def test_unknown_chunk_ids_are_ignored(store):
    assert matched_span(store, DOC, cand("w3s1/9999", "utt/0002")) == (2, 3)


def test_only_scene_chunks_fall_back_to_the_scene_start(store):
    assert matched_span(store, DOC, cand("scene/0000")) == (0, 3)
    assert matched_span(store, DOC, cand()) == (0, 3)
    # a two-line scene: every chunk covers it all, and the fallback is the whole scene
    assert matched_span(store, SHORT, cand("w3s1/0000", "utt/0000", doc=SHORT)) == (0, 1)
    assert matched_span(store, SHORT, cand("scene/0000", "w3s1/0000", doc=SHORT)) == (0, 2)


def test_only_the_best_four_chunks_are_looked_at(store):
    best = cand("scene/0000", "w20s1/0000", "scene/0000", "w20s1/0000", "utt/0007")
    assert matched_span(store, DOC, best) == (0, 3)
    assert store.asked[-1] == list(best.best_chunks[:4])


# ---- passage_text ------------------------------------------------------------------------------------------------


def test_window_kind_is_the_matched_lines(store):
    text = passage_text(store, DOC, cand("scene/0000", "w3s1/0004"), "window")
    assert text == lines(DOC, 4, 7)
    assert text.splitlines()[0] == "Rachel Green: line four about fashion"


def test_context_kind_adds_lines_around_the_window(store):
    c = cand("w3s1/0004")
    assert passage_text(store, DOC, c) == lines(DOC, 3, 8)  # the default: context, one line each side
    assert passage_text(store, DOC, c, "context", context=2) == lines(DOC, 2, 9)
    assert passage_text(store, DOC, c, "context", context=0) == lines(DOC, 4, 7)


def test_context_is_clamped_at_the_scene_edges(store):
    assert passage_text(store, DOC, cand("w3s1/0000"), "context", context=2) == lines(DOC, 0, 5)
    assert passage_text(store, DOC, cand("utt/0009"), "context", context=3) == lines(DOC, 6, 10)
    assert passage_text(store, DOC, cand("utt/0009"), "context", context=50) == DOC.render()


def test_scene_kind_is_the_whole_scene_whatever_matched(store):
    assert passage_text(store, DOC, cand("utt/0009"), "scene") == DOC.render()
    assert passage_text(store, DOC, cand("scene/0000"), "scene") == DOC.render()
    assert "[Scene: Central Perk" in DOC.render() and "Gunther: line nine" in DOC.render()


@pytest.mark.parametrize("kind", ["window", "context", "scene"])
def test_truncation(store, kind):
    c = cand("w3s1/0003")
    full = passage_text(store, DOC, c, kind, max_chars=100_000)
    assert len(full) > 40
    cut = passage_text(store, DOC, c, kind, max_chars=40)
    assert cut == full[:40] and len(cut) == 40
    assert passage_text(store, DOC, c, kind) == full[:1200]  # the default limit


def test_default_limit_is_1200_characters(store):
    long_doc = make_doc("s09_e05_c03", [("Ross Geller", "word " * 400), ("Rachel Green", "more " * 400)])
    store.add(long_doc, "scene", 0, 0, 2)
    text = passage_text(store, long_doc, cand("scene/0000", doc=long_doc), "scene")
    assert len(text) == 1200 and long_doc.render().startswith(text)


# ---- on the real small index -------------------------------------------------------------------------------------


@pytest.mark.integration
def test_window_passage_is_the_first_small_best_chunk(small_store, small_pipeline):
    result = small_pipeline.search("Who did Rachel dump at the altar?", "hybrid", k=10)
    checked = 0
    for c in result.candidates:
        doc = small_store.document(c.doc_id)
        small = [ch for ch in small_store.chunks(list(c.best_chunks[:4])) if ch.end - ch.start < len(doc.units)]
        if not small:
            continue
        checked += 1
        assert passage_text(small_store, doc, c, "window", max_chars=10_000) == small[0].text
        context = passage_text(small_store, doc, c, "context", max_chars=10_000)
        assert small[0].text in context and context in doc.render()
    assert checked >= 5
