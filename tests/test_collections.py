"""Collections: `ragfunnel index PATH --collection NAME` indexes a folder beside the Friends index, running it again
reports added / updated / deleted / unchanged / skipped, and search, collections and the settings follow the name."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragfunnel.cli import app
from ragfunnel.config import load_settings
from tests.helpers import add_loader
from ragfunnel.corpus.loaders.base import Block, LoadedFile, LoaderOptions, Unreadable
from ragfunnel.errors import ConfigError

runner = CliRunner()


def load_note(path: Path, options: LoaderOptions) -> LoadedFile:
    """A toy format: one block a line; 'BROKEN' as the first line fails."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if lines and lines[0] == "BROKEN":
        raise Unreadable("not a note")
    return LoadedFile.of(path.stem, [Block(line) for line in lines], format="note")


@pytest.fixture
def home(tmp_path, monkeypatch):
    add_loader(monkeypatch, ".note", load_note)
    monkeypatch.setenv("RAGFUNNEL_HOME", str(tmp_path / "home"))
    docs = tmp_path / "kitchen"
    (docs / "machines").mkdir(parents=True)
    (docs / "espresso.note").write_text("Descale the espresso machine every month.\nUse filtered water.\n")
    (docs / "machines" / "grinder.note").write_text("Grind the beans just before brewing.\nClean the burrs weekly.\n")
    (docs / "oven.note").write_text("Preheat the oven to 200 degrees for bread.\n")
    (docs / "bad.note").write_text("BROKEN\n")
    return tmp_path


def index(*args: str) -> dict:
    result = runner.invoke(app, ["index", *args, "--json", "-q"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_index_a_folder_then_sync_it(home):
    docs = home / "kitchen"
    first = index(str(docs))  # the collection is named after the folder
    assert first["collection"] == "kitchen" and first["rebuilt"]
    assert first["counts"] == {"added": 3, "updated": 0, "deleted": 0, "unchanged": 0, "skipped": 1}
    assert first["skipped"] == {"bad.note": "not a note"}

    again = index(str(docs), "--collection", "kitchen")
    assert again["counts"]["unchanged"] == 3 and not again["rebuilt"]

    (docs / "oven.note").write_text("Preheat the oven to 250 degrees for pizza.\n")
    (docs / "machines" / "grinder.note").unlink()
    (docs / "kettle.note").write_text("Boil the kettle for tea.\n")
    synced = index("--collection", "kitchen")  # the same sources again, without naming them
    assert synced["counts"] == {"added": 1, "updated": 1, "deleted": 1, "unchanged": 1, "skipped": 1}
    assert (synced["added"], synced["updated"], synced["deleted"]) == (["kettle.note"], ["oven.note"],
                                                                       ["machines/grinder.note"])

    found = runner.invoke(app, ["search", "pizza oven temperature", "--collection", "kitchen", "--json", "--k", "2"])
    assert found.exit_code == 0, found.output
    results = json.loads(found.stdout)["results"]
    assert results[0]["id"] == "oven.note" and "250" in " ".join(line["text"] for line in results[0]["lines"])
    gone = runner.invoke(app, ["search", "grind the beans", "--collection", "kitchen", "--json", "--k", "5"])
    assert "machines/grinder.note" not in [r["id"] for r in json.loads(gone.stdout)["results"]]

    listed = json.loads(runner.invoke(app, ["collections", "--json"]).stdout)
    kitchen = next(c for c in listed if c["name"] == "kitchen")
    assert kitchen["documents"] == 3 and kitchen["settings"]["corpus"] == "files"
    assert kitchen["sources"] == [str(docs.resolve())]
    assert next(c for c in listed if c["name"] == "friends")["built"] is False


def test_a_collections_own_settings_are_read(home):
    index(str(home / "kitchen"), "--collection", "k2")
    settings = load_settings(collection="k2")
    assert settings.index_dir == home / "home" / "collections" / "k2" / "index"
    assert settings.store.corpus == "files" and settings.store.dense_views == ["sec256"]
    assert settings.modes["hybrid"].retrievers == ["bm25_sec256", "dense_sec256"]  # the folder defaults' modes
    assert load_settings().index_dir == home / "home" / "index"  # friends keeps the home's own index


def test_bad_names_and_missing_sources_are_one_line_errors(home):
    with pytest.raises(ConfigError, match="collection name"):
        load_settings(collection="../etc")
    result = runner.invoke(app, ["index", "--collection", "nothing-here"])
    assert result.exit_code != 0 and "has no sources yet" in str(result.exception)
    result = runner.invoke(app, ["index", str(home / "kitchen"), "--collection", "friends"])
    assert "is the Friends collection" in str(result.exception)
    result = runner.invoke(app, ["index", str(home / "nowhere"), "--collection", "x"])
    assert "no such file or folder" in str(result.exception)


# ---- sync, not rebuild --------------------------------------------------------------------------------------------


def store_of(collection: str):
    from ragfunnel.embedding import EmbeddingCache
    from ragfunnel.store import open_store

    settings = load_settings(collection=collection)
    return open_store(settings.index_dir, EmbeddingCache(settings.cache_path)), settings


def cached_vectors(settings) -> int:
    import sqlite3

    with sqlite3.connect(settings.cache_path) as db:
        return db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]


@pytest.fixture
def parsed(monkeypatch) -> list[str]:
    """The name of every .note file a loader parses."""
    calls: list[str] = []

    def counting(path: Path, options: LoaderOptions) -> LoadedFile:
        calls.append(path.name)
        return load_note(path, options)

    add_loader(monkeypatch, ".note", counting)
    return calls


def test_a_sync_parses_and_embeds_only_what_changed(home, parsed):
    docs = home / "kitchen"
    first = index(str(docs))
    assert first["action"] == "built" and first["rebuild_reason"] == "no index yet"
    assert sorted(parsed) == ["bad.note", "espresso.note", "grinder.note", "oven.note"]
    store, settings = store_of("kitchen")
    before_ids, store_dir = store.doc_ids(), settings.index_dir
    store.close()
    vectors = cached_vectors(settings)

    parsed.clear()
    again = index(str(docs))
    assert again["action"] == "none" and again["parsed"] == 0 and parsed == []  # nothing opened: same size and time
    assert again["skipped"] == {"bad.note": "not a note"} and again["counts"]["unchanged"] == 3

    os.utime(docs / "oven.note", ns=(1, 1_000_000_000))  # touched, same bytes: hashed, not parsed
    os.utime(docs / "bad.note", ns=(1, 1_000_000_000))
    touched = index(str(docs))
    assert touched["action"] == "none" and parsed == [] and touched["counts"]["unchanged"] == 3
    assert touched["skipped"] == {"bad.note": "not a note"}  # remembered, not parsed again

    (docs / "oven.note").write_text("Preheat the oven to 250 degrees for pizza.\n")
    synced = index(str(docs))
    assert synced["action"] == "synced" and synced["updated"] == ["oven.note"] and parsed == ["oven.note"]
    assert synced["parsed"] == 1 and synced["documents"] == 3
    assert settings.index_dir == store_dir and (store_dir / "manifest.json").is_file()
    assert cached_vectors(settings) - vectors <= 2  # the new text's chunks (window and unit) at most
    store, _ = store_of("kitchen")
    try:
        assert store.doc_ids() == before_ids
        assert "250 degrees" in store.document("oven.note").render()
        assert store.search_sparse("scene", "200", 5) == []  # the old text is gone from BM25
    finally:
        store.close()


def test_records_files_turning_unreadable_and_unreadable_files_turning_readable(home):
    docs = home / "kitchen"
    (docs / "recipes.jsonl").write_text('{"id": "r1", "text": "Knead the dough."}\n'
                                        '{"id": "r2", "text": "Proof the dough overnight."}\n')
    first = index(str(docs), "--collection", "kitchen")
    assert "recipes.jsonl" in first["added"] and first["documents"] == 5

    (docs / "recipes.jsonl").write_text('{"id": "r1", "text": "Knead the dough for ten minutes."}\n')
    (docs / "espresso.note").write_text("BROKEN\n")  # was indexed, now unreadable: its document leaves the index
    (docs / "bad.note").write_text("Bad no more: clean the milk frother.\n")  # was skipped, now readable: added
    synced = index(str(docs), "--collection", "kitchen")
    assert synced["action"] == "synced"
    assert (synced["added"], synced["updated"], synced["deleted"]) == (["bad.note"], ["recipes.jsonl"],
                                                                       ["espresso.note"])
    assert synced["skipped"] == {"espresso.note": "not a note"}
    store, _ = store_of("kitchen")
    try:
        assert store.doc_ids() == ["bad.note", "machines/grinder.note", "oven.note", "recipes.jsonl#r1"]
        assert "ten minutes" in store.document("recipes.jsonl#r1").render()
        assert store.search_sparse("scene", "espresso descale", 5) == []
        for view in store.settings.sparse_views:
            assert store.count_sparse(view) == store.count_chunks(view)
        for view in store.settings.dense_views:
            assert store.count_dense(view) == store.count_chunks(view)
    finally:
        store.close()
    assert synced["documents"] == 4


def test_other_settings_paths_or_rebuild_build_a_whole_new_index(home):
    docs = home / "kitchen"
    index(str(docs), "--collection", "kitchen")
    assert index(str(docs), "--collection", "kitchen", "--rebuild")["rebuild_reason"] == "--rebuild"
    moved = index(str(docs / "machines"), "--collection", "kitchen")  # other PATHs: other document ids
    assert moved["action"] == "built" and moved["rebuild_reason"].startswith("other PATHs")
    assert moved["deleted"] == ["espresso.note", "machines/grinder.note", "oven.note"] and moved["added"] == ["grinder.note"]
    toml = home / "home" / "collections" / "kitchen" / "collection.toml"
    before = toml.read_text()
    toml.write_text(before.replace('sparse_views = ["scene", "sec256"]', 'sparse_views = ["scene", "sec256", "utt"]'))
    assert toml.read_text() != before
    changed = index(str(docs / "machines"), "--collection", "kitchen")
    assert changed["action"] == "built" and "store settings" in changed["rebuild_reason"]
    assert index(str(docs / "machines"), "--collection", "kitchen")["action"] == "none"


def built_encoder(collection: str) -> str:
    from ragfunnel.store import peek_index

    settings = load_settings(collection=collection)
    return peek_index(settings.index_location, settings.backend).settings.encoder


def test_a_new_folder_embeds_with_the_int8_model_and_a_sync_keeps_the_model_it_was_built_with(home):
    from ragfunnel.collections import folder_default_encoder
    from ragfunnel.embedding import DEFAULT_MODEL, INT8_MODEL

    docs = home / "kitchen"
    assert folder_default_encoder() == INT8_MODEL  # onnx is installed here (the files and test extras)
    index(str(docs), "--collection", "quick")
    assert built_encoder("quick") == INT8_MODEL
    found = runner.invoke(app, ["search", "descale the espresso machine", "-c", "quick", "--json", "--k", "1"])
    assert json.loads(found.stdout)["results"][0]["id"] == "espresso.note"  # queries embed with the index's model

    index(str(docs), "--collection", "exact", "--encoder", "default")  # chosen: the fp32 model
    assert built_encoder("exact") == DEFAULT_MODEL
    (docs / "kettle.note").write_text("Boil the kettle for tea.\n")
    synced = index("--collection", "exact")  # nobody chooses now: the index's own model, never a rebuild
    assert synced["action"] == "synced" and synced["added"] == ["kettle.note"] and built_encoder("exact") == DEFAULT_MODEL
    swapped = index("--collection", "exact", "--encoder", "int8")  # choosing another model rebuilds with it
    assert swapped["action"] == "built" and "store settings" in swapped["rebuild_reason"]
    assert built_encoder("exact") == INT8_MODEL


def test_a_config_files_encoder_is_a_choice_a_new_folder_keeps(home):
    from ragfunnel.embedding import DEFAULT_MODEL

    (home / "home").mkdir(exist_ok=True)
    (home / "home" / "config.toml").write_text('[store]\nencoder = "minilm-l6-onnx"\n')
    index(str(home / "kitchen"), "--collection", "configured")
    assert load_settings(collection="configured").encoder_chosen
    assert built_encoder("configured") == DEFAULT_MODEL


def test_a_second_index_run_of_the_same_collection_is_refused(home):
    from ragfunnel.collections import SYNC_LOCK
    from ragfunnel.store.locks import file_lock

    index(str(home / "kitchen"), "--collection", "kitchen")
    with file_lock(home / "home" / "collections" / "kitchen" / SYNC_LOCK, exclusive=True):
        result = runner.invoke(app, ["index", "--collection", "kitchen", "-q"])
    assert result.exit_code != 0 and "is running" in str(result.exception)
    assert index("--collection", "kitchen")["action"] == "none"


def test_one_layout_owns_every_collections_paths(tmp_path):
    """Every collection lives under <home>/collections/<name>; the built-in one keeps the home's index/ and models/."""
    from ragfunnel.config import CollectionLayout, Settings

    home = tmp_path / "h"
    folder = Settings(home=home, collection="kitchen")
    assert folder.index_dir == home / "collections" / "kitchen" / "index" == folder.layout.index_dir
    assert folder.reranker_dir == home / "collections" / "kitchen" / "models" / "reranker"
    assert folder.layout.settings_file == home / "collections" / "kitchen" / "collection.toml"
    friends = Settings(home=home)
    assert friends.index_dir == home / "index" and friends.reranker_dir == home / "models" / "reranker"
    assert friends.models_dir == folder.models_dir == home / "models"  # the LLM is shared
    assert CollectionLayout.under(home) == folder.collection_dir.parent
    assert Settings(home=home, collection="kitchen", index=tmp_path / "elsewhere").index_dir == tmp_path / "elsewhere"


def test_the_python_api_indexes_friends_and_folders_by_the_same_path(home, tmp_path, monkeypatch):
    """`Client.index()` with no paths: the built-in collection from its corpus data, a folder collection from the
    folders it was indexed from (what `ragfunnel index` does, through collections.index_collection)."""
    import ragfunnel
    from ragfunnel.collections import index_collection
    from tests.helpers import TOPICS, write_topics_corpus

    data = tmp_path / "data"
    (data / "friends").mkdir(parents=True)
    write_topics_corpus(data / "friends" / "friends_corpus.jsonl")
    monkeypatch.setenv("RAGFUNNEL_DATA", str(data))
    heard: list[str] = []
    settings = load_settings(collection="friends")
    built = index_collection(settings, say=heard.append)
    assert built.action == "built" and built.documents == len(TOPICS) and built.rebuild_reason == "first build"
    assert any(line.startswith("index ready at") for line in heard)
    with ragfunnel.open() as client:
        assert client.index().action == "none"  # the same data, the same settings: up to date
        assert client.search("pepperoni pizza", k=1).results[0].id == "s09_e01_c01"
    with ragfunnel.open("kitchen") as kitchen:
        first = kitchen.index(home / "kitchen")
        assert first.action == "built" and first.documents == 3
        (home / "kitchen" / "oven.note").write_text("Preheat the oven to 220 degrees for pizza.\n")
        again = kitchen.index()  # the sources it was indexed from
        assert again.action == "synced" and again.updated == ["oven.note"]
    with pytest.raises(ConfigError, match="no sources yet"):
        index_collection(load_settings(collection="empty"))
