"""Tune the answerability gate of `ragfunnel ask` (`Answerer(min_similarity=...)`).

The gate refuses without an LLM call when the best dense cosine between the question and any chunk of the top-k
retrieved scenes is below a threshold. Tuned on FriendsQA dev questions that are NOT in the answer evaluation's
seeded sample (`ragfunnel eval answers`, seed 13) against the off-topic questions of
bench/oos_tuning_questions.txt (none of them is in the evaluation's out_of_scope.txt).

    python bench/answer_gate.py [--n 300] [--out docs/results/answers_gate.md]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ragfunnel.config import load_settings
from ragfunnel.evaluate.report import header, markdown_table
from ragfunnel.generate.answer import DEFAULT_MIN_SIMILARITY, best_dense_similarity
from ragfunnel.generate.evaluate import tuning_questions
from ragfunnel.pipeline import Pipeline

HERE = Path(__file__).parent


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
    dev = tuning_questions(settings.friends_dir, args.n, seed=99, eval_limit=args.eval_limit)
    lines = (HERE / "oos_tuning_questions.txt").read_text(encoding="utf-8").splitlines()
    off = [s.strip() for s in lines if s.strip() and not s.startswith("#")]

    def similarity(question: str) -> float:
        return best_dense_similarity(pipeline.search(question, args.mode, k=args.k).candidates[: args.k]) or 0.0

    dev_s = [similarity(q.text) for q in dev]
    off_s = [similarity(q) for q in off]
    rows = []
    for t in (0.30, 0.34, 0.38, 0.40, 0.42, 0.44, 0.46, 0.50, 0.55):
        mark = " (default)" if abs(t - DEFAULT_MIN_SIMILARITY) < 1e-9 else ""
        rows.append([f"{t:.2f}{mark}", sum(s < t for s in dev_s) / len(dev_s), sum(s < t for s in off_s) / len(off_s)])
    text = header("Answerability gate: best dense cosine of the retrieved chunks",
                  "python " + " ".join([sys.argv[0], *sys.argv[1:]]))
    text += (f"{len(dev)} FriendsQA dev questions outside the `ragfunnel eval answers` sample (seed 99) and {len(off)} off-topic "
             f"questions (bench/oos_tuning_questions.txt); mode `{args.mode}`, top {args.k} scenes. A question is refused "
             "before the LLM when the best cosine is below the threshold. The gate alone need not reach the refusal target: "
             "the model's own refusals and the grounding check come after it.\n\n")
    text += markdown_table(["threshold", "dev questions refused by the gate", "off-topic questions refused by the gate"], rows)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
