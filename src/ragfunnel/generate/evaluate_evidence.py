"""Measure the evidence reader (`eval answers --reader evidence`): the selected lines as the answer.

Questions: any file in the schema of friends_questions.jsonl (`--questions`), else the hold-out of the training
split (`training_split`: FriendsQA dev minus the 800 sample questions and their paraphrases, split by gold scene;
the evidence selector is trained on the other part), plus the out-of-scope questions of `out_of_scope.txt`.

Metrics (answerable questions unless said otherwise; a refusal is a miss):
- `evidence_recall@1` / `evidence_recall@3`: a gold answer utterance (`questions.answer_unit_ids`) is the first /
  among the first three selected lines;
- `gold_span_rate`: the answer (the selected lines, rendered `Speaker: words`) contains a gold answer span
  (`evaluate.contains_span`); `token_f1`: SQuAD token F1 of the answer against its best gold answer (low by
  construction: three whole lines against a short span);
- `citation_precision` (pooled over citations): the cited line's scene is a gold scene or its text holds a gold
  answer;
- `false_refusal_rate`: answerable questions refused (the answerability gate); `out_of_scope_refusal_rate`: the
  out-of-scope questions refused;
- `ttft_p50_ms` / `total_p50_ms`: the evidence answer is the first thing sent, so both are the median time from
  the question to the evidence answer (retrieval included); `evidence_p50_ms` is the selector's own part.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ragfunnel.corpus.friends_questions import training_split
from ragfunnel.generate.answer import Answerer
from ragfunnel.generate.evaluate import contains_span, out_of_scope_questions, token_f1
from ragfunnel.questions import Question, answer_unit_ids, load_questions


def evidence_questions(friends_dir: str | Path, questions_file: str | Path | None = None, limit: int | None = None,
                       seed: int = 13) -> list[Question]:
    """The answerable questions: those of `questions_file`, else the training split's hold-out; the first `limit`."""
    qs = load_questions(questions_file) if questions_file else training_split(Path(friends_dir), seed).holdout
    return qs[:limit] if limit else qs


def run_evidence(answerer: Answerer, questions: Sequence[Question], oos: Sequence[str], mode: str, k: int = 5,
                 progress: Callable[[int, int], None] | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(summary, one record per question) for the evidence reader."""
    rows: list[dict[str, Any]] = []
    total = len(questions) + len(oos)
    cases = [(q, "dev") for q in questions] + [(Question(f"oos_{i:02d}", text, ()), "oos") for i, text in enumerate(oos, 1)]
    for n, (q, kind) in enumerate(cases, 1):
        result = answerer.ask(q.text, mode, k)
        gold_units, spans = answer_unit_ids(q), [a for a in q.answers if a]
        returned = [c.unit_ids[0] for c in result.citations] if not result.refused else []
        rows.append({
            "id": q.qid, "kind": kind, "question": q.text, "refused": result.refused, "answer": result.answer,
            "lines": returned, "gold_units": sorted(gold_units), "answers": spans,
            "hit@1": bool(gold_units & set(returned[:1])), "hit@3": bool(gold_units & set(returned[:3])),
            "gold_span": (not result.refused) and contains_span(result.answer, spans),
            "f1": 0.0 if result.refused else token_f1(result.answer, spans),
            "citations_correct": sum(c.doc_id in q.gold or contains_span(" ".join(c.lines), spans) for c in result.citations),
            "citations": len(result.citations),
            "total_ms": result.timings.get("total"), "evidence_ms": result.timings.get("evidence"),
        })
        if progress:
            progress(n, total)
    return summarize_evidence(rows), rows


def summarize_evidence(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    dev = [r for r in rows if r["kind"] == "dev"]
    oos = [r for r in rows if r["kind"] == "oos"]

    def rate(key: str, of: Sequence[dict[str, Any]]) -> float | None:
        return round(sum(float(r[key]) for r in of) / len(of), 4) if of else None

    cited = sum(r["citations"] for r in dev)
    total = [r["total_ms"] for r in rows if r["total_ms"] is not None]
    own = [r["evidence_ms"] for r in rows if r["evidence_ms"] is not None]
    p50 = round(statistics.median(total), 1) if total else None
    return {
        "evidence_recall@1": rate("hit@1", dev), "evidence_recall@3": rate("hit@3", dev),
        "gold_span_rate": rate("gold_span", dev), "token_f1": rate("f1", dev),
        "citation_precision": round(sum(r["citations_correct"] for r in dev) / cited, 4) if cited else None,
        "false_refusal_rate": rate("refused", dev), "out_of_scope_refusal_rate": rate("refused", oos),
        "ttft_p50_ms": p50, "total_p50_ms": p50,
        "evidence_p50_ms": round(statistics.median(own), 1) if own else None,
        "n": len(dev), "n_out_of_scope": len(oos),
    }
