"""The Friends question sets and the training split, read from the Friends data folder.

Friends: the friends-rag 800-question sample split into `direct` (400) and `reworded` (400), the 200 `heavy`
lexical paraphrases, FriendsQA `dev` (1,182) from friends_questions.jsonl, and `holdout`, the part of dev that
reranker training holds out.

Training split: FriendsQA dev (and train, where present) minus every question of the 800-question friends-rag sample
and minus their paraphrase partners, so the sample stays a fair test. The rest is split by gold scene into a
training part and a validation hold-out (scenes never cross), with a seed. It lives with the corpus (below
evaluate and train) because it is a fact about these files that evaluation and training both use.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from ragfunnel.errors import CorpusError, RagfunnelError
from ragfunnel.questions import Question, load_questions

FRIENDS_SETS = ("direct", "reworded", "heavy", "dev", "holdout")


def load_friends_set(name: str, friends_dir: str | Path) -> list[Question]:
    d = Path(friends_dir).expanduser()
    if name in ("direct", "reworded"):
        ids_file = d / f"eval_questions_{name}.json"
        if not ids_file.is_file():
            raise CorpusError(f"{ids_file}: not found (is --data pointing at shared/data?)")
        wanted = json.loads(ids_file.read_text())
        by_id = {q.qid: q for q in load_questions(d / "friends_rag_eval_sample.jsonl")}
        return [by_id[i] for i in wanted]
    if name == "heavy":
        ids_file = d / "eval_questions_heavily_reworded.json"
        wanted = json.loads(ids_file.read_text()) if ids_file.is_file() else None
        qs = load_questions(d / "friends_rag_eval_lexical_paraphrases.jsonl")
        if wanted:
            by_id = {q.qid: q for q in qs}
            return [by_id[i] for i in wanted]
        return qs
    if name == "holdout":  # the part of dev that reranker training holds out (never trained on)
        return training_split(d).holdout
    if name in ("dev", "train"):
        return [q for q in load_questions(d / "friends_questions.jsonl") if q.meta.get("split") == name]
    raise RagfunnelError(f"unknown question set {name!r}: choose one of {', '.join(FRIENDS_SETS)} or pass --questions")


@dataclass
class Split:
    train: list[Question]
    holdout: list[Question]
    excluded: int


def family(q: Question) -> str:
    """Original question id shared by a question and its paraphrases."""
    return q.meta.get("paraphrase_of") or q.qid


def sample_ids(friends_dir: Path) -> set[str]:
    ids: set[str] = set()
    for name in ("eval_questions_direct.json", "eval_questions_reworded.json", "eval_questions_heavily_reworded.json"):
        f = friends_dir / name
        if f.is_file():
            ids.update(json.loads(f.read_text()))
    return ids


def training_split(friends_dir: Path, seed: int = 13, holdout_frac: float = 0.2, splits=("dev", "train")) -> Split:
    friends_dir = Path(friends_dir)
    questions = [q for q in load_questions(friends_dir / "friends_questions.jsonl") if q.meta.get("split") in splits]
    banned = sample_ids(friends_dir)
    banned_families = {i.replace("_Paraphrased", "").replace("_LexicalParaphrase", "") for i in banned}
    kept = [q for q in questions if q.qid not in banned and family(q) not in banned_families]
    scenes = sorted({q.gold[0] for q in kept})
    rng = random.Random(seed)
    rng.shuffle(scenes)
    held = set(scenes[: round(len(scenes) * holdout_frac)])
    return Split(
        train=[q for q in kept if q.gold[0] not in held],
        holdout=[q for q in kept if q.gold[0] in held],
        excluded=len(questions) - len(kept),
    )


VAGUE_TRAIN_FILE = Path(__file__).with_name("friends_vague_train.jsonl")


def vague_training_moments() -> list[Question]:
    """Half-remembered moments in a viewer's words, one per scene (184: the 44 of bench/query/vague_dev.jsonl and 140
    written for issue 37), the training part of the vague-moment set; its held-out part (bench/query/vague_heldout.jsonl,
    other scenes) is never trained on. `ragfunnel train fusion` learns from them beside FriendsQA's training split."""
    return load_questions(VAGUE_TRAIN_FILE)


def reader_training_questions(friends_dir: Path, seed: int = 13) -> list[Question]:
    """What the extractive reader learns from: the training part of `training_split` (FriendsQA dev, exact spans)
    and the train-split questions of friends_questions.jsonl (episodes 1-20 of the friends-rag sample, heuristic
    answer lines). Never the split's hold-out, the sample's dev and test questions, or FriendsQA test."""
    friends_dir = Path(friends_dir)
    split = training_split(friends_dir, seed)
    held = {q.qid for q in split.holdout}
    extra = [q for q in load_questions(friends_dir / "friends_questions.jsonl")
             if q.meta.get("split") == "train" and q.qid not in held]
    return split.train + extra
