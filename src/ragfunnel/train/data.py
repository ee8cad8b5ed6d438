"""Training questions and first-stage candidates for reranker training.

Questions: FriendsQA dev (and train, where present) minus every question of the 800-question friends-rag sample
and minus their paraphrase partners, so the sample stays a fair test. The rest is split by gold scene into a
training part and a validation hold-out (scenes never cross), with a seed.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ragfunnel.evaluate.datasets import Question, load_questions
from ragfunnel.pipeline import Pipeline
from ragfunnel.types import Candidate, Document


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


@dataclass
class CandidateSet:
    question: Question
    candidates: list[Candidate]
    documents: list[Document]


def first_stage(
    pipeline: Pipeline,
    questions: Sequence[Question],
    mode: str = "hybrid",
    depth: int = 50,
    progress: Callable[[int, int], None] | None = None,
) -> list[CandidateSet]:
    out = []
    for i, q in enumerate(questions, 1):
        result = pipeline.search(q.text, mode, k=depth)
        docs = [pipeline.store.document(c.doc_id) for c in result.candidates]
        out.append(CandidateSet(q, result.candidates, docs))
        if progress:
            progress(i, len(questions))
    return out
