"""Both stores keep every chunk's location (character offsets, section path) of token-sized views through build,
reopen and upsert; an embedded index built before chunks had locations still opens (read as 0, 0, ()) and gains
them on its next write."""

from __future__ import annotations

import sqlite3

import pytest

from ragfunnel.chunking import ChunkContext, chunk_documents
from ragfunnel.corpus.folder import to_document
from ragfunnel.corpus.loaders.base import Block, LoadedFile
from ragfunnel.store import StoreSettings, build_index, open_store

SETTINGS = StoreSettings(sparse_views=["scene", "tok32o8.sec"], dense_views=["tok32o8.sec"], corpus="files")
TEXT = ("Descale the espresso machine every month with citric acid. Rinse it twice with clean water afterwards. "
        "Use filtered water to keep the boiler free of scale. ")


def docs():
    def doc(name, blocks):
        return to_document(name, LoadedFile.of(name, blocks, format="markdown"), name)

    return [
        doc("espresso.md", [Block("Care", ("Care",)), Block(TEXT * 2, ("Care",)), Block("Grinder", ("Grinder",)),
                            Block("Clean the burrs weekly with a brush.", ("Grinder",))]),
        doc("oven.md", [Block("Preheat the oven to 200 degrees for bread.")]),
    ]


@pytest.mark.parametrize("backend", ["embedded", "memory"])
def test_locations_round_trip_through_build_and_reopen(backend, session_cache, tmp_path):
    expected = chunk_documents(docs(), SETTINGS.views, ChunkContext())
    assert any(c.section == ("Care",) and c.char_start > 0 for c in expected)
    store = build_index(docs(), tmp_path / "index", SETTINGS, session_cache, backend_name=backend)
    store.close()
    store = open_store(tmp_path / "index", session_cache, backend_name=backend)
    got = store.chunks([c.chunk_id for c in expected])
    assert got == expected
    assert store.doc_chunks("tok32o8.sec", "espresso.md") == [c for c in expected
                                                             if c.view == "tok32o8.sec" and c.doc_id == "espresso.md"]
    hits = store.search_sparse("tok32o8.sec", "burrs brush", 3)
    assert hits and store.chunks([hits[0][0]])[0].section == ("Grinder",)
    store.close()


def test_an_index_without_locations_opens_and_gains_them_on_write(session_cache, tmp_path):
    path = tmp_path / "index"
    build_index(docs(), path, SETTINGS, session_cache).close()
    with sqlite3.connect(path / "store.sqlite") as db:  # the table as indexes before this change had it
        for column in ("char_start", "char_end", "section"):
            db.execute(f"ALTER TABLE chunks DROP COLUMN {column}")
    store = open_store(path, session_cache)
    old = store.view_chunks("tok32o8.sec")
    assert old and all((c.char_start, c.char_end, c.section) == (0, 0, ()) for c in old)
    assert store.search_sparse("tok32o8.sec", "burrs", 1)
    store.upsert(docs()[:1])
    fresh = store.doc_chunks("tok32o8.sec", "espresso.md")
    assert fresh == [c for c in chunk_documents(docs()[:1], ["tok32o8.sec"], ChunkContext())]
    assert all(c.char_end > 0 for c in fresh)
    store.close()
