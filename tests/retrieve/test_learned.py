"""Learned fusion (retrieve/learned.py): the evidence each list gives a parent, the per-question weights of a fitted
model, what the trace is told, and the model file's errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ragfunnel.errors import ConfigError
from ragfunnel.retrieve.fusion import RRFFuser
from ragfunnel.retrieve.learned import LearnedFusion, evidence, feature_names, list_features, question_features
from tests.helpers import cands

KINDS = {"bm25": "sparse", "dense": "dense"}
NAMES = ["bm25", "dense"]


def model(bias, theta=None, evidence_kinds=("rrf10", "rrf60", "score"), **extra):
    features = feature_names(NAMES)
    theta = np.zeros((2, len(features))) if theta is None else theta
    return {"kind": "learned_fusion", "retrievers": NAMES, "features": features, "evidence": list(evidence_kinds),
            "mean": [0.0] * len(features), "std": [1.0] * len(features), "bias": np.asarray(bias).tolist(),
            "theta": np.asarray(theta).tolist(), **extra}


def test_evidence_of_each_list():
    lists = {"bm25": cands(["a", "b", "c"], [9.0, 5.0, 1.0], name="bm25"), "dense": cands(["c", "d"], name="dense")}
    ids, x = evidence(lists, NAMES, kinds=("rrf1", "rrf10", "rrf60", "score", "found"))
    assert ids == ["a", "b", "c", "d"] and x.shape == (4, 2, 5)
    a, c = x[0], x[2]
    assert a[0].tolist() == pytest.approx([1.0, 1.0, 1.0, 1.0, 1.0])  # first of bm25: every evidence at its top
    assert a[1].tolist() == [0.0] * 5  # not in the dense list
    assert c[0].tolist() == pytest.approx([2 / 4, 11 / 13, 61 / 63, 0.0, 1.0])  # third of bm25, its lowest score
    assert x[1, 0, 3] == pytest.approx(0.5)  # min-max scaled: (5 - 1) / (9 - 1)
    assert evidence({}, NAMES)[1].shape == (0, 2, 3)
    with pytest.raises(ConfigError, match="unknown fusion evidence"):
        evidence(lists, NAMES, kinds=("bogus",))


def test_a_constant_model_is_a_weighted_rrf():
    """theta = 0 and only rrf10 evidence: the fused order is RRF k=10 with the exp(bias) weights."""
    bm25 = cands([f"d{i}" for i in range(12)], name="bm25")
    dense = cands([f"d{i}" for i in (11, 3, 7, 0, 5, 20, 21)], name="dense")
    lists = {"bm25": bm25, "dense": dense}
    fusion = LearnedFusion(model(np.log([[0.7], [0.3]]), evidence_kinds=("rrf10",)))
    phi = fusion.phi("who ate the pizza?", {}, lists, KINDS)
    fused = fusion.fuse(lists, KINDS, phi)
    expected = RRFFuser(k=10, weights={"bm25": 0.7, "dense": 0.3}).fuse(lists, KINDS)
    assert [c.doc_id for c in fused] == [c.doc_id for c in expected]
    assert [c.rank for c in fused] == list(range(1, len(fused) + 1))
    assert fused[0].sources == {"bm25": (1, 12.0), "dense": (4, 4.0)}
    assert [c.doc_id for c in fusion.fuse(lists, KINDS, phi, limit=3)] == [c.doc_id for c in expected[:3]]
    assert not fusion.query_dependent


def test_weights_follow_the_question():
    """A slope on `wh_none`: a description without a question word trusts the dense list, a who-question BM25."""
    features = feature_names(NAMES)
    theta = np.zeros((2, len(features)))
    theta[1, features.index("wh_none")] = 3.0
    theta[0, features.index("wh_none")] = -3.0
    m = model(np.zeros((2, 3)), theta)
    m["mean"][features.index("wh_none")] = 0.5  # half the questions it saw had no question word
    fusion = LearnedFusion(m)
    lists = {"bm25": cands(["s", "x", "y"], name="bm25"), "dense": cands(["d", "x", "z"], name="dense")}
    described = fusion.phi("the scene where Ross gets a spray tan", {}, lists, KINDS)
    asked = fusion.phi("Who gets a spray tan?", {}, lists, KINDS)
    assert fusion.fuse(lists, KINDS, described)[0].doc_id == "d"
    assert fusion.fuse(lists, KINDS, asked)[0].doc_id == "s"
    why = fusion.explain(described)
    assert why["weights"]["dense"] > 0.9 and sum(why["weights"].values()) == pytest.approx(1.0, abs=1e-3)
    assert why["default_weights"] == {"bm25": 0.5, "dense": 0.5}
    assert why["why"][0]["feature"] == "wh_none" and why["why"][0]["pull"]["dense"] > 0
    assert fusion.query_dependent


def test_question_features():
    f = question_features('Where does Joey say "how you doin" to Rachel?', {"joey": 5.0, "doin": 7.0, "zzz": None})
    assert f["wh_where"] == 1.0 and f["wh_none"] == 0.0 and f["question_mark"] == 1.0 and f["quoted"] == 1.0
    assert f["idf_mean"] == 6.0 and f["idf_max"] == 7.0 and f["idf_min"] == 5.0 and f["oov"] == pytest.approx(1 / 3)
    assert f["names"] > 0
    g = question_features("i remember a scene with a duck in the bathroom", {})
    assert g["wh_none"] == 1.0 and g["first_person"] == 1.0 and g["quoted"] == 0.0 and g["names"] == 0.0
    assert list(f) == list(g)


def test_list_features_see_gaps_and_agreement():
    lists = {"bm25": cands(["a", "b", "c"], [10.0, 5.0, 4.0], name="bm25"), "dense": cands(["a", "b", "z"], name="dense")}
    f = list_features(lists, KINDS, NAMES)
    assert f["bm25:top"] == 10.0 and f["bm25:gap2"] == 0.5 and f["bm25:gap10"] == pytest.approx(0.6)
    assert f["agree_sparse_dense"] == pytest.approx(2 / 10)
    assert list(f) == feature_names(NAMES)[len(question_features("x", {})):]
    assert list_features({}, KINDS, NAMES)["bm25:top"] == 0.0


def test_model_files(tmp_path):
    with pytest.raises(ConfigError, match="train one with `ragfunnel train fusion`"):
        LearnedFusion.load(tmp_path)
    (tmp_path / "model.json").write_text("{not json")
    with pytest.raises(ConfigError, match="not a readable fusion model"):
        LearnedFusion.load(tmp_path)
    (tmp_path / "model.json").write_text(json.dumps({"kind": "ltr"}))
    with pytest.raises(ConfigError, match="not a learned fusion model"):
        LearnedFusion.load(tmp_path)
    broken = model(np.zeros((2, 3)))
    broken["mean"] = [0.0]
    (tmp_path / "model.json").write_text(json.dumps(broken))
    with pytest.raises(ConfigError, match="feature statistics"):
        LearnedFusion.load(tmp_path)
    (tmp_path / "model.json").write_text(json.dumps(model(np.zeros((2, 3)), modes=["hybrid"], encoder="default")))
    fusion = LearnedFusion.load(tmp_path)
    assert fusion.modes == ["hybrid"] and fusion.path == tmp_path / "model.json"
    assert fusion.mismatch({"bm25": 1, "dense": 1}, "default") is None
    assert "does not define (dense)" in fusion.mismatch({"bm25": 1}, "default")
    assert "train it again" in fusion.mismatch({"bm25": 1, "dense": 1}, "int8")
