"""Fixtures for the Python API, the MCP server and the framework retrievers.

* `notes_home`: a home with one small folder collection, `kitchen` (four short notes, indexed once per session
  through the Python API itself; the bundled MiniLM embeds them in a second or two).
* `friends_client`: a `Client` over the session's small Friends index (tests/conftest.py) with the fake LLM.
"""

from __future__ import annotations

from pathlib import Path

import pytest

NOTES = {
    "espresso.md": "# Espresso\n\nDescale the espresso machine every month.\n\nUse filtered water for better crema.\n",
    "machines/grinder.md": "# Grinder\n\n## Cleaning\n\nClean the burrs of the grinder weekly with rice tablets.\n",
    "oven.txt": "Preheat the oven to 200 degrees before baking sourdough bread.\n",
    "tea.txt": "Green tea steeps for two minutes at 80 degrees; black tea for four minutes.\n",
}


def write_notes(folder: Path) -> Path:
    for rel, text in NOTES.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return folder


@pytest.fixture(scope="session")
def notes_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import ragfunnel

    root = tmp_path_factory.mktemp("api-notes")
    home = root / "home"
    with ragfunnel.open("kitchen", home=home) as rf:
        report = rf.index([write_notes(root / "kitchen")])
    assert report.counts()["added"] == len(NOTES), report.to_dict()
    return home


@pytest.fixture(scope="session")
def friends_client(small_index, small_pipeline):
    from ragfunnel.api import Client
    from ragfunnel.generate.llm import FakeLLM

    return Client(small_index.settings, pipeline=small_pipeline, llm=FakeLLM())  # the store is the session's
