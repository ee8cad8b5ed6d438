"""Season 1 of the real corpus end to end: load, chunk, and retrieve a known question's gold scene."""

from __future__ import annotations

import pytest

from ragfunnel.chunking import chunk_documents
from ragfunnel.corpus import load_friends
from ragfunnel.pipeline import Pipeline
from ragfunnel.types import Chunk
from tests.conftest import CORPUS_FILE

pytestmark = pytest.mark.integration

# FriendsQA s01_e04_c04_Who (also in the friends-rag "direct" sample). Its gold scene is where Kiki says "the biggest
# news is still you dumping Barry at the altar!".
ALTAR = "Who did Rachel dump at the altar?"
ALTAR_GOLD = "s01_e04_c04"


@pytest.fixture(scope="module")
def season1(friends_dir):
    return [d for d in load_friends(friends_dir / CORPUS_FILE) if d.metadata["season"] == 1]


def test_season_1_counts(season1):
    assert len(season1) == 326
    assert sum(len(d.units) for d in season1) == 6626
    assert len({d.doc_id[:7] for d in season1}) == 24
    assert all(d.doc_id.startswith("s01_") and d.label.startswith("S01E") for d in season1)


def test_season_1_chunks(season1):
    views = ["scene", "w3s1", "utt"]
    chunks = chunk_documents(season1, views)
    per_view = {v: [c for c in chunks if c.view == v] for v in views}
    assert len(per_view["scene"]) == 326
    assert len(per_view["utt"]) == 6626
    assert len(per_view["w3s1"]) == sum(max(len(d.units) - 2, 1) for d in season1)
    assert len({c.chunk_id for c in chunks}) == len(chunks)
    by_id = {d.doc_id: d for d in season1}
    for c in per_view["w3s1"]:
        doc = by_id[Chunk.parent_of(c.chunk_id)]
        assert c.text == "\n".join(u.render() for u in doc.units[c.start : c.end])
    # every utterance of every scene is in some window
    covered = {(c.doc_id, i) for c in per_view["w3s1"] for i in range(c.start, c.end)}
    assert covered == {(d.doc_id, i) for d in season1 for i in range(len(d.units))}


def test_the_gold_scene_holds_the_answer(season1):
    gold = next(d for d in season1 if d.doc_id == ALTAR_GOLD)
    text = gold.render().lower()
    assert "barry" in text and "altar" in text


@pytest.mark.parametrize("mode", ["hybrid", "fast"])
def test_known_question_finds_its_gold_scene(small_settings, small_store, mode):
    pipe = Pipeline(small_settings, store=small_store)
    result = pipe.search(ALTAR, mode, k=5)
    assert result.mode == "hybrid"
    assert ALTAR_GOLD in [c.doc_id for c in result.candidates]
