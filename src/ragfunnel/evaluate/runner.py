"""Run question sets through pipeline modes; share each retriever's list between modes of one run."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ragfunnel.questions import Question
from ragfunnel.evaluate.metrics import summarize, union_coverage
from ragfunnel.pipeline import Pipeline
from ragfunnel.store.filters import Filter

CEILING_KS = (5, 10, 20, 50)
POOL = 50  # parents kept per list for metrics and ceilings


@dataclass
class ModeRun:
    mode: str
    ranked: list[list[str]]  # fused parent ids per question
    lists: dict[str, list[list[str]]] = field(default_factory=dict)  # retriever -> parent ids per question
    seconds: list[float] = field(default_factory=list)


def run_modes(
    pipeline: Pipeline,
    questions: Sequence[Question],
    modes: Sequence[str],
    progress: Callable[[int, int], None] | None = None,
    where: Filter | None = None,
) -> dict[str, ModeRun]:
    runs = {m: ModeRun(pipeline.settings.resolve_mode(m)[0], []) for m in modes}
    for i, q in enumerate(questions):
        shared: dict[str, list] = {}  # retriever name -> collapsed list, reused across modes
        for m in modes:
            result = pipeline.search(q.text, m, k=POOL, list_cache=shared, where=where)
            runs[m].ranked.append([c.doc_id for c in result.candidates])
            runs[m].seconds.append(result.trace.total_seconds)
            for name, cands in result.lists.items():
                runs[m].lists.setdefault(name, []).append([c.doc_id for c in cands[:POOL]])
        if progress:
            progress(i + 1, len(questions))
    return runs


def metrics_for(run: ModeRun, questions: Sequence[Question]) -> dict[str, float]:
    golds = [q.gold for q in questions]
    out = summarize(list(zip(run.ranked, golds)))
    out["recall@50"] = union_coverage([run.ranked], golds, 50)
    return out


def ceilings(run: ModeRun, questions: Sequence[Question], ks: Sequence[int] = CEILING_KS) -> dict[str, float]:
    """Union coverage of the retrievers' own top-k lists (before fusion) at each k."""
    golds = [q.gold for q in questions]
    lists = list(run.lists.values())
    return {f"union@{k}": union_coverage(lists, golds, k) for k in ks}
