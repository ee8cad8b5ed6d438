"""The LambdaMART reranker: a clear error when no model was trained, the order of a tiny model trained on the
small index (train/ltr.py), and the cross-encoder column."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from ragfunnel.errors import ConfigError
from ragfunnel.rerank.base import Passage
from ragfunnel.rerank.cross_encoder import OnnxCrossEncoder
from ragfunnel.rerank.features import FeatureExtractor, feature_names
from ragfunnel.rerank.ltr import LTRReranker
from ragfunnel.rerank.passages import passage_text

pytestmark = pytest.mark.integration

lgb = pytest.importorskip("lightgbm")


def passages_of(store, cs, n: int = 20, with_docs: bool = True) -> list[Passage]:
    return [
        Passage(c, passage_text(store, d, c), d if with_docs else None)
        for c, d in zip(cs.candidates[:n], cs.documents[:n])
    ]


def ids(cands) -> list[str]:
    return [c.doc_id for c in cands]


# ---- no model ----------------------------------------------------------------------------------------------------


def test_missing_model_is_a_config_error_naming_the_train_command(small_store, small_candidate_sets, tmp_path):
    missing = tmp_path / "models" / "reranker" / "ltr"
    rr = LTRReranker(small_store, missing)  # construction is cheap and never fails
    with pytest.raises(ConfigError, match="ragfunnel train reranker") as err:
        rr.warm_up()
    assert str(missing) in str(err.value)
    with pytest.raises(ConfigError, match="ragfunnel train reranker"):
        rr.rerank("Who did Rachel dump at the altar?", passages_of(small_store, small_candidate_sets[0], 5))


@pytest.mark.parametrize("keep", ["model.txt", "meta.json"])
def test_half_a_model_is_a_config_error(small_store, tiny_ltr_model, tmp_path, keep):
    shutil.copy(tiny_ltr_model / keep, tmp_path / keep)
    with pytest.raises(ConfigError, match="ragfunnel train reranker"):
        LTRReranker(small_store, tmp_path).warm_up()


# ---- the tiny trained model --------------------------------------------------------------------------------------


def test_tiny_model_reorders_by_its_predictions(small_store, small_candidate_sets, tiny_ltr_model):
    meta = json.loads((tiny_ltr_model / "meta.json").read_text())
    booster = lgb.Booster(model_file=str(tiny_ltr_model / "model.txt"))
    extractor = FeatureExtractor(small_store, meta["retrievers"])
    rr = LTRReranker(small_store, tiny_ltr_model)
    reordered = 0
    for cs in small_candidate_sets[:8]:
        passages = passages_of(small_store, cs)
        result = rr.rerank(cs.question.text, passages)
        out = result.candidates
        assert not result.degraded and result.notes == []
        assert [c.rank for c in out] == list(range(1, len(passages) + 1))
        assert sorted(ids(out)) == sorted(ids(cs.candidates[:20]))
        # the scores are the booster's predictions on the features of each candidate
        x = extractor.features(extractor.question_context(cs.question.text), cs.candidates[:20], cs.documents[:20])
        expected = dict(zip(ids(cs.candidates[:20]), booster.predict(x)))
        assert [c.score for c in out] == pytest.approx([expected[c.doc_id] for c in out], abs=1e-9)
        assert [c.score for c in out] == sorted((c.score for c in out), reverse=True)
        # ties keep the fused order; every candidate remembers its fused position
        fused = {c.doc_id: c for c in cs.candidates}
        for a, b in zip(out, out[1:]):
            if a.score == b.score:
                assert fused[a.doc_id].rank < fused[b.doc_id].rank
        for c in out:
            assert c.sources["fused"] == (fused[c.doc_id].rank, fused[c.doc_id].score)
            assert c.best_chunks == fused[c.doc_id].best_chunks
        reordered += ids(out) != ids(cs.candidates[:20])
    assert reordered >= 2  # the model does more than keep the fused order


def test_documents_are_loaded_when_passages_lack_them(small_store, small_candidate_sets, tiny_ltr_model):
    cs = small_candidate_sets[3]
    rr = LTRReranker(small_store, tiny_ltr_model)
    with_docs = rr.rerank(cs.question.text, passages_of(small_store, cs))
    without = rr.rerank(cs.question.text, passages_of(small_store, cs, with_docs=False))
    assert [(c.doc_id, c.score) for c in without.candidates] == [(c.doc_id, c.score) for c in with_docs.candidates]


def test_model_is_loaded_once(small_store, tiny_ltr_model, small_candidate_sets):
    rr = LTRReranker(small_store, tiny_ltr_model)
    assert rr._booster is None  # lazy
    rr.warm_up()
    booster = rr._booster
    rr.rerank(small_candidate_sets[0].question.text, passages_of(small_store, small_candidate_sets[0], 5))
    assert rr._booster is booster


def test_model_dir_with_tilde_is_expanded(small_store, monkeypatch, tiny_ltr_model):
    monkeypatch.setenv("HOME", str(tiny_ltr_model.parent))
    rr = LTRReranker(small_store, "~/ltr")
    assert rr.model_dir == tiny_ltr_model
    rr.warm_up()


def test_no_passages_give_no_candidates(small_store, tiny_ltr_model):
    assert LTRReranker(small_store, tiny_ltr_model).rerank("Who?", []).candidates == []


# ---- the cross-encoder column ------------------------------------------------------------------------------------


class FakeCrossEncoder:
    """Scores a passage by a number written in a table keyed by its text."""

    def __init__(self, table: dict[str, float]):
        self.table, self.warmed, self.calls = table, 0, []

    def warm_up(self):
        self.warmed += 1

    def scores(self, question, texts):
        self.calls.append((question, list(texts)))
        return np.asarray([self.table[t] for t in texts], dtype=np.float32)


@pytest.fixture(scope="module")
def ce_model(small_settings, tmp_path_factory):
    """A booster over the usual features + `cross_encoder`, trained on data where only the cross-encoder column
    varies and the relevance grows with it: its order is the cross-encoder's."""
    retrievers = small_settings.modes["hybrid"].retrievers
    names = [*feature_names(retrievers), "cross_encoder"]
    rng = np.random.default_rng(0)
    ce = rng.uniform(0, 1, 400)
    x = np.zeros((400, len(names)))
    x[:, -1] = ce
    y = np.floor(ce * 5)
    params = {"objective": "lambdarank", "min_data_in_leaf": 5, "num_leaves": 8, "verbose": -1, "num_threads": 1}
    booster = lgb.train(params, lgb.Dataset(x, y, group=[10] * 40, feature_name=names), num_boost_round=30)
    out = tmp_path_factory.mktemp("ltr-ce")
    booster.save_model(str(out / "model.txt"))
    (out / "meta.json").write_text(json.dumps({"kind": "ltr", "retrievers": retrievers, "features": names}))
    return out


def test_cross_encoder_feature_without_a_cross_encoder_is_a_config_error(small_store, ce_model):
    with pytest.raises(ConfigError, match="cross-encoder"):
        LTRReranker(small_store, ce_model).warm_up()


def test_cross_encoder_feature_with_an_untrained_cross_encoder(small_store, ce_model, tmp_path):
    """What make_reranker builds when the LTR model wants the cross-encoder but it is missing."""
    rr = LTRReranker(small_store, ce_model, OnnxCrossEncoder(tmp_path / "cross_encoder"))
    with pytest.raises(ConfigError, match="ragfunnel train reranker"):
        rr.warm_up()


def test_cross_encoder_scores_are_the_last_column(small_store, small_candidate_sets, ce_model):
    cs = small_candidate_sets[0]
    passages = passages_of(small_store, cs, 5)
    values = [0.05, 0.95, 0.5, 0.3, 0.75]
    fake = FakeCrossEncoder({p.text: v for p, v in zip(passages, values)})
    rr = LTRReranker(small_store, ce_model, fake)
    result = rr.rerank(cs.question.text, passages)
    assert fake.warmed == 1
    assert fake.calls == [(cs.question.text, [p.text for p in passages])]
    by_ce = [p.candidate.doc_id for _, p in sorted(zip(values, passages), key=lambda vp: -vp[0])]
    assert ids(result.candidates) == by_ce
    assert [c.rank for c in result.candidates] == [1, 2, 3, 4, 5]


def test_a_model_without_the_column_never_calls_the_cross_encoder(small_store, small_candidate_sets, tiny_ltr_model):
    fake = FakeCrossEncoder({})
    cs = small_candidate_sets[0]
    LTRReranker(small_store, tiny_ltr_model, fake).rerank(cs.question.text, passages_of(small_store, cs, 5))
    assert fake.warmed == 0 and fake.calls == []
