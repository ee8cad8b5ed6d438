"""One registry shape: every plug-in point is a `ragfunnel.registry.Registry` whose entries say what they are, and
`ragfunnel plugins` lists them all."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from ragfunnel.cli import app, plugin_registries
from ragfunnel.registry import Registry

KINDS = {"corpus", "loader", "chunker", "encoder", "store", "retriever", "fuser", "reranker", "reader", "llm"}
runner = CliRunner()


def test_every_plug_in_point_is_a_registry_with_described_entries():
    registries = plugin_registries()
    assert {kind for kind, _ in registries} == KINDS and len(registries) == len(KINDS)
    for kind, registry in registries:
        assert type(registry) is Registry, kind
        assert len(registry) > 0 and list(registry) == registry.names(), kind
        for entry in registry.entries():
            assert entry.description.strip() and "\n" not in entry.description, (kind, entry.name)
            assert callable(entry.factory), (kind, entry.name)
            assert entry.name in registry and registry.get(entry.name) is entry


def test_the_module_names_are_the_registries():
    from ragfunnel.chunking import CHUNKERS
    from ragfunnel.corpus import CORPORA
    from ragfunnel.store import STORE_BACKENDS

    registries = dict(plugin_registries())
    assert registries["chunker"] is CHUNKERS and registries["corpus"] is CORPORA
    assert registries["store"] is STORE_BACKENDS


def test_plugins_json_lists_every_kind():
    result = runner.invoke(app, ["plugins", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert {row["kind"] for row in rows} == KINDS
    assert len(rows) == sum(len(registry) for _, registry in plugin_registries())
    for row in rows:
        assert set(row) == {"kind", "name", "extra", "installed", "description", "usage"}
        assert isinstance(row["installed"], bool) and row["description"]
    by_name = {(row["kind"], row["name"]): row for row in rows}
    assert by_name[("reranker", "ltr")]["extra"] == "rerank"
    assert by_name[("store", "postgres")]["extra"] == "postgres"
    assert by_name[("llm", "local")]["usage"] == "local, local:<file.gguf>"
    assert by_name[("fuser", "rrf")]["installed"] is True and by_name[("fuser", "rrf")]["extra"] is None


def test_plugins_table_says_what_is_not_installed(monkeypatch):
    from ragfunnel.rerank import registry as rerank_registry

    rerankers = rerank_registry.RERANKERS.copy()
    rerankers.register("heavy", lambda arg, ctx: None, extra="fancy", modules=("no_such_module_xyz",),
                       description="needs a package that is not there")
    monkeypatch.setattr(rerank_registry, "RERANKERS", rerankers)
    result = runner.invoke(app, ["plugins"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "retriever" in result.stdout and "dense_prf" in result.stdout
    assert "heavy" in result.stdout and "pip install 'ragfunnel[fancy]'" in result.stderr
