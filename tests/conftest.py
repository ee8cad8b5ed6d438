"""Shared fixtures.

* The data directory comes from `RAGFUNNEL_DATA`, else `<repo>/../shared/data`; tests that need it skip cleanly
  when it is missing.
* `RAGFUNNEL_HOME` points at a temporary directory for the whole session (and `RAGFUNNEL_INDEX` /
  `RAGFUNNEL_CONFIG` are cleared), so no test ever reads or writes `~/.ragfunnel`.
* `small_index` builds one small real index (scenes of s01_e01, s01_e02 and s01_e04: ~800 embedded windows) once
  per session, with its own embedding cache under the temporary home.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CORPUS_FILE = "friends_corpus.jsonl.gz"
# Episodes of the small session index. s01_e04 holds the gold scene of "Who did Rachel dump at the altar?".
SMALL_EPISODES = ("s01_e01_", "s01_e02_", "s01_e04_")
SMALL_VIEWS: dict = {}  # the default views, so every default mode runs on the small index


def find_data_dir() -> Path | None:
    env = os.environ.get("RAGFUNNEL_DATA")
    candidate = Path(env).expanduser() if env else REPO.parent / "shared" / "data"
    return candidate.resolve() if (candidate / "friends" / CORPUS_FILE).is_file() else None


DATA_DIR = find_data_dir()
needs_data = pytest.mark.skipif(DATA_DIR is None, reason="Friends data not found (set RAGFUNNEL_DATA)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "integration: needs the real Friends data in shared/data")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if DATA_DIR is not None:
        return
    skip = pytest.mark.skip(reason="Friends data not found (set RAGFUNNEL_DATA or provide ../shared/data)")
    for item in items:
        if "integration" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def ragfunnel_home(tmp_path_factory: pytest.TempPathFactory):
    """Isolate the whole session from the user's ~/.ragfunnel and environment."""
    home = tmp_path_factory.mktemp("ragfunnel-home")
    mp = pytest.MonkeyPatch()
    mp.setenv("RAGFUNNEL_HOME", str(home))
    mp.delenv("RAGFUNNEL_INDEX", raising=False)
    mp.delenv("RAGFUNNEL_CONFIG", raising=False)
    if DATA_DIR is not None:
        mp.setenv("RAGFUNNEL_DATA", str(DATA_DIR))
    yield home
    mp.undo()


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if DATA_DIR is None:
        pytest.skip("Friends data not found (set RAGFUNNEL_DATA or provide ../shared/data)")
    return DATA_DIR


@pytest.fixture(scope="session")
def friends_dir(data_dir: Path) -> Path:
    return data_dir / "friends"


@pytest.fixture(scope="session")
def friends_docs(friends_dir: Path):
    """The whole corpus (3,107 scenes; loads in well under a second)."""
    from ragfunnel.corpus import load_friends

    return load_friends(friends_dir / CORPUS_FILE)


@pytest.fixture(scope="session")
def small_docs(friends_docs):
    return [d for d in friends_docs if d.doc_id.startswith(SMALL_EPISODES)]


@pytest.fixture(scope="session")
def encoder():
    """The process-wide MiniLM encoder (the one every store and retriever uses)."""
    from ragfunnel.embedding import shared_encoder

    return shared_encoder()


@pytest.fixture(scope="session")
def session_cache(ragfunnel_home: Path):
    """The embedding cache of the session home (== Settings.cache_path of `small_settings`)."""
    from ragfunnel.embedding import EmbeddingCache

    cache = EmbeddingCache(ragfunnel_home / "cache" / "embeddings.sqlite")
    yield cache
    cache.close()


@dataclass
class SmallIndex:
    path: Path
    store: object  # EmbeddedStore, opened once; treat as read-only
    docs: list
    settings: object  # ragfunnel.config.Settings pointing at `path`


@pytest.fixture(scope="session")
def small_index(small_docs, session_cache, ragfunnel_home: Path, tmp_path_factory: pytest.TempPathFactory):
    from ragfunnel.config import load_settings
    from ragfunnel.store import StoreSettings, build_index

    path = tmp_path_factory.mktemp("small-index") / "index"
    # Views pinned (not the defaults, which may grow): what the `bm25`, `vector` and `hybrid` modes need.
    store = build_index(small_docs, path, StoreSettings(**SMALL_VIEWS), session_cache)
    settings = load_settings(home=ragfunnel_home, index=path)
    yield SmallIndex(path, store, small_docs, settings)
    store.close()


@pytest.fixture(scope="session")
def small_store(small_index: SmallIndex):
    return small_index.store


@pytest.fixture(scope="session")
def small_settings(small_index: SmallIndex):
    return small_index.settings
