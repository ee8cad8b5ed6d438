"""Tune the answerability gate of `ragfunnel ask` (generate/gate.py): the similarity threshold and the learned gate.

Both are tuned on FriendsQA dev questions that are NOT in the answer evaluation's seeded sample (`ragfunnel eval
answers`, seed 13) against the off-topic questions of src/ragfunnel/generate/off_topic_training.txt (none of them
is in the evaluation's out_of_scope.txt). The learned gate's rates are cross-validated (5 folds): each question is
scored by a model that did not see it.

    python bench/answers/answer_gate.py [--n 300] [--out docs/results/answers/answers_gate.md]

On the index of $RAGFUNNEL_HOME (the similarity gate's default threshold depends on its vectors).
"""

from __future__ import annotations

import argparse

import numpy as np

from ragfunnel.config import load_settings
from ragfunnel.evaluate.report import header, markdown_table, write_report
from ragfunnel.generate.evaluate import off_topic_training_questions, tuning_questions
from ragfunnel.generate.gate import FEATURES, similarity_threshold
from ragfunnel.pipeline import Pipeline
from ragfunnel.train.gate import DEFAULT_TARGET_REFUSAL, fit_gate, gate_inputs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300, help="dev questions (a seeded sample outside the eval sample)")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--mode", default="fast")
    ap.add_argument("--eval-limit", type=int, default=50, help="size of the eval sample to exclude (its --limit)")
    ap.add_argument("--out")
    args = ap.parse_args()
    settings = load_settings()
    pipeline = Pipeline(settings)
    dev = [q.text for q in tuning_questions(settings.friends_dir, args.n, seed=99, eval_limit=args.eval_limit)]
    off = off_topic_training_questions()
    x = gate_inputs(pipeline, [*dev, *off], args.mode, args.k)
    y = np.array([1] * len(dev) + [0] * len(off))
    sim = x[:, 0]

    rows = []
    default = similarity_threshold(pipeline.store.settings)  # the index's: lower when its lines are read in context
    for t in (0.30, 0.34, 0.36, 0.38, 0.40, 0.42, 0.44, 0.46, 0.50, 0.55, 0.60):
        mark = " (default)" if abs(t - default) < 1e-9 else ""
        rows.append([f"similarity ≥ {t:.2f}{mark}", float((sim[y == 1] < t).mean()), float((sim[y == 0] < t).mean())])
    for target in (0.02, 0.03, 0.05, 0.08, 0.10):
        cv = fit_gate(x, y, target)["cross_validated"]
        mark = " (default)" if abs(target - DEFAULT_TARGET_REFUSAL) < 1e-9 else ""
        rows.append([f"learned, --target-refusal {target:.2f}{mark}", cv["answerable_refused"], cv["off_topic_refused"]])
    model = fit_gate(x, y, DEFAULT_TARGET_REFUSAL)
    text = header("Answerability gate: similarity threshold vs learned gate")
    text += (f"{len(dev)} FriendsQA dev questions outside the `ragfunnel eval answers` sample (seed 99) and {len(off)} "
             f"off-topic questions (src/ragfunnel/generate/off_topic_training.txt: general knowledge, and questions near "
             f"the corpus — first names that are Friends characters, other sitcoms, facts about the show's production); "
             f"mode `{args.mode}`, top {args.k} scenes. A question the gate refuses gets the refusal without an LLM call. "
             "The learned gate's rates are 5-fold cross-validated. The gate alone need not reach the refusal target: the "
             "model's own refusals and the grounding and relevance checks come after it.\n\n")
    text += markdown_table(["gate", "dev questions refused", "off-topic questions refused"], rows)
    text += "\nCoefficients of the learned gate (standardised features; positive = more answerable):\n\n"
    text += markdown_table(["feature", "coefficient"], [[f, round(c, 3)] for f, c in zip(FEATURES, model["coef"])])
    write_report(args.out, text)


if __name__ == "__main__":
    main()
