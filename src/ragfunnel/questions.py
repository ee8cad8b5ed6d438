"""Labelled questions: a question, the ids of the documents that answer it (gold) and, where known, answers.

Low in the layers so that a corpus can name its question sets and evaluation and training can load them. Any
JSONL file in the schema of friends_questions.jsonl (`gold_scene_ids`) or of the friends-rag sample
(`ground_truth_scene_id`) loads with `load_questions`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ragfunnel.errors import CorpusError


@dataclass(frozen=True)
class Question:
    qid: str
    text: str
    gold: tuple[str, ...]
    answers: tuple[str, ...] = ()
    meta: dict = field(default_factory=dict, hash=False, compare=False)


def load_questions(path: str | Path) -> list[Question]:
    path = Path(path).expanduser()
    if not path.is_file():
        raise CorpusError(f"{path}: question file not found")
    out = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
                qid = r.get("question_id") or r.get("qa_id") or f"{path.stem}:{lineno}"
                if "gold_scene_ids" in r:
                    gold = r["gold_scene_ids"]
                    gold = (gold,) if isinstance(gold, str) else tuple(gold)
                elif "ground_truth_scene_id" in r:
                    gold = (r["ground_truth_scene_id"],)
                else:
                    raise KeyError("gold_scene_ids or ground_truth_scene_id")
                text = r["question"]
                if not isinstance(text, str):
                    raise TypeError("question is not a string")
                out.append(Question(qid, text, gold, tuple(r.get("answers") or ()), r))
            except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:  # AttributeError: not an object
                why = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
                raise CorpusError(f"{path}, line {lineno}: not a question record ({why})") from None
    return out


def answer_unit_ids(q: Question) -> set[str]:
    """The ids of the units (utterances) that hold a question's gold answers: `answers_detail` utterance ids, else
    `gold_utterance_ids`; empty when the record names none."""
    detail = q.meta.get("answers_detail") or []
    ids = {d["utterance_id"] for d in detail if isinstance(d, dict) and d.get("utterance_id")}
    return ids or set(q.meta.get("gold_utterance_ids") or ())
