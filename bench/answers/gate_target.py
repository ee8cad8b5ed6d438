"""How far can the answerability gate be loosened? Its threshold refuses `--target-refusal` (default 0.05) of its
answerable training questions by cross-validated score, but the gate is only the first of the answer step's refusals:
a question it lets through still has to get a grounded, relevant citation from the LLM. This bench measures, on the
gate's own tuning questions (the FriendsQA dev questions its gate.json names — by default 300 outside `eval answers`'
sample, seed 99 — and the 120 off-topic training questions; never the evaluation's questions), what a lower target
changes for the whole system:

1. cross-validated gate scores of every tuning question (5 folds, as `ragfunnel train gate`);
2. the thresholds of each target in `--targets`;
3. every question that the lowest target would let through and the current one refuses (the "movers"), and every
   off-topic question that any of them lets through, is asked with the local LLM (gate off, same Answerer as
   `ragfunnel ask`, mode `--mode`); per question rows go to `--jsonl` (a second run resumes it).

The table then gives, per target, the system's refusals on the tuning questions as far as they change: answerable
questions the gate refuses, movers the checks refuse anyway, off-topic questions answered.

    python bench/answers/gate_target.py [--targets 0.01,0.02,0.03,0.05] [--mode accurate] [--jsonl rows.jsonl] [--out table.md]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from ragfunnel.config import load_settings
from ragfunnel.evaluate.report import header, markdown_table, write_report
from ragfunnel.generate.answer import Answerer
from ragfunnel.generate.evaluate import AnswerCase, gate_questions, off_topic_training_questions, scene_texts, score
from ragfunnel.generate.gate import GATE_FILE, LearnedGate, read_gate_model
from ragfunnel.generate.llm import make_llm
from ragfunnel.pipeline import Pipeline
from ragfunnel.train.gate import DEFAULT_TARGET_REFUSAL, cross_validated_scores, gate_inputs, standardise


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--targets", default="0.01,0.02,0.03,0.05")
    ap.add_argument("--mode", default="accurate", help="retrieval mode of the answers (the gate's features use its own)")
    ap.add_argument("--jsonl", default="gate_target.jsonl")
    ap.add_argument("--out")
    args = ap.parse_args()
    targets = sorted(float(t) for t in args.targets.split(","))

    settings = load_settings()
    pipeline = Pipeline(settings)
    gate = LearnedGate.load(pipeline.store.read_artifact(GATE_FILE) or "{}", pipeline.store, GATE_FILE)
    dev = gate_questions(gate.model, settings.friends_dir)
    if dev is None:
        sys.exit("this gate was trained on questions from a file: the bench needs FriendsQA dev questions with gold answers")
    off = off_topic_training_questions()
    cases = [AnswerCase(q.qid, q.text, "dev", q.gold, q.answers) for q in dev]
    cases += [AnswerCase(f"off_{i:03d}", t, "oos") for i, t in enumerate(off, 1)]
    x = gate_inputs(pipeline, [c.question for c in cases], gate.model.get("mode", "fast"), gate.model.get("k", 5))
    y = np.array([c.kind == "dev" for c in cases], dtype=int)
    cv = cross_validated_scores(standardise(x)[0], y)
    thresholds = {t: float(np.quantile(cv[y == 1], t)) for t in targets}
    low, high = thresholds[targets[0]], thresholds[targets[-1]]
    ask = [i for i, c in enumerate(cases) if cv[i] >= low and (c.kind == "oos" or cv[i] < high)]
    print(f"thresholds {thresholds}; asking the LLM {len(ask)} questions "
          f"({sum(cases[i].kind == 'dev' for i in ask)} answerable)", file=sys.stderr, flush=True)

    path = Path(args.jsonl)
    rows = {}
    if path.is_file():
        rows = {r["id"]: r for r in map(json.loads, path.read_text(encoding="utf-8").splitlines()) if r}
    no_gate = LearnedGate({**gate.model, "threshold": 0.0}, gate.features)
    answerer = Answerer(pipeline, make_llm("local", settings.home), gate=no_gate)

    scene_text = scene_texts(pipeline.store)

    with open(path, "a", encoding="utf-8") as out:
        for n, i in enumerate(ask, 1):
            case = cases[i]
            if case.qid in rows:
                continue
            s = score(case, answerer.ask(case.question, args.mode), scene_text)
            row = {"id": case.qid, "kind": case.kind, "question": case.question, "cv_score": round(float(cv[i]), 4),
                   "refused": s.result.refused, "failed": s.result.failed, "gold_span": s.gold_span,
                   "gold_in_sources": s.gold_in_sources, "answer": s.result.answer, "notes": s.result.notes}
            rows[case.qid] = row
            out.write(json.dumps(row) + "\n")
            out.flush()
            print(f"[{n}/{len(ask)}] {case.kind} {cv[i]:.3f} refused={row['refused']} {case.question!r} -> "
                  f"{row['answer'][:80]!r}", file=sys.stderr, flush=True)

    n_dev, n_off = int(y.sum()), int((1 - y).sum())
    table = []
    for t in targets:
        thr = thresholds[t]
        passed = [i for i, c in enumerate(cases) if cv[i] >= thr]
        gate_refused = sum(1 for i, c in enumerate(cases) if c.kind == "dev" and cv[i] < thr)
        movers = [i for i in passed if cases[i].kind == "dev" and cv[i] < high]
        movers_refused = sum(rows[cases[i].qid]["refused"] for i in movers)
        movers_gold = sum(rows[cases[i].qid]["gold_span"] for i in movers)
        off_passed = [i for i in passed if cases[i].kind == "oos"]
        off_answered = sum(not rows[cases[i].qid]["refused"] and not rows[cases[i].qid]["failed"] for i in off_passed)
        table.append([f"{t:.2f}" + (" (current)" if abs(t - gate.model.get("target_refusal", DEFAULT_TARGET_REFUSAL)) < 1e-9 else ""),
                      round(thr, 3), f"{gate_refused} ({gate_refused / n_dev:.3f})",
                      f"{len(movers)}: {len(movers) - movers_refused} answered, {movers_gold} with a gold span",
                      len(off_passed), f"{off_answered} ({1 - off_answered / n_off:.3f} refused)"])
    text = header("Answerability gate target: what a looser gate changes for the whole answer step (tuning questions)")
    text += (f"Index `{settings.index_location}`, its gate (`{GATE_FILE}`); {n_dev} answerable tuning questions "
             f"(the FriendsQA dev questions the gate was trained on, outside the evaluation's sample) and {n_off} off-topic training questions, scored "
             f"5-fold cross-validated. \"Movers\": answerable questions this target lets through that the highest target "
             f"({targets[-1]:.2f}) refuses, asked with the local LLM in mode `{args.mode}` (gate off). "
             "Off-topic questions the gate lets through were all asked.\n\n")
    text += markdown_table(["target refusal", "threshold", "answerable refused by the gate", "movers (vs the highest target)",
                            "off-topic through the gate", "off-topic answered (system refusal)"], table)
    write_report(args.out, text)


if __name__ == "__main__":
    main()
