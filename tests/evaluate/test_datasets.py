"""Question sets: the Friends sets have their published sizes; any file of either schema loads; bad lines are
reported with their line number."""

from __future__ import annotations

import json
import re

import pytest

from ragfunnel.errors import CorpusError, RagfunnelError
from ragfunnel.corpus.friends_questions import FRIENDS_SETS, load_friends_set
from ragfunnel.questions import Question, load_questions

FULL = {
    "question_id": "s01_e04_c04_Who",
    "question": "Who did Rachel dump at the altar ?",
    "answers": ["Barry"],
    "gold_scene_ids": ["s01_e04_c04"],
    "split": "train",
}
SAMPLE = {"qa_id": "s01_e01_c05_Who", "question": "Who broke her watch ?", "ground_truth_scene_id": "s01_e01_c05",
          "answers": ["Paul the Wine Guy"], "is_paraphrased": False}


def write_lines(path, lines):
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return path


def test_both_schemas_load(tmp_path):
    qs = load_questions(write_lines(tmp_path / "q.jsonl", [FULL, "", SAMPLE, {"question": "Where?", "gold_scene_ids":
                                                                              ["a", "b"]}]))
    assert [q.qid for q in qs] == ["s01_e04_c04_Who", "s01_e01_c05_Who", "q:4"]  # line-number ids as fallback
    assert qs[0] == Question("s01_e04_c04_Who", "Who did Rachel dump at the altar ?", ("s01_e04_c04",), ("Barry",))
    assert qs[0].meta["split"] == "train"
    assert qs[1].gold == ("s01_e01_c05",) and qs[1].answers == ("Paul the Wine Guy",)
    assert qs[2].gold == ("a", "b") and qs[2].answers == ()


@pytest.mark.parametrize(
    "bad",
    [
        '{"question": "Who?", "gold_scene_ids": ["a"]',  # broken JSON
        {"question": "Who?"},  # no gold
        {"gold_scene_ids": ["a"]},  # no question
        {"question": 42, "gold_scene_ids": ["a"]},
        '["a list", "not a record"]',
        '"a string"',
    ],
)
def test_bad_line_is_a_corpus_error_with_its_line_number(tmp_path, bad):
    path = write_lines(tmp_path / "q.jsonl", [FULL, SAMPLE, bad, FULL])
    with pytest.raises(CorpusError) as info:
        load_questions(path)
    assert str(path) in str(info.value) and re.search(r"\bline 3\b", str(info.value))


def test_missing_question_file(tmp_path):
    with pytest.raises(CorpusError, match="not found"):
        load_questions(tmp_path / "none.jsonl")


def test_unknown_set(tmp_path):
    with pytest.raises(RagfunnelError, match="unknown question set"):
        load_friends_set("hard", tmp_path)
    with pytest.raises(CorpusError):
        load_friends_set("direct", tmp_path)  # the id list is not there


@pytest.mark.integration
@pytest.mark.parametrize("name, n", [("direct", 400), ("reworded", 400), ("heavy", 200), ("dev", 1182)])
def test_friends_sets_have_their_sizes(friends_dir, friends_docs, name, n):
    qs = load_friends_set(name, friends_dir)
    assert len(qs) == n and len({q.qid for q in qs}) == n
    scenes = {d.doc_id for d in friends_docs}
    assert all(q.text.strip() and q.gold and set(q.gold) <= scenes for q in qs)
    if name in ("direct", "reworded", "heavy"):
        id_file = {"direct": "eval_questions_direct.json", "reworded": "eval_questions_reworded.json",
                   "heavy": "eval_questions_heavily_reworded.json"}[name]
        assert [q.qid for q in qs] == json.loads((friends_dir / id_file).read_text())  # in the published order
    if name == "reworded":
        assert all(q.qid.endswith("_Paraphrased") for q in qs)
    if name == "direct":
        assert not any(q.qid.endswith("_Paraphrased") for q in qs)
        assert qs[2].text == "Who did Rachel dump at the altar ?" and qs[2].gold == ("s01_e04_c04",)
    if name == "heavy":
        assert all(q.qid.endswith("_LexicalParaphrase") for q in qs)
    if name == "dev":
        assert all(q.meta["split"] == "dev" for q in qs)
        assert sum(bool(q.meta["is_paraphrased"]) for q in qs) == 452
    assert set(FRIENDS_SETS) == {"direct", "reworded", "heavy", "dev", "holdout"}


@pytest.mark.integration
def test_holdout_set_is_part_of_dev_and_not_of_the_sample(friends_dir):
    holdout = load_friends_set("holdout", friends_dir)
    dev_ids = {q.qid for q in load_friends_set("dev", friends_dir)}
    sample = {q.qid for name in ("direct", "reworded", "heavy") for q in load_friends_set(name, friends_dir)}
    assert holdout and {q.qid for q in holdout} <= dev_ids
    assert not {q.qid for q in holdout} & sample
