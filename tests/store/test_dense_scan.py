"""The embedded store's scans of its held half-precision copy (numkong) give what usearch's own exact search gives:
a pool that holds every vector, the projected scan with a smaller pool, and again after a write replaced the copy."""

from __future__ import annotations

import numpy as np
import pytest

from ragfunnel.embedding import shared_encoder
from ragfunnel.store import StoreSettings, build_index
from ragfunnel.store import embedded
from tests.helpers import make_doc, topic_docs

SETTINGS = StoreSettings(sparse_views=["scene"], dense_views=["utt"], late_chunked_views=[])
QUESTIONS = ["Who ordered a pizza?", "a wedding at the altar", "the monkey Marcel", "Thanksgiving football game"]


@pytest.fixture
def store(tmp_path, session_cache):
    built = build_index(topic_docs(), tmp_path / "index", SETTINGS, session_cache)
    yield built
    built.close()


def ranked(store, vector, limit, **kwargs):
    return store.search_dense("utt", vector, limit, exact=True, **kwargs)


def test_held_scans_match_usearch_exact_search(store, monkeypatch):
    vectors = shared_encoder().encode(QUESTIONS)
    n = store.count_dense("utt")
    assert n > 20  # enough rows that a pool of 12 is a real cut
    expected = [ranked(store, v, 3) for v in vectors]  # no pool: usearch's exact search
    monkeypatch.setattr(embedded, "SCAN_HELD_FROM", 1)
    for v, want in zip(vectors, expected):
        full = ranked(store, v, 3, pool=10**9)
        pooled = ranked(store, v, 3, pool=12)
        assert [c for c, _ in full] == [c for c, _ in want] == [c for c, _ in pooled]
        assert np.allclose([s for _, s in full], [s for _, s in want], atol=2e-3)
    # a pool smaller than 4 x limit is raised to it; a limit beyond the view returns every vector once
    assert len(ranked(store, vectors[0], n + 5, pool=1)) == n


def test_a_write_replaces_the_held_copy_and_its_projection(store, monkeypatch):
    monkeypatch.setattr(embedded, "SCAN_HELD_FROM", 1)
    vector = shared_encoder().encode(["a purple giraffe sings opera on the roof"])[0]
    before = ranked(store, vector, 1, pool=8)
    store.upsert([make_doc("s09_e99_c01", [("Phoebe Buffay", "A purple giraffe sings opera on the roof!")])])
    after = ranked(store, vector, 1, pool=8)
    assert after[0][0].startswith("s09_e99_c01") and after != before
