"""Retrieval quality on judged questions of any collection: `ragfunnel eval questions` and `ragfunnel eval beir`.

Each question ranks the collection's documents (chunk hits collapsed to their parent documents, as every mode
returns them); the ranking is scored against the question's graded judgments: nDCG@k with linear gain (the grade
itself, as trec_eval and BEIR compute it), recall@k (share of the relevant documents, grade > 0, in the top k),
MRR@k (first relevant document). Grades of 0 count for nothing.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ragfunnel.errors import RagfunnelError
from ragfunnel.evaluate.metrics import mrr_at, ndcg_at, recall_at
from ragfunnel.pipeline import Pipeline
from ragfunnel.questions import Question
from ragfunnel.store import Filter

DEPTH = 100  # documents ranked per question: recall@100 needs them


@dataclass
class JudgedRun:
    questions: list[Question]
    ranked: list[list[str]]  # document ids per question, best first
    seconds: list[float]


def check_judgments(pipeline: Pipeline, questions: Sequence[Question], collection: str) -> int:
    """How many relevant documents the index does not hold; none at all is an error (the ids do not name this
    collection's documents: they are paths relative to the PATH indexed, `RELPATH#id` for JSONL records)."""
    relevant = sorted({d for q in questions for d in q.gold})
    known = pipeline.store.doc_metadata(relevant)
    missing = [d for d in relevant if d not in known]
    if relevant and len(missing) == len(relevant):
        raise RagfunnelError(
            f"none of the {len(relevant)} relevant documents of the questions is in collection {collection!r} "
            f"(first: {missing[0]!r}); document ids are paths relative to the PATH indexed, with forward slashes, "
            f"and RELPATH#<id> for a JSONL record")
    return len(missing)


def run_judged(pipeline: Pipeline, questions: Sequence[Question], mode: str | None, depth: int = DEPTH,
               progress: Callable[[int, int], None] | None = None, where: Filter | None = None) -> JudgedRun:
    """`where`: rank only the documents a metadata filter admits (relevant documents it leaves out are misses)."""
    run = JudgedRun(list(questions), [], [])
    for i, q in enumerate(questions, 1):
        result = pipeline.search(q.text, mode, k=depth, where=where)
        run.ranked.append([c.doc_id for c in result.candidates])
        run.seconds.append(result.trace.total_seconds)
        if progress:
            progress(i, len(questions))
    return run


def judged_metrics(run: JudgedRun, k: int = 10) -> dict[str, float | int]:
    """Mean nDCG / recall / MRR at 10 (and at `k`), recall@100, the number of questions and the p50 search time."""
    n = len(run.questions)
    if n == 0:
        raise RagfunnelError("no questions to evaluate")
    out: dict[str, float | int] = {}
    for cut in dict.fromkeys((10, k)):
        out[f"ndcg@{cut}"] = sum(ndcg_at(r, q.relevance, cut) for r, q in zip(run.ranked, run.questions)) / n
        out[f"recall@{cut}"] = sum(recall_at(r, q.gold, cut) for r, q in zip(run.ranked, run.questions)) / n
        out[f"mrr@{cut}"] = sum(mrr_at(r, q.gold, cut) for r, q in zip(run.ranked, run.questions)) / n
    out["recall@100"] = sum(recall_at(r, q.gold, 100) for r, q in zip(run.ranked, run.questions)) / n
    out["n"] = n
    out["search_p50_ms"] = 1000 * statistics.median(run.seconds)
    return out
