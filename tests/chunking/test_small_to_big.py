"""Small-to-big through the product: a collection whose collection.toml indexes `tok32o0.sec` (small chunks whose
passage is their section) finds a document by a small chunk, and its search result carries the passage: the
whole section around the match, with its offsets in the file's text, section path and units."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from ragfunnel.cli import app

runner = CliRunner()

MANUAL = """# Espresso machine

## Descaling

Descale the machine every month. Mix citric acid with a litre of water.
Run half of it through the steam wand and the rest through the group head.
Rinse the tank twice with clean water afterwards.

## Grinder

Clean the burrs weekly with a stiff brush. Never wash them with water.
"""

COLLECTION = """[store]
corpus = "files"
sparse_views = ["scene", "tok32o0.sec"]
dense_views = ["tok32o0.sec"]

[modes.small]
retrievers = ["bm25_tok32o0.sec", "dense_tok32o0.sec"]
fusion = {method = "rrf", k = 10}
"""


def test_search_returns_the_section_around_the_small_chunk_that_matched(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("RAGFUNNEL_HOME", str(home))
    (home / "collections" / "manual").mkdir(parents=True)
    (home / "collections" / "manual" / "collection.toml").write_text(COLLECTION)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "espresso.md").write_text(MANUAL)
    (docs / "tea.md").write_text("# Tea\n\nSteep green tea for two minutes at eighty degrees.\n")
    built = runner.invoke(app, ["index", str(docs), "--collection", "manual", "--json", "-q"])
    assert built.exit_code == 0, built.output

    found = runner.invoke(app, ["search", "steam wand group head", "--collection", "manual", "--mode", "small",
                                "--json", "--k", "2"])
    assert found.exit_code == 0, found.output
    hit = json.loads(found.stdout)["results"][0]
    passage = hit["passage"]
    assert hit["id"] == "espresso.md" and "#tok32o0.sec/" in passage["chunk_id"]
    assert passage["section"] == ["Espresso machine", "Descaling"]
    section = MANUAL[MANUAL.index("Descaling"):MANUAL.index("\n\n## Grinder")]
    assert passage["text"].split() == section.split()  # the whole section, not only the 32-token chunk
    assert passage["char_end"] - passage["char_start"] == len(passage["text"])
    assert len(passage["unit_ids"]) >= 2 and all(u.startswith("espresso.md:") for u in passage["unit_ids"])
    assert "Grinder" not in passage["text"] and "burrs" not in passage["text"]
