"""Settings: defaults < TOML file < environment < explicit overrides; bad values are ConfigErrors."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragfunnel.config import ModeSpec, Settings, load_settings
from ragfunnel.errors import ConfigError
from ragfunnel.store import StoreSettings

CONFIG = """
default_mode = "bm25"
query_filters = false

[store]
sparse_views = ["scene"]

[store.analyzer]
stem = false

[retrievers.bm25_utt]
kind = "bm25"
view = "utt"
depth = 50

[retrievers.bm25_scene]
kind = "bm25"
view = "scene"
depth = 7

[modes.utt_only]
retrievers = ["bm25_utt"]
description = "BM25 over single lines"

[modes.utt_only.fusion]
method = "none"

[aliases]
quick = "utt_only"
"""


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A fresh home for each test; no environment settings leak in."""
    for var in ("RAGFUNNEL_INDEX", "RAGFUNNEL_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("RAGFUNNEL_HOME", str(home))
    return home


def test_session_never_uses_the_real_home(ragfunnel_home):
    assert load_settings().home == ragfunnel_home
    assert load_settings().home != Path("~/.ragfunnel").expanduser()


def test_defaults(home):
    s = load_settings(home=home)
    assert s.home == home
    assert s.index_dir == home / "index"
    assert s.cache_path == home / "cache" / "embeddings.sqlite"
    assert s.store == StoreSettings()
    assert s.default_mode == "hybrid"
    assert {"bm25", "vector", "hybrid"} <= set(s.modes)
    assert s.aliases["fast"] == "hybrid"
    assert {"fast", "hybrid", "bm25", "vector"} <= set(s.mode_names)
    for name, mode in s.modes.items():
        assert mode.retrievers and set(mode.retrievers) <= set(s.retrievers), name
    hybrid = s.modes["hybrid"]
    assert hybrid.fusion.method == "rrf" and len(hybrid.retrievers) >= 2
    kinds = {s.retrievers[r].kind for r in hybrid.retrievers}
    assert kinds == {"bm25", "dense"}
    assert s.modes["bm25"].fusion.method == "none"
    assert not home.joinpath("config.toml").exists() and list(home.iterdir()) == []  # loading writes nothing


def test_resolve_mode_and_aliases(home):
    s = load_settings(home=home)
    assert s.resolve_mode(None) == ("hybrid", s.modes["hybrid"])
    assert s.resolve_mode("fast") == ("hybrid", s.modes["hybrid"])
    assert s.resolve_mode("bm25")[0] == "bm25"
    with pytest.raises(ConfigError, match="unknown mode 'turbo'") as info:
        s.resolve_mode("turbo")
    assert "hybrid" in str(info.value) and "fast" in str(info.value)  # lists the choices


def test_env_home_and_index(home, tmp_path, monkeypatch):
    assert load_settings().home == home
    monkeypatch.setenv("RAGFUNNEL_INDEX", str(tmp_path / "elsewhere"))
    s = load_settings()
    assert s.index_dir == tmp_path / "elsewhere"
    assert s.cache_path == home / "cache" / "embeddings.sqlite"  # the cache stays in the home
    assert load_settings(index=tmp_path / "flag").index_dir == tmp_path / "flag"  # a flag beats the environment
    other = tmp_path / "other-home"
    assert load_settings(home=other).index_dir == tmp_path / "elsewhere"
    monkeypatch.delenv("RAGFUNNEL_INDEX")
    assert load_settings(home=other).index_dir == other / "index"


def test_env_data(home, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGFUNNEL_DATA", str(tmp_path / "data"))
    s = load_settings()
    assert s.data == tmp_path / "data" and s.friends_dir == tmp_path / "data" / "friends"
    assert load_settings(data=tmp_path / "flag").data == tmp_path / "flag"


def test_corpus_and_its_data(home, tmp_path, monkeypatch):
    """The corpus an index is built from defaults to friends, whose data is <data>/friends (`friends_dir`, and the
    generic `corpus_dir`); another corpus named in the file has its data in <data>/<name>."""
    monkeypatch.setenv("RAGFUNNEL_DATA", str(tmp_path / "data"))
    s = load_settings()
    assert s.store.corpus == "friends" == StoreSettings().corpus
    assert s.corpus_dir == s.friends_dir == tmp_path / "data" / "friends"
    (home / "config.toml").write_text('[store]\ncorpus = "recipes"\n')
    other = load_settings()
    assert other.store.corpus == "recipes" and other.corpus_dir == tmp_path / "data" / "recipes"
    assert other.friends_dir == tmp_path / "data" / "friends" and other.corpus_data("x") == tmp_path / "data" / "x"


def test_generic_view_names_resolve_to_the_index_names(home):
    """`doc` / `unit` in a config file are the `scene` / `utt` views an index holds (same chunks, same ids)."""
    (home / "config.toml").write_text(
        '[store]\nsparse_views = ["doc", "w3s1", "unit", "scene"]\ndense_views = ["unit"]\n'
        '[retrievers.bm25_doc]\nkind = "bm25"\nview = "doc"\n'
    )
    s = load_settings()
    assert s.store.sparse_views == ["scene", "w3s1", "utt"] and s.store.dense_views == ["utt"]
    assert s.retrievers["bm25_doc"].view == "scene"
    assert Settings().store == StoreSettings()  # the defaults are untouched


def test_toml_file_in_home_overrides_defaults(home):
    (home / "config.toml").write_text(CONFIG)
    s = load_settings()
    defaults = Settings()
    assert s.default_mode == "bm25"
    assert s.resolve_mode(None)[0] == "bm25"
    assert s.query_filters is False and defaults.query_filters is True
    # nested tables merge key by key
    assert s.store.sparse_views == ["scene"]
    assert s.store.dense_views == defaults.store.dense_views
    assert s.store.analyzer.stem is False and s.store.analyzer.stopwords == defaults.store.analyzer.stopwords
    # named retrievers / modes: the file adds entries or replaces whole ones, the others stay
    assert s.retrievers["bm25_utt"].view == "utt" and s.retrievers["bm25_utt"].depth == 50
    assert s.retrievers["bm25_scene"].depth == 7
    assert set(defaults.retrievers) <= set(s.retrievers)
    assert set(defaults.modes) | {"utt_only"} == set(s.modes)
    assert s.modes["utt_only"] == ModeSpec(retrievers=["bm25_utt"], fusion={"method": "none"},
                                           description="BM25 over single lines")
    assert s.resolve_mode("quick")[0] == "utt_only"
    assert s.resolve_mode("fast")[0] == "hybrid"  # the default alias survives


def test_explicit_config_and_env_config(home, tmp_path, monkeypatch):
    path = tmp_path / "mine.toml"
    path.write_text('default_mode = "vector"\nindex = "%s"\n' % (tmp_path / "idx-from-file"))
    s = load_settings(path)
    assert s.default_mode == "vector" and s.index_dir == tmp_path / "idx-from-file"
    monkeypatch.setenv("RAGFUNNEL_CONFIG", str(path))
    assert load_settings().default_mode == "vector"
    monkeypatch.setenv("RAGFUNNEL_INDEX", str(tmp_path / "idx-from-env"))
    assert load_settings().index_dir == tmp_path / "idx-from-env"  # env beats file
    assert load_settings(index=tmp_path / "flag").index_dir == tmp_path / "flag"  # flag beats env


def test_file_data_is_used_without_env(home, tmp_path, monkeypatch):
    monkeypatch.delenv("RAGFUNNEL_DATA", raising=False)
    (home / "config.toml").write_text('data = "%s"\n' % (tmp_path / "d"))
    assert load_settings().data == tmp_path / "d"
    monkeypatch.setenv("RAGFUNNEL_DATA", str(tmp_path / "env-data"))
    assert load_settings().data == tmp_path / "env-data"


def test_missing_config_file(home, tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_settings(tmp_path / "nope.toml")


@pytest.mark.parametrize(
    "text, match",
    [
        ("default_mode = ", "invalid TOML"),
        ('[retrievers.x]\nkind = "sql"\nview = "scene"\n', "unknown retriever kind 'sql': choose one of bm25, dense"),
        ('[retrievers.x]\nkind = "bm25"\nview = "scene"\ndepth = 0\n', "invalid settings"),
        ('[retrievers.bm25_scene]\ndepth = 5\n', "invalid settings"),  # a whole entry is needed
        ('[modes.broken]\nretrievers = ["nope"]\n', "unknown retrievers"),
        ('[modes.hybrid.fusion]\nmethod = "average"\n', "unknown fusion method 'average': choose one of rrf"),
        ('[modes.accurate.rerank]\nmethod = "magic"\n', "unknown reranker 'magic': choose one of ltr"),
        ("[store]\nsparse_views = 3\n", "invalid settings"),
    ],
)
def test_invalid_files_are_config_errors(home, text, match):
    (home / "config.toml").write_text(text)
    with pytest.raises(ConfigError, match=match):
        load_settings()


def test_unknown_default_mode_fails_when_used(home):
    (home / "config.toml").write_text('default_mode = "turbo"\n')
    with pytest.raises(ConfigError, match="unknown mode"):
        load_settings().resolve_mode(None)
