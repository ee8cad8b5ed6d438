"""Does the answerability gate of a tuned index refuse more of the questions its bi-encoder never saw? Its answerable
training questions are mostly ones the bi-encoder learnt from, whose dense evidence is inflated (the leak that made
LambdaMART over-trust it, docs/reranker.md). Compares the gate's refusal rate on three groups of dev questions, none
from the answer evaluation's sample.

    python bench/answers/gate_leak.py [--out docs/results/answers/answers_gate_leak.md]   # the configured index and its gate.json
"""

from __future__ import annotations

import argparse

from ragfunnel.config import load_settings
from ragfunnel.corpus.friends_questions import training_split
from ragfunnel.evaluate.report import header, markdown_table, write_report
from ragfunnel.generate.evaluate import gate_question_ids
from ragfunnel.generate.gate import GATE_FILE, LearnedGate, read_gate_model
from ragfunnel.pipeline import Pipeline
from ragfunnel.train.gate import gate_inputs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="write the table here too")
    args = ap.parse_args()
    settings = load_settings()
    pipeline = Pipeline(settings)
    gate = LearnedGate.load(pipeline.store.read_artifact(GATE_FILE) or "{}", pipeline.store, GATE_FILE)
    split = training_split(settings.friends_dir)
    tuned = gate_question_ids(read_gate_model(pipeline.store) or {}, settings.friends_dir) or set()
    groups = {
        "the gate's own answerable questions (those in the split)": [q for q in split.train + split.holdout if q.qid in tuned],
        "other training questions of the bi-encoder": [q for q in split.train if q.qid not in tuned],
        "hold-out questions (the bi-encoder never saw them)": [q for q in split.holdout if q.qid not in tuned],
    }
    rows = []
    for name, qs in groups.items():
        x = gate_inputs(pipeline, [q.text for q in qs], gate.model.get("mode", "fast"), gate.model.get("k", 5))
        refused = gate.probability(x) < gate.model["threshold"]
        rows.append([name, len(qs), float(refused.mean()), float(x[:, 0].mean())])
    doc = header("The answerability gate on questions the tuned bi-encoder never saw")
    doc += f"Gate {GATE_FILE} of the index, threshold {gate.model['threshold']:.3f}.\n\n"
    doc += markdown_table(["questions", "n", "refused by the gate", "mean best dense similarity"], rows)
    write_report(args.out, doc)


if __name__ == "__main__":
    main()
