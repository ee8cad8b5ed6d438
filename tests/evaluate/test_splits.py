"""Training questions: FriendsQA dev + train minus the 800-question sample and every paraphrase partner of a
sample question, split by gold scene with a seed; the first stage that mines candidates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragfunnel.questions import Question
from ragfunnel.corpus.friends_questions import family, sample_ids, training_split
from ragfunnel.evaluate.candidates import first_stage

SAMPLE_FILES = ("eval_questions_direct.json", "eval_questions_reworded.json", "eval_questions_heavily_reworded.json")


def norm(text: str) -> str:
    return " ".join(text.split()).lower()


# ---- on the real data --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def records(friends_dir) -> dict[str, dict]:
    with (friends_dir / "friends_questions.jsonl").open() as fh:
        return {r["question_id"]: r for r in map(json.loads, fh)}


@pytest.fixture(scope="module")
def sample(friends_dir) -> set[str]:
    ids: set[str] = set()
    for name in SAMPLE_FILES:
        ids |= set(json.loads((friends_dir / name).read_text()))
    return ids


@pytest.fixture(scope="module")
def banned_families(friends_dir, records, sample) -> set[str]:
    """Families of the sample, found without the id-suffix convention the code relies on: through the records'
    `paraphrase_of` and `paraphrase_ids`, and, for the heavy (lexical) paraphrases, which are not in
    friends_questions.jsonl, through their `original_question` text and gold scene."""
    fam = lambda r: r["paraphrase_of"] or r["question_id"]  # noqa: E731
    out = set()
    for qid in sample & set(records):
        out.add(fam(records[qid]))
        out.update(records[qid].get("paraphrase_ids") or [])
    with (friends_dir / "friends_rag_eval_lexical_paraphrases.jsonl").open() as fh:
        lexical = [json.loads(line) for line in fh]
    assert {r["qa_id"] for r in lexical} == set(json.loads((friends_dir / SAMPLE_FILES[2]).read_text()))
    for r in lexical:
        originals = [
            q for q in records.values()
            if norm(q["question"]) == norm(r["original_question"]) and q["gold_scene_ids"] == [r["ground_truth_scene_id"]]
        ]
        assert originals, r["qa_id"]
        out.update(fam(q) for q in originals)
    return out


@pytest.fixture(scope="module")
def split(friends_dir):
    return training_split(friends_dir)


def test_sample_ids_are_the_three_files(friends_dir, sample):
    assert sample_ids(friends_dir) == sample
    assert len(sample) == 1000  # 400 direct + 400 reworded + 200 heavily reworded


def test_no_sample_question_nor_paraphrase_partner_is_used(split, records, sample, banned_families):
    used = split.train + split.holdout
    assert len(used) > 500
    for q in used:
        assert q.qid not in sample
        assert q.qid not in banned_families, q.qid
        assert (records[q.qid]["paraphrase_of"] or q.qid) not in banned_families, q.qid
        assert not set(records[q.qid].get("paraphrase_ids") or []) & sample, q.qid


def test_nothing_else_is_dropped(split, records, banned_families, sample):
    eligible = {qid for qid, r in records.items() if r["split"] in ("dev", "train")}
    kept = {qid for qid in eligible if qid not in sample and (records[qid]["paraphrase_of"] or qid) not in banned_families}
    used = [q.qid for q in split.train + split.holdout]
    assert len(used) == len(set(used))
    assert set(used) == kept
    assert split.excluded == len(eligible) - len(kept)
    assert all(records[q]["split"] in ("dev", "train") for q in used)


def test_documented_counts(split):
    """docs/reranker.md: 1,059 questions remain (777 excluded), 853 training and 206 hold-out."""
    assert (len(split.train), len(split.holdout), split.excluded) == (853, 206, 777)


def test_train_and_holdout_share_no_gold_scene(split):
    train_scenes = {g for q in split.train for g in q.gold}
    hold_scenes = {g for q in split.holdout for g in q.gold}
    assert train_scenes and hold_scenes and not train_scenes & hold_scenes
    assert len(hold_scenes) == round(0.2 * (len(train_scenes) + len(hold_scenes)))


def test_the_seed_decides_the_split(friends_dir, split):
    ids = lambda s: ([q.qid for q in s.train], [q.qid for q in s.holdout])  # noqa: E731
    assert ids(training_split(friends_dir, seed=13)) == ids(split)  # 13 is the default
    other = training_split(friends_dir, seed=14)
    assert ids(other) != ids(split)
    assert set(ids(other)[0] + ids(other)[1]) == set(ids(split)[0] + ids(split)[1])  # the same questions
    assert other.excluded == split.excluded


def test_fraction_and_splits(friends_dir, records):
    none_held = training_split(friends_dir, holdout_frac=0.0)
    assert none_held.holdout == [] and len(none_held.train) > 500
    dev_only = training_split(friends_dir, splits=("dev",))
    assert all(records[q.qid]["split"] == "dev" for q in dev_only.train + dev_only.holdout)


# ---- the exclusion rule on hand-written files --------------------------------------------------------------------


def write_questions(d: Path, rows: list[tuple[str, str | None, str, str]]) -> None:
    with (d / "friends_questions.jsonl").open("w") as fh:
        for qid, of, scene, split in rows:
            fh.write(json.dumps({"question_id": qid, "question": f"Question {qid}?", "paraphrase_of": of,
                                 "gold_scene_ids": [scene], "split": split}) + "\n")


def test_exclusion_by_family(tmp_path):
    write_questions(tmp_path, [
        ("s01_e01_c01_Who", None, "s01_e01_c01", "dev"),  # in direct: out, with its paraphrase
        ("s01_e01_c01_Who_Paraphrased", "s01_e01_c01_Who", "s01_e01_c01", "dev"),
        ("s01_e01_c02_Why", None, "s01_e01_c02", "dev"),  # its paraphrase is in reworded: out
        ("s01_e01_c02_Why_Paraphrased", "s01_e01_c02_Why", "s01_e01_c02", "train"),
        ("s01_e01_c03_What", None, "s01_e01_c03", "train"),  # its lexical paraphrase is heavy: out
        ("s01_e01_c03_What_Paraphrased", "s01_e01_c03_What", "s01_e01_c03", "dev"),
        ("s01_e01_c04_How", None, "s01_e01_c04", "dev"),  # kept, with its paraphrase
        ("s01_e01_c04_How_Paraphrased", "s01_e01_c04_How", "s01_e01_c04", "dev"),
        ("s01_e01_c05_When", None, "s01_e01_c05", "test"),  # not a training split
    ])
    (tmp_path / SAMPLE_FILES[0]).write_text(json.dumps(["s01_e01_c01_Who"]))
    (tmp_path / SAMPLE_FILES[1]).write_text(json.dumps(["s01_e01_c02_Why_Paraphrased"]))
    (tmp_path / SAMPLE_FILES[2]).write_text(json.dumps(["s01_e01_c03_What_LexicalParaphrase"]))
    split = training_split(tmp_path, holdout_frac=0.0)
    assert [q.qid for q in split.train] == ["s01_e01_c04_How", "s01_e01_c04_How_Paraphrased"]
    assert split.excluded == 6


def test_without_sample_files_nothing_is_excluded(tmp_path):
    write_questions(tmp_path, [(f"s01_e01_c0{i}_Who", None, f"s01_e01_c0{i}", "dev") for i in range(1, 6)])
    assert sample_ids(tmp_path) == set()
    split = training_split(tmp_path, holdout_frac=0.4, seed=3)
    assert split.excluded == 0 and len(split.train) == 3 and len(split.holdout) == 2


def test_family():
    assert family(Question("a_Paraphrased", "?", ("s",), meta={"paraphrase_of": "a"})) == "a"
    assert family(Question("a", "?", ("s",), meta={"paraphrase_of": None})) == "a"
    assert family(Question("b", "?", ("s",))) == "b"


# ---- first stage -------------------------------------------------------------------------------------------------


@pytest.mark.integration
def test_first_stage(small_pipeline, small_questions):
    questions = small_questions[:3]
    calls = []
    sets = first_stage(small_pipeline, questions, depth=7, progress=lambda d, t: calls.append((d, t)))
    assert calls == [(1, 3), (2, 3), (3, 3)]
    assert [cs.question for cs in sets] == questions
    for cs in sets:
        expected = small_pipeline.search(cs.question.text, "hybrid", k=7).candidates
        assert cs.candidates == expected
        assert [d.doc_id for d in cs.documents] == [c.doc_id for c in cs.candidates]
        assert all(d.units for d in cs.documents)
    (bm25,) = first_stage(small_pipeline, questions[:1], mode="bm25", depth=4)
    assert bm25.candidates == small_pipeline.search(questions[0].text, "bm25", k=4).candidates
