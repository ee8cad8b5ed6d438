"""Labelled question sets, for evaluation and training.

The question model and its JSONL loader live in `ragfunnel.questions`; each corpus names its own sets
(`Corpus.question_sets()`, see corpus/base.py). The Friends sets and the training split (corpus/friends_questions.py)
are re-exported here, where evaluation and training have always found them.
"""

from __future__ import annotations

from ragfunnel.corpus.friends_questions import (
    FRIENDS_SETS, Split, family, load_friends_set, sample_ids, training_split,
)
from ragfunnel.questions import Question, load_questions

__all__ = [
    "FRIENDS_SETS", "Question", "Split", "family", "load_friends_set", "load_questions", "sample_ids", "training_split",
]
