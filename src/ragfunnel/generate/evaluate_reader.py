"""Measure answers the way QA is measured (`eval answers --reader extractive|evidence|llm`, `--oracle`).

Questions: any file in the schema of friends_questions.jsonl (`--questions`), else the hold-out of the training split
(FriendsQA dev minus the 800 sample questions and their paraphrases, split by gold scene: no trained part of the
answer step learnt from it), plus the out-of-scope questions of `out_of_scope.txt`.

Per answerable question (a refusal scores 0 everywhere):
- `exact_match`: SQuAD exact match of the answer against any gold answer (normalised: case, punctuation, articles);
- `token_f1`: SQuAD token F1 against the best gold answer;
- `gold_span`: the answer contains a gold answer (`contains_span`);
- `gold_span_cited`: the answer **or its cited line** contains a gold answer (a reader that answers "Rachel" and cites
  the line that says why gets the credit the evidence reader gets for its lines);
- `supported` (answers that are not refusals): the first cited line is a gold answer utterance, or contains a gold
  answer;
- `false_refusal_rate`; `out_of_scope_refusal_rate` over the out-of-scope questions;
- latency: `reader_p50_ms` (the reader alone, after retrieval), `total_p50_ms` (question to answer).

`--oracle` reads the gold scene only (`oracle_reading`: no retrieval, no gate), separating the reader from retrieval.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any

from ragfunnel.generate.evaluate import contains_span, exact_match, token_f1
from ragfunnel.questions import Question, answer_unit_ids


def score_answer(q: Question, answer: str, refused: bool, cited_units: Sequence[str], cited_lines: Sequence[str],
                 short: str | None = None) -> dict[str, Any]:
    """The per-question scores of one answer (see the module doc); `short`: the span the answer rests on, which exact
    match and token F1 score when given (an LLM's phrasing of it is longer than any gold answer)."""
    spans = [a for a in q.answers if a and a.strip()]
    if refused:
        return {"exact_match": False, "token_f1": 0.0, "gold_span": False, "gold_span_cited": False, "supported": None}
    gold_units = answer_unit_ids(q)
    first_line = cited_lines[0] if cited_lines else ""
    supported = bool(cited_units) and (cited_units[0] in gold_units or contains_span(first_line, spans))
    scored = short or answer
    return {
        "exact_match": exact_match(scored, spans), "token_f1": round(token_f1(scored, spans), 4),
        "gold_span": contains_span(answer, spans),
        "gold_span_cited": contains_span(answer, spans) or contains_span(first_line, spans),
        "supported": supported,
    }


def run_reader(answerer: Any, questions: Sequence[Question], oos: Sequence[str], mode: str, k: int = 5,
               progress: Callable[[int, int], None] | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(summary, one record per question) for the answerer's reader over the questions and out-of-scope questions."""
    rows: list[dict[str, Any]] = []
    cases = [(q, "dev") for q in questions] + [(Question(f"oos_{i:02d}", text, ()), "oos") for i, text in enumerate(oos, 1)]
    for n, (q, kind) in enumerate(cases, 1):
        result = answerer.ask(q.text, mode, k)
        units = [c.unit_ids[0] for c in result.citations if c.unit_ids]
        lines = [c.lines[0] for c in result.citations if c.lines]
        row = {"id": q.qid, "kind": kind, "question": q.text, "refused": result.refused, "answer": result.answer,
               "answers": [a for a in q.answers if a], "cited": units[:1], "gold_units": sorted(answer_unit_ids(q)),
               "gold_in_retrieved": any(s.doc_id in q.gold for s in result.scenes) if q.gold else None,
               "reader_ms": result.timings.get("reader", result.timings.get("evidence")),
               "total_ms": result.timings.get("total"),
               "candidates": [c.text for c in (result.candidates or [])][:3], "short_answer": result.short_answer,
               "first_token_ms": result.timings.get("llm_first_token"), "reader_used": result.reader}
        row.update(score_answer(q, result.answer, result.refused, units, lines, result.short_answer))
        if result.drafts and not result.refused:
            row["phrased"] = result.reader == "llm"
        rows.append(row)
        if progress:
            progress(n, len(cases))
    return summarize(rows), rows


def oracle_reading(reader: Any, store: Any, questions: Sequence[Question],
                   progress: Callable[[int, int], None] | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The extractive reader over each question's gold scene alone (all of it, as consecutive windows)."""
    from ragfunnel.generate.reader import scene_windows

    rows = []
    for n, q in enumerate(questions, 1):
        doc = store.document(q.gold[0]) if q.gold else None
        if doc is None:
            continue
        windows = scene_windows(doc, reader.planner.counter.lengths(doc), reader.planner.budget)
        reading = reader.read_windows(q.text, windows)
        best = reading.best
        answer = best.text if best is not None else ""
        span = best.spans[0] if best is not None else None
        units = [doc.units[span.unit].unit_id] if span else []
        lines = [doc.units[span.unit].render()] if span else []
        row = {"id": q.qid, "kind": "dev", "question": q.text, "refused": best is None, "answer": answer,
               "answers": [a for a in q.answers if a], "cited": units, "gold_units": sorted(answer_unit_ids(q)),
               "gold_in_retrieved": True, "reader_ms": reading.timings.get("spans"), "total_ms": reading.timings.get("spans"),
               "candidates": [c.text for c in reading.candidates[:3]]}
        row.update(score_answer(q, answer, best is None, units, lines))
        rows.append(row)
        if progress:
            progress(n, len(questions))
    return summarize(rows), rows


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    dev = [r for r in rows if r["kind"] == "dev"]
    oos = [r for r in rows if r["kind"] == "oos"]
    answered = [r for r in dev if not r["refused"]]

    def rate(key: str, of: Sequence[dict[str, Any]]) -> float | None:
        return round(sum(float(r[key]) for r in of) / len(of), 4) if of else None

    def p50(key: str) -> float | None:
        values = [r[key] for r in rows if r.get(key) is not None]
        return round(statistics.median(values), 1) if values else None

    return {
        "exact_match": rate("exact_match", dev), "token_f1": rate("token_f1", dev), "gold_span_rate": rate("gold_span", dev),
        "gold_span_cited_rate": rate("gold_span_cited", dev), "supported_rate": rate("supported", answered),
        "false_refusal_rate": rate("refused", dev), "out_of_scope_refusal_rate": rate("refused", oos),
        "gold_in_retrieved_rate": rate("gold_in_retrieved", [r for r in dev if r.get("gold_in_retrieved") is not None]),
        "reader_p50_ms": p50("reader_ms"), "first_token_p50_ms": p50("first_token_ms"), "total_p50_ms": p50("total_ms"),
        "phrased_rate": rate("phrased", answered) if any("phrased" in r for r in answered) else None,
        "n": len(dev), "n_answered": len(answered), "n_out_of_scope": len(oos),
    }


METRICS = ("exact_match", "token_f1", "gold_span_rate", "gold_span_cited_rate", "supported_rate", "false_refusal_rate",
           "out_of_scope_refusal_rate", "gold_in_retrieved_rate", "phrased_rate", "reader_p50_ms", "first_token_p50_ms",
           "total_p50_ms", "n", "n_answered", "n_out_of_scope")
