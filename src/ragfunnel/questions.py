"""Labelled questions: a question, the ids of the documents that answer it (gold) and, where known, answers.

Low in the layers so that a corpus can name its question sets and evaluation and training can load them.
`load_questions` reads a JSONL file in any of three schemas, one question per line:
- any corpus: `{"id": ..., "question": ..., "relevant": {"<document id>": grade, ...}}` — graded relevance, a
  grade > 0 is relevant (gold), grades of 0 are kept for nDCG's ideal ranking but count for nothing;
- friends_questions.jsonl: `gold_scene_ids` (and `answers`);
- the friends-rag sample: `ground_truth_scene_id`.
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
    grades: dict[str, float] = field(default_factory=dict, hash=False, compare=False)  # doc id -> graded relevance

    @property
    def relevance(self) -> dict[str, float]:
        """Document id -> gain for nDCG: the graded judgments when the file had them, else 1 for each gold id."""
        return dict(self.grades) if self.grades else {g: 1.0 for g in self.gold}


def question_from_record(r: dict, fallback_id: str) -> Question:
    """One question from a record of any of the three schemas; KeyError/TypeError/ValueError when it is none."""
    if not isinstance(r, dict):
        raise TypeError("not a JSON object")
    qid = r.get("id", r.get("question_id") or r.get("qa_id") or fallback_id)
    text = r["question"]
    if not isinstance(text, str) or not text.strip():
        raise TypeError("question is not a non-empty string")
    grades: dict[str, float] = {}
    if "relevant" in r:
        relevant = r["relevant"]
        if not isinstance(relevant, dict):
            raise TypeError('"relevant" is not an object of document id -> grade')
        for doc, grade in relevant.items():
            if isinstance(grade, bool) or not isinstance(grade, (int, float)):
                raise TypeError(f"grade of {doc!r} is not a number")
            grades[str(doc)] = float(grade)
        gold = tuple(d for d, g in grades.items() if g > 0)
        if not gold:
            raise ValueError('no document in "relevant" has a grade > 0')
    elif "gold_scene_ids" in r:
        gold = r["gold_scene_ids"]
        gold = (gold,) if isinstance(gold, str) else tuple(gold)
    elif "ground_truth_scene_id" in r:
        gold = (r["ground_truth_scene_id"],)
    else:
        raise KeyError("relevant")
    return Question(str(qid), text, gold, tuple(r.get("answers") or ()), r, grades)


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
                out.append(question_from_record(json.loads(line), f"{path.stem}:{lineno}"))
            except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                why = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
                raise CorpusError(f"{path}, line {lineno}: not a question record ({why})") from None
    if not out:
        raise CorpusError(f"{path}: no questions in it")
    return out


def answer_unit_ids(q: Question) -> set[str]:
    """The ids of the units (utterances) that hold a question's gold answers: `answers_detail` utterance ids, else
    `gold_utterance_ids`; empty when the record names none."""
    detail = q.meta.get("answers_detail") or []
    ids = {d["utterance_id"] for d in detail if isinstance(d, dict) and d.get("utterance_id")}
    return ids or set(q.meta.get("gold_utterance_ids") or ())
