"""Collections: `ragfunnel index PATH --collection NAME` indexes a folder beside the Friends index, running it again
reports added / updated / deleted / unchanged / skipped, and search, collections and the settings follow the name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragfunnel.cli import app
from ragfunnel.config import load_settings
from ragfunnel.corpus.loaders import registry
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
    monkeypatch.setitem(registry.LOADERS, ".note", load_note)
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
