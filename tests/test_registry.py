"""The registry: name -> factory + the extra it needs; specs with an argument; unknown names and missing
dependencies as one-line ConfigErrors."""

from __future__ import annotations

import sys
import types

import pytest

from ragfunnel.registry import Registry, importable, install_hint, require
from ragfunnel.errors import ConfigError
from ragfunnel.rerank.registry import RerankerContext, make_reranker


def make() -> Registry:
    reg = Registry("widget", choose_with="--widget")
    reg.register("plain", lambda arg, *rest, **kw: ("plain", arg, rest, kw), usage="plain[:<x>]")
    reg.register("heavy", lambda arg: ("heavy", arg), extra="fancy", modules=("json", "no_such_module_xyz"),
                 needs="fancylib", note="it takes a while")
    return reg


def test_create_passes_the_argument_and_the_rest():
    reg = make()
    assert reg.create("plain") == ("plain", "", (), {})
    assert reg.create(" Plain:a:b ", 1, k=2) == ("plain", "a:b", (1,), {"k": 2})  # only the first ":" splits
    assert reg.names() == ["plain", "heavy"] and "PLAIN" in reg and "nope" not in reg
    assert reg.choices() == "plain[:<x>], heavy"


def test_unknown_names_list_the_choices():
    with pytest.raises(ConfigError, match=r"^unknown widget 'nope:1': choose one of plain\[:<x>\], heavy$"):
        make().create("nope:1")
    with pytest.raises(ConfigError, match="unknown widget 'nope'"):
        make().get("nope")


def test_a_missing_dependency_names_the_extra_before_the_factory_runs():
    with pytest.raises(ConfigError) as info:
        make().create("heavy")
    assert str(info.value) == (
        "the heavy widget needs fancylib: pip install 'ragfunnel[fancy]' (it takes a while); "
        "or pick another with --widget (plain[:<x>], heavy)"
    )
    assert make().get("heavy").missing() == ["no_such_module_xyz"]


def test_without_an_extra_the_modules_are_named():
    reg = Registry("thing")
    reg.register("x", lambda arg: arg, modules=("no_such_module_xyz",))
    with pytest.raises(ConfigError, match=r"^the x thing needs no_such_module_xyz: pip install no_such_module_xyz$"):
        reg.create("x")


def test_importable_without_importing(monkeypatch):
    assert importable("json") and not importable("no_such_module_xyz") and not importable("no_such_pkg_xyz.sub")
    monkeypatch.setitem(sys.modules, "fake_installed_xyz", types.SimpleNamespace())  # no __spec__: still present
    monkeypatch.setitem(sys.modules, "json", None)  # blocked: counts as absent
    assert importable("fake_installed_xyz") and not importable("json")


def test_bad_names_are_refused():
    reg = Registry("widget")
    for bad in ("", " ", "a:b"):
        with pytest.raises(ValueError):
            reg.register(bad, lambda arg: arg)
    assert install_hint("llm") == "pip install 'ragfunnel[llm]'"


def test_require_imports_or_names_the_extra():
    assert require("json", "serve", "x").dumps([1]) == "[1]"
    with pytest.raises(ConfigError, match=r"ragfunnel train gate needs no_such_module_xyz: pip install 'ragfunnel\[gate\]'"):
        require("no_such_module_xyz", "gate", "ragfunnel train gate")


def test_the_ltr_reranker_without_lightgbm_names_the_rerank_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "lightgbm", None)  # as if it were not installed
    context = RerankerContext(store=None, model_dir=tmp_path, model=None, models_dir=tmp_path)
    with pytest.raises(ConfigError, match=r"pip install 'ragfunnel\[rerank\]'"):
        make_reranker("ltr", context)
