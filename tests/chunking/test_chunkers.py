"""Chunkers sized in the embedder's tokens: recursive with overlap, sentence window, semantic, structure-aware,
code-aware and parent-child; every chunk's offsets, units and section path; the registry's names and errors."""

from __future__ import annotations

import pytest

from ragfunnel.chunking import ChunkContext, DocText, chunk_documents, document_text, parse_view, passage_of, resolve_view
from ragfunnel.chunking.chunkers import ParentChild
from ragfunnel.corpus.folder import to_document
from ragfunnel.corpus.loaders.base import Block, LoadedFile
from ragfunnel.embedding import shared_encoder
from ragfunnel.errors import ConfigError
from ragfunnel.types import Document
from tests.helpers import make_doc

CONTEXT = ChunkContext()

COFFEE = ("Coffee beans are roasted at about two hundred degrees. The roast decides the taste of the cup. "
          "Light roasts keep more acidity, dark roasts taste of chocolate and smoke. ")
ENGINE = ("The diesel engine compresses air until it is hot enough to ignite the fuel. Injectors spray the fuel "
          "into the cylinder. Turbochargers push more air into the engine. ")


def folder_doc(blocks: list[Block], title: str = "Guide", doc_id: str = "guide.md") -> Document:
    return to_document(doc_id, LoadedFile.of(title, blocks, format="markdown"), doc_id)


def guide() -> Document:
    return folder_doc([
        Block("Install", ("Install",)),
        Block(COFFEE * 3, ("Install",)),
        Block("Linux", ("Install", "Linux")),
        Block(ENGINE * 4, ("Install", "Linux")),
        Block("Use", ("Use",)),
        Block("Run it. " + COFFEE, ("Use",)),
    ])


def tokens(text: str) -> int:
    return len(shared_encoder().token_spans(text))


def body(chunk) -> str:
    return chunk.text.split("\n", 1)[1] if chunk.text.startswith("Guide") else chunk.text


def test_document_text_is_the_file_text_for_folder_documents():
    loaded = LoadedFile.of("t", [Block("First paragraph."), Block("Second one.", ("H",))])
    text, spans = document_text(to_document("a.md", loaded, "a.md"))
    assert text == loaded.text and [text[s:e] for s, e in spans] == ["First paragraph.", "Second one."]


def test_document_text_of_friends_scenes_is_the_rendered_lines():
    doc = make_doc("s01_e01_c01", [("Joey", "How you doin'?"), "(Rachel laughs)"])
    text, spans = document_text(doc)
    assert text == doc.render() and text[spans[1][0]:spans[1][1]] == "(Rachel laughs)"


@pytest.mark.parametrize("view, size", [("tok64o8", 64), ("tok128o16", 128), ("sec64", 64), ("code64", 64)])
def test_chunks_fit_the_budget_in_the_embedders_tokens_and_locate_their_text(view, size):
    doc = guide()
    dt = DocText(doc)
    chunks = chunk_documents([doc], [view], CONTEXT)
    assert len(chunks) > 2
    for c in chunks:
        assert tokens(c.text) <= size, (c.chunk_id, tokens(c.text))  # header line included
        assert body(c) == dt.text[c.char_start:c.char_end]  # the offsets point at the chunk's own text
        first, last = dt.units_of(c.char_start, c.char_end)
        assert (c.start, c.end) == (first, last) and c.doc_id == doc.doc_id and c.chunk_id.startswith("guide.md#")
    covered = set()
    for c in chunks:
        covered.update(range(c.char_start, c.char_end))
    assert all(i in covered for i, ch in enumerate(dt.text) if not ch.isspace())  # nothing is lost


def test_recursive_chunks_overlap_by_at_most_the_overlap():
    doc = folder_doc([Block(COFFEE * 8)])
    chunks = chunk_documents([doc], ["tok64o16"], CONTEXT)
    dt = DocText(doc)
    assert len(chunks) >= 4
    for a, b in zip(chunks, chunks[1:]):
        assert b.char_start < a.char_end, "consecutive chunks share their edge"
        assert 0 < dt.tokens(b.char_start, a.char_end) <= 16
        assert b.char_start > a.char_start


def test_recursive_splitting_prefers_unit_and_sentence_boundaries():
    doc = folder_doc([Block(COFFEE), Block(ENGINE)])
    chunks = chunk_documents([doc], ["tok64o0.bare"], CONTEXT)
    assert [c.text for c in chunks] == [COFFEE.strip(), ENGINE.strip()]  # each paragraph fits: cut between them
    sentences = chunk_documents([folder_doc([Block(COFFEE * 2)])], ["tok32o0.bare"], CONTEXT)
    assert all(c.text.endswith(".") for c in sentences)  # cut at sentence ends, not inside one


def test_chunks_begin_with_title_and_section_unless_bare():
    doc = guide()
    linux = [c for c in chunk_documents([doc], ["sec128"], CONTEXT) if "diesel" in c.text]
    assert linux and all(c.text.startswith("Guide › Install › Linux\n") for c in linux)
    assert all(c.section == ("Install", "Linux") for c in linux)
    bare = chunk_documents([doc], ["sec128.bare"], CONTEXT)
    assert not any(c.text.startswith("Guide") for c in bare)


def test_section_chunks_never_cross_a_section_or_a_page():
    doc = guide()
    for c in chunk_documents([doc], ["sec512"], CONTEXT):
        assert len({doc.units[i].section for i in range(c.start, c.end)}) == 1, c.chunk_id
    pages = folder_doc([Block("Page one text.", page=1), Block("More of page one.", page=1), Block("Page two.", page=2)])
    assert [c.text for c in chunk_documents([pages], ["sec256.bare"], CONTEXT)] == [
        "Page one text.\n\nMore of page one.", "Page two."]


def test_code_chunks_keep_functions_whole_and_cut_long_ones_at_lines():
    small = "def add(a, b):\n    return a + b"
    long = "def long():\n" + "\n".join(f"    value_{i} = compute_something({i}, 'text {i}')" for i in range(40))
    doc = folder_doc([Block(small, ("add",)), Block(long, ("long",))], title="m.py", doc_id="m.py")
    chunks = chunk_documents([doc], ["code128.bare"], CONTEXT)
    assert chunks[0].text == small
    lines = {line.strip() for line in long.splitlines()}
    assert len(chunks) > 2
    for c in chunks[1:]:
        assert all(line.strip() in lines for line in c.text.splitlines())  # never inside a line
        assert tokens(c.text) <= 128
    merged = folder_doc([Block("import os", ("A",)), Block("import sys", ("A",)), Block("def f():\n    pass", ("B",))])
    assert [c.text for c in chunk_documents([merged], ["code128.bare"], CONTEXT)] == [
        "import os\n\nimport sys", "def f():\n    pass"]  # small blocks merge, but not across a class/function


def test_sentence_window_indexes_sentences_and_passes_the_window():
    doc = folder_doc([Block("One is first. Two follows. Three is here. Four comes next. Five ends it.")])
    chunks = chunk_documents([doc], ["sent1.bare"], CONTEXT)
    assert [c.text for c in chunks] == ["One is first.", "Two follows.", "Three is here.", "Four comes next.",
                                        "Five ends it."]
    assert passage_of(chunks[2], doc).text == "Two follows. Three is here. Four comes next."
    assert passage_of(chunks[0], doc).text == "One is first. Two follows."


def test_semantic_chunks_break_where_the_topic_changes():
    doc = folder_doc([Block(COFFEE + COFFEE.replace("Coffee beans", "Espresso beans") + ENGINE + ENGINE.replace(
        "diesel", "petrol"))])
    chunks = chunk_documents([doc], ["sem50.bare"], CONTEXT)
    assert len(chunks) >= 2
    assert any("Coffee" not in c.text and "diesel" in c.text for c in chunks)
    assert not any("chocolate" in c.text and "diesel" in c.text for c in chunks)  # never across the change


def test_parent_child_indexes_small_chunks_and_passes_their_section_or_document():
    doc = guide()
    small = chunk_documents([doc], ["tok64o0"], CONTEXT)
    by_section = chunk_documents([doc], ["tok64o0.sec"], CONTEXT)
    assert [c.text for c in by_section] == [c.text for c in small]  # the same chunks are indexed
    assert all(c.chunk_id.split("#")[1].startswith("tok64o0.sec/") for c in by_section)
    diesel = next(c for c in by_section if c.section == ("Install", "Linux"))
    passage = passage_of(diesel, doc)
    assert passage.text == "Linux\n\n" + (ENGINE * 4).strip()  # the whole section "Install › Linux"
    assert [doc.units[i].section for i in range(passage.unit_start, passage.unit_end)] == [("Install", "Linux")] * 2
    whole = passage_of(chunk_documents([doc], ["tok64o0.doc"], CONTEXT)[0], doc)
    assert (whole.char_start, whole.char_end, whole.unit_start, whole.unit_end) == (0, len(DocText(doc).text), 0, 6)
    assert passage_of(small[0], doc).text == DocText(doc).text[small[0].char_start:small[0].char_end]


def test_unit_views_keep_their_text_and_gain_offsets_and_sections():
    doc = guide()
    dt = DocText(doc)
    for c in chunk_documents([doc], ["scene", "w3s1", "utt"]):
        assert c.text == "\n".join(u.render() for u in doc.units[c.start:c.end])
        assert (c.char_start, c.char_end) == (dt.unit_spans[c.start][0], dt.unit_spans[c.end - 1][1])
    windows = chunk_documents([doc], ["w2s1"])
    assert windows[2].section == ("Install", "Linux") and windows[1].section == ("Install",)


@pytest.mark.parametrize("name, kind", [
    ("tok256o32", "TokenChunker"), ("sent2", "SentenceWindowChunker"), ("sem95", "SemanticChunker"),
    ("sec256", "SectionChunker"), ("code256", "CodeChunker"), ("w3s1", "ChunkView"), ("tok256o32.bare", "TokenChunker"),
])
def test_registry_resolves_names(name, kind):
    chunker = parse_view(name)
    assert type(chunker).__name__ == kind and chunker.name == name


def test_registry_modifiers():
    assert isinstance(parse_view("tok128o16.sec"), ParentChild) and parse_view("tok128o16.sec").parent == "sec"
    assert parse_view("utt.doc").name == "utt.doc" and parse_view("tok128o16.bare.doc").child.header is False
    assert parse_view("doc").name == "scene"


@pytest.mark.parametrize("name", ["tok256", "tok8o0", "tok64o64", "sem0", "sem100", "sec8", "scene.bare", "w3s1.bare",
                                  "tok256o32.sec.doc", "tok256o32.big", "tok256o32.sec.sec", "sent"])
def test_registry_refuses_bad_names_in_one_line(name):
    with pytest.raises(ConfigError, match="unknown chunk view") as err:
        resolve_view(name)
    assert "\n" not in str(err.value) and "tok<N>o<O>" in str(err.value)
