"""docs/python.md's Python examples run, in order, in one namespace, in a folder holding `notes/` and a fresh
home (so what the page shows is what the API does)."""

from __future__ import annotations

import re

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.integration
NOTES = {
    "espresso.md": "# Espresso\n\nDescale the espresso machine every month.\n",
    "oven.txt": "Preheat the oven to 200 degrees before baking bread.\n",
    "tea.txt": "Green tea steeps for two minutes. Black tea steeps for four minutes.\n",
}


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)


def test_docs_python_examples_run(tmp_path, monkeypatch, capsys):
    pytest.importorskip("langchain_core")
    pytest.importorskip("llama_index.core")
    for rel, text in NOTES.items():
        (tmp_path / "notes" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "notes" / rel).write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAGFUNNEL_HOME", str(tmp_path / "home"))
    blocks = python_blocks((REPO / "docs" / "python.md").read_text(encoding="utf-8"))
    assert len(blocks) >= 5
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "docs/python.md", "exec"), namespace)  # noqa: S102 - the docs' own examples
    out = capsys.readouterr().out
    assert "{'added': 3, 'updated': 0, 'deleted': 0, 'unchanged': 0, 'skipped': 0}" in out
    assert "a follow-up: read with the conversation as" in out
