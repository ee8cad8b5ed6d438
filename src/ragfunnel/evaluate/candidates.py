"""First-stage candidates of labelled questions: what reranker and gate training learn from and what the rerank
evaluation reranks. Built by the pipeline, shared by evaluation and training."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ragfunnel.questions import Question
from ragfunnel.pipeline import Pipeline
from ragfunnel.types import Candidate, Document


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
