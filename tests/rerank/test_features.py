"""Learning-to-rank features: one value per name, each at its name's index. Retriever evidence (found, rank,
score, gap to the best), fused rank, IDF coverage of the question in the scene and its best 3-line window,
question names among speakers/mentions, dense evidence from every window and line of the scene
(`store.doc_vectors`), question type."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from ragfunnel.rerank.features import WH, FeatureExtractor, feature_names
from ragfunnel.store.base import StoreSettings
from ragfunnel.types import Candidate
from tests.helpers import make_doc


class FakeStore:
    """Word analyzer, fixed IDFs and fixed chunk vectors; records every doc_vectors call."""

    STOP = {"the", "a", "is", "did", "and", "who", "what", "why", "does", "to", "at"}

    def __init__(self, vectors: dict[tuple[str, str], np.ndarray] | None = None, idfs: dict[str, float] | None = None):
        self.vectors = vectors or {}
        self.idfs = idfs or {}
        self.settings = StoreSettings()
        self.calls: list[tuple[str, str]] = []

    def analyze(self, text: str) -> list[str]:
        return [w for w in re.findall(r"[a-z]+", text.lower()) if w not in self.STOP]

    def term_idfs(self, view: str, query: str) -> dict[str, float | None]:
        return {t: self.idfs.get(t) for t in dict.fromkeys(self.analyze(query))}

    def doc_vectors(self, view: str, doc_id: str) -> np.ndarray:
        self.calls.append((view, doc_id))
        return self.vectors.get((view, doc_id), np.zeros((0, 3), dtype=np.float32))


def unit(*xs: float) -> np.ndarray:
    return np.asarray(xs, dtype=np.float32)


Q = unit(1.0, 0.0, 0.0)  # question vector: similarity = the first coordinate of a chunk vector


def rows_of(sims: list[float]) -> np.ndarray:
    return np.asarray([[s, 0.0, 0.0] for s in sims], dtype=np.float32)


def qctx(idfs=None, names=(), wh="who", qvec=Q) -> dict:
    return {"idfs": dict(idfs or {}), "names": set(names), "wh": wh, "qvec": qvec}


def cand(doc_id: str, rank: int, score: float, **sources) -> Candidate:
    return Candidate(doc_id, score, rank, dict(sources), (f"{doc_id}#w3s1/0000",))


def named(extractor: FeatureExtractor, x: np.ndarray) -> list[dict[str, float]]:
    assert x.shape == (x.shape[0], len(extractor.names))
    return [dict(zip(extractor.names, map(float, row))) for row in x]


DOC_A = make_doc(
    "s09_e07_c01",
    [
        ("Joey Tribbiani", "I want pizza now"),
        ("Chandler Bing", "nothing here"),
        "(nothing either)",
        ("Ross Geller", "the dinosaur bones"),
        ("Rachel Green", "my guitar lesson with Gunther"),
    ],
)
DOC_B = make_doc("s09_e07_c02", [("Monica Geller", "pizza and dinosaur"), ("Phoebe Buffay", "a song")])


# ---- names and shape ---------------------------------------------------------------------------------------------


def test_feature_names_per_retriever_and_unique():
    names = feature_names(["bm25", "dense"])
    assert names[:8] == [
        "bm25__found", "bm25__rrank", "bm25__score", "bm25__score_gap",
        "dense__found", "dense__rrank", "dense__score", "dense__score_gap",
    ]
    assert len(names) == len(set(names))
    assert names[-len(WH):] == [f"wh__{w}" for w in WH]
    assert len(feature_names(["a", "b", "c"])) == len(feature_names([])) + 12
    assert "dense__scene_gap" in names and "cover__window_idf" in names


@pytest.mark.parametrize("retrievers", [[], ["r1"], ["r1", "r2", "r3"]])
def test_one_value_per_name(retrievers):
    ex = FeatureExtractor(FakeStore(), retrievers)
    x = ex.features(qctx(), [cand(DOC_A.doc_id, 1, 1.0), cand(DOC_B.doc_id, 2, 0.5)], [DOC_A, DOC_B])
    assert x.dtype == np.float32
    assert x.shape == (2, len(ex.names)) == (2, len(feature_names(retrievers)))


# ---- first-stage evidence ----------------------------------------------------------------------------------------


def test_found_rank_score_and_gap_to_the_best():
    ex = FeatureExtractor(FakeStore(), ["a", "b", "missing"])
    cands = [
        cand(DOC_A.doc_id, 1, 0.30, a=(2, 5.0), b=(1, 0.9)),
        cand(DOC_B.doc_id, 2, 0.25, a=(1, 8.0)),
    ]
    one, two = named(ex, ex.features(qctx(), cands, [DOC_A, DOC_B]))
    assert [one[f"a__{k}"] for k in ("found", "rrank", "score", "score_gap")] == [1.0, 0.5, 5.0, 3.0]
    assert [one[f"b__{k}"] for k in ("found", "rrank", "score", "score_gap")] == [1.0, 1.0, pytest.approx(0.9), 0.0]
    assert [two[f"a__{k}"] for k in ("found", "rrank", "score", "score_gap")] == [1.0, 1.0, 8.0, 0.0]
    # not found by b: no rank, no score, the whole gap to b's best
    assert [two[f"b__{k}"] for k in ("found", "rrank", "score", "score_gap")] == [0.0, 0.0, 0.0, pytest.approx(0.9)]
    # a retriever no candidate came from: zeros everywhere
    for row in (one, two):
        assert [row[f"missing__{k}"] for k in ("found", "rrank", "score", "score_gap")] == [0.0, 0.0, 0.0, 0.0]
    assert (one["n_found"], two["n_found"]) == (2.0, 1.0)
    assert (one["fused__rank"], one["fused__rrank"], one["fused__score"]) == (1.0, 1.0, pytest.approx(0.30))
    assert (two["fused__rank"], two["fused__rrank"], two["fused__score"]) == (2.0, 0.5, pytest.approx(0.25))


def test_fused_source_wins_over_the_candidate_rank():
    """After a reranker reordered, the fused position lives in sources["fused"]."""
    ex = FeatureExtractor(FakeStore(), ["a"])
    c = cand(DOC_A.doc_id, 1, 9.0, a=(3, 2.0), fused=(4, 0.2))
    (row,) = named(ex, ex.features(qctx(), [c], [DOC_A]))
    assert (row["fused__rank"], row["fused__rrank"], row["fused__score"]) == (4.0, 0.25, pytest.approx(0.2))
    assert row["n_found"] == 1.0  # "fused" is not a retriever


# ---- text evidence -----------------------------------------------------------------------------------------------


def test_idf_coverage_in_scene_and_best_window():
    ex = FeatureExtractor(FakeStore(), [])
    idfs = {"pizza": 2.0, "dinosaur": 3.0, "guitar": 1.0, "unicorn": 4.0}
    a, b = named(ex, ex.features(qctx(idfs), [cand(DOC_A.doc_id, 1, 1), cand(DOC_B.doc_id, 2, 1)], [DOC_A, DOC_B]))
    # A: pizza (line 1), dinosaur (line 4), guitar (line 5); unicorn nowhere
    assert a["cover__scene"] == pytest.approx(3 / 4)
    assert a["cover__scene_idf"] == pytest.approx(6 / 10)
    # windows of 3 lines: {pizza}, {dinosaur}, {dinosaur, guitar}: best count 2, best IDF 4
    assert a["cover__window"] == pytest.approx(2 / 4)
    assert a["cover__window_idf"] == pytest.approx(4 / 10)
    assert a["cover__window_count"] == 2.0
    # B has two lines: one window with pizza and dinosaur
    assert b["cover__scene"] == b["cover__window"] == pytest.approx(2 / 4)
    assert b["cover__scene_idf"] == b["cover__window_idf"] == pytest.approx(5 / 10)
    for row in (a, b):
        assert row["question__terms"] == 4.0
        assert row["question__mean_idf"] == pytest.approx(10 / 4)


def test_no_known_question_terms_give_zero_coverage():
    ex = FeatureExtractor(FakeStore(), [])
    (row,) = named(ex, ex.features(qctx({}), [cand(DOC_A.doc_id, 1, 1)], [DOC_A]))
    assert row["cover__scene"] == row["cover__window"] == row["cover__window_count"] == 0.0
    assert row["question__terms"] == 0.0


def test_scene_size_features():
    ex = FeatureExtractor(FakeStore(), [])
    (row,) = named(ex, ex.features(qctx(), [cand(DOC_A.doc_id, 1, 1)], [DOC_A]))
    assert row["scene__units"] == 5.0
    assert row["scene__log_chars"] == pytest.approx(math.log1p(sum(len(u.text) for u in DOC_A.units)))


def test_speaker_name_features():
    ex = FeatureExtractor(FakeStore(), [])
    cands, docs = [cand(DOC_A.doc_id, 1, 1), cand(DOC_B.doc_id, 2, 1)], [DOC_A, DOC_B]
    # Joey and Rachel speak in A, Gunther is only mentioned there; none of them is in B
    a, b = named(ex, ex.features(qctx(names={"joey", "rachel", "gunther"}), cands, docs))
    assert (a["names__n_question"], a["names__speaking"], a["names__mentioned"], a["names__all_speaking"]) == (3, 2, 3, 0)
    assert (b["names__n_question"], b["names__speaking"], b["names__mentioned"], b["names__all_speaking"]) == (3, 0, 0, 0)
    a, b = named(ex, ex.features(qctx(names={"joey", "ross"}), cands, docs))
    assert (a["names__speaking"], a["names__mentioned"], a["names__all_speaking"]) == (2, 2, 1.0)
    a, _ = named(ex, ex.features(qctx(names=set()), cands, docs))
    assert (a["names__n_question"], a["names__speaking"], a["names__all_speaking"]) == (0, 0, 0.0)


def test_speaker_names_match_on_first_names_of_every_speaker():
    doc = make_doc("s09_e07_c03", [("Joey Tribbiani & Chandler Bing", "Hey!"), "(Monica enters)"])
    ex = FeatureExtractor(FakeStore(), [])
    (row,) = named(ex, ex.features(qctx(names={"chandler", "monica"}), [cand(doc.doc_id, 1, 1)], [doc]))
    assert row["names__speaking"] == 1.0  # Monica only appears in a stage direction
    assert row["names__mentioned"] == 2.0


@pytest.mark.parametrize("wh", WH)
def test_question_word_one_hot(wh):
    ex = FeatureExtractor(FakeStore(), [])
    (row,) = named(ex, ex.features(qctx(wh=wh), [cand(DOC_A.doc_id, 1, 1)], [DOC_A]))
    assert {w: row[f"wh__{w}"] for w in WH} == {w: float(w == wh) for w in WH}


def test_question_context_names_terms_and_question_word():
    store = FakeStore(idfs={"dump": 5.0, "rachel": 2.0, "altar": 6.0})
    ex = FeatureExtractor(store, [])
    ctx = ex.question_context("Who did Rachel and Joey dump at the Altar?")
    assert ctx["idfs"] == {"rachel": 2.0, "dump": 5.0, "altar": 6.0}  # "joey" (in no chunk) is dropped
    assert ctx["names"] == {"rachel", "joey", "altar"}  # every capitalised word but question words
    assert ctx["wh"] == "who"
    assert ctx["qvec"].shape == (384,)
    assert ex.question_context("   ")["wh"] == ""


# ---- dense evidence ----------------------------------------------------------------------------------------------


def test_dense_evidence_uses_every_window_and_line_of_the_scene():
    vectors = {
        ("w3s1", DOC_A.doc_id): rows_of([0.1, 0.9, 0.5, 0.3]),
        ("utt", DOC_A.doc_id): rows_of([0.2, 0.4]),
        ("w3s1", DOC_B.doc_id): rows_of([0.6]),
        # B has no line vectors
    }
    store = FakeStore(vectors)
    ex = FeatureExtractor(store, ["a"])
    cands = [cand(DOC_A.doc_id, 1, 1.0, a=(1, 1.0)), cand(DOC_B.doc_id, 2, 0.5, a=(2, 0.5))]
    a, b = named(ex, ex.features(qctx(), cands, [DOC_A, DOC_B]))
    assert store.calls == [("w3s1", DOC_A.doc_id), ("utt", DOC_A.doc_id), ("w3s1", DOC_B.doc_id), ("utt", DOC_B.doc_id)]
    assert a["dense__max_window"] == pytest.approx(0.9)
    assert a["dense__top3_window"] == pytest.approx((0.9 + 0.5 + 0.3) / 3)
    assert a["dense__max_utt"] == pytest.approx(0.4)
    assert a["dense__top3_utt"] == pytest.approx(0.3)  # fewer than three lines: the mean of those there are
    assert b["dense__max_window"] == b["dense__top3_window"] == pytest.approx(0.6)
    assert b["dense__max_utt"] == b["dense__top3_utt"] == 0.0
    # the gap to the best window among the candidates
    assert a["dense__scene_gap"] == pytest.approx(0.0)
    assert b["dense__scene_gap"] == pytest.approx(0.3)


def test_dense_views_are_configurable():
    store = FakeStore({("w5s2", DOC_A.doc_id): rows_of([0.7]), ("line", DOC_A.doc_id): rows_of([0.2])})
    ex = FeatureExtractor(store, [], window_view="w5s2", utt_view="line")
    (row,) = named(ex, ex.features(qctx(), [cand(DOC_A.doc_id, 1, 1)], [DOC_A]))
    assert store.calls == [("w5s2", DOC_A.doc_id), ("line", DOC_A.doc_id)]
    assert (row["dense__max_window"], row["dense__max_utt"]) == (pytest.approx(0.7), pytest.approx(0.2))


def test_every_value_sits_at_its_names_index():
    """`dense__scene_gap` is computed last and inserted: nothing after it may shift."""
    store = FakeStore({
        ("w3s1", DOC_A.doc_id): rows_of([0.25, 0.75]),
        ("utt", DOC_A.doc_id): rows_of([0.5, 0.125, 0.0625, 0.0]),
        ("w3s1", DOC_B.doc_id): rows_of([0.375]),
        ("utt", DOC_B.doc_id): rows_of([0.5]),
    })
    ex = FeatureExtractor(store, ["a", "b"])
    cands = [cand(DOC_B.doc_id, 1, 0.5, b=(1, 2.0)), cand(DOC_A.doc_id, 2, 0.25, a=(1, 3.0), b=(4, 1.0))]
    x = ex.features(qctx({"pizza": 2.0}, names={"joey"}, wh="why"), cands, [DOC_B, DOC_A])
    at = {name: i for i, name in enumerate(ex.names)}
    gap = at["dense__scene_gap"]
    assert at["dense__top3_utt"] == gap - 1 and at["wh__what"] == gap + 1
    assert x[:, gap].tolist() == pytest.approx([0.75 - 0.375, 0.0])
    assert x[:, at["dense__max_window"]].tolist() == pytest.approx([0.375, 0.75])
    assert x[:, at["dense__top3_utt"]].tolist() == pytest.approx([0.5, (0.5 + 0.125 + 0.0625) / 3])
    assert x[:, at["wh__why"]].tolist() == [1.0, 1.0]
    assert x[:, [at[f"wh__{w}"] for w in WH if w != "why"]].sum() == 0.0
    assert x[:, at["names__speaking"]].tolist() == [0.0, 1.0]
    assert x[:, at["b__rrank"]].tolist() == [1.0, 0.25]
    assert x[:, at["a__found"]].tolist() == [0.0, 1.0]
    assert x[:, at["fused__rank"]].tolist() == [1.0, 2.0]
    assert x[:, at["scene__units"]].tolist() == [2.0, 5.0]


def test_no_candidates():
    ex = FeatureExtractor(FakeStore(), ["a"])
    x = ex.features(qctx(), [], [])
    assert x.size == 0


# ---- on the real small index -------------------------------------------------------------------------------------


@pytest.mark.integration
def test_features_on_the_small_index(small_store, small_pipeline, encoder):
    retrievers = small_pipeline.settings.modes["hybrid"].retrievers
    question = "Who did Rachel dump at the altar?"
    cands = small_pipeline.search(question, "hybrid", k=15).candidates
    docs = [small_store.document(c.doc_id) for c in cands]
    ex = FeatureExtractor(small_store, retrievers)
    ctx = ex.question_context(question)
    assert "rachel" in ctx["names"] and ctx["wh"] == "who"
    assert set(ctx["idfs"]) == {"rachel", "dump", "altar"}
    assert ctx["qvec"] == pytest.approx(encoder.encode([question])[0], abs=1e-6)
    x = ex.features(ctx, cands, docs)
    assert x.shape == (15, len(ex.names)) and np.isfinite(x).all()
    rows = named(ex, x)
    gold = next(r for c, r in zip(cands, rows) if c.doc_id == "s01_e04_c04")
    assert gold["cover__scene"] > 0 and gold["names__mentioned"] >= 1
    for c, d, row in zip(cands, docs, rows):
        windows = small_store.doc_vectors("w3s1", c.doc_id) @ ctx["qvec"]
        lines = small_store.doc_vectors("utt", c.doc_id) @ ctx["qvec"]
        assert len(windows) >= 1 and len(lines) == len(d.units)
        assert row["dense__max_window"] == pytest.approx(float(windows.max()), abs=1e-5)
        assert row["dense__top3_utt"] == pytest.approx(float(np.sort(lines)[::-1][:3].mean()), abs=1e-5)
        if "dense_w3s1" in c.sources:  # the retrieved window is one of the scene's windows
            assert row["dense__max_window"] == pytest.approx(c.sources["dense_w3s1"][1], abs=2e-3)
        assert row["n_found"] == sum(r in c.sources for r in retrievers)
    assert max(r["dense__scene_gap"] for r in rows) == pytest.approx(
        max(r["dense__max_window"] for r in rows) - min(r["dense__max_window"] for r in rows), abs=1e-5
    )
