"""Tune the relevance check of `ragfunnel ask` (`AnswerSettings(min_quote_similarity=...)`) with the real local model.

Runs the local LLM with the check off on the first 30 off-topic questions of
src/ragfunnel/generate/off_topic_training.txt (the ones that existed when it was run) and on
FriendsQA dev questions outside the answer evaluation's sample (seed 7), and records, for every answer that
passed the other checks, the cosine between the question and the lines its citation quotes. A threshold is
chosen between the two groups. About 15 minutes on 2 cores for 30 + 30 questions.

    python bench/answers/answer_quote_check.py [--dev 30] [--jsonl runs.jsonl] [--out docs/results/answers/answers_quote_check.md]
    python bench/answers/answer_quote_check.py --from-jsonl runs.jsonl --out ...   # table only, from an earlier run
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ragfunnel.config import load_settings
from ragfunnel.embedding import shared_encoder
from ragfunnel.evaluate.report import header, markdown_table, write_report
from ragfunnel.generate.answer import Answerer, AnswerSettings
from ragfunnel.generate.evaluate import contains_span, off_topic_training_questions, tuning_questions
from ragfunnel.generate.gate import DEFAULT_MIN_SIMILARITY, SimilarityGate
from ragfunnel.generate.llm import make_llm
from ragfunnel.pipeline import Pipeline


def run(n_dev: int, path: Path) -> None:
    settings = load_settings()
    pipeline = Pipeline(settings)
    # the similarity gate it was tuned behind (the learned gate came later)
    answerer = Answerer(pipeline, make_llm("local", settings.home), settings=AnswerSettings(min_quote_similarity=None),
                        gate=SimilarityGate(DEFAULT_MIN_SIMILARITY))
    encoder = shared_encoder(pipeline.store.settings.encoder, pipeline.store.settings.max_length)
    dev = tuning_questions(settings.friends_dir, n_dev, seed=7)
    off = off_topic_training_questions()[:30]
    with open(path, "w", encoding="utf-8") as out:
        for kind, items in (("oos", [(q, ()) for q in off]), ("dev", [(q.text, q.answers) for q in dev])):
            for question, answers in items:
                r = answerer.ask(question)
                row = {"kind": kind, "q": question, "refused": r.refused, "answer": r.answer,
                       "gold_span": bool(answers) and contains_span(r.answer, answers),
                       "gate": any("refused without asking" in n for n in r.notes)}
                if r.citations:
                    v = encoder.encode([question, " ".join(r.citations[0].lines)])
                    row["cos_q_lines"], row["lines"] = float(v[0] @ v[1]), " ".join(r.citations[0].lines)
                out.write(json.dumps(row) + "\n")
                out.flush()
                print(kind, "refused" if r.refused else f"answered ({row.get('cos_q_lines', 0):.2f})", question, flush=True)


def table(path: Path) -> str:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    answered = {k: sorted(r["cos_q_lines"] for r in rows if r["kind"] == k and "cos_q_lines" in r) for k in ("dev", "oos")}
    total = {k: sum(r["kind"] == k for r in rows) for k in ("dev", "oos")}
    right = sorted(r["cos_q_lines"] for r in rows if r["kind"] == "dev" and r.get("gold_span") and "cos_q_lines" in r)
    out = []
    for t in (0.05, 0.10, 0.12, 0.13, 0.15, 0.20, 0.25, 0.30):
        out.append([f"{t:.2f}", f"{sum(c < t for c in answered['dev'])} / {len(answered['dev'])}",
                    f"{sum(c < t for c in right)} / {len(right)}", f"{sum(c < t for c in answered['oos'])} / {len(answered['oos'])}"])
    text = (f"{total['oos']} off-topic tuning questions and {total['dev']} dev questions outside the eval sample, answered by "
            f"the local model with the relevance check off. Answers that passed the gate, the citation and the grounding "
            f"checks: dev {len(answered['dev'])}, off-topic {len(answered['oos'])}. Cosines (question vs cited lines): "
            f"dev {', '.join(f'{c:.2f}' for c in answered['dev'])}; off-topic {', '.join(f'{c:.2f}' for c in answered['oos'])}.\n\n")
    return text + markdown_table(["threshold", "dev answers it would refuse", "of them with a gold span", "off-topic answers it would refuse"], out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dev", type=int, default=30)
    ap.add_argument("--jsonl", default="answer_quote_check.jsonl")
    ap.add_argument("--from-jsonl")
    ap.add_argument("--out")
    args = ap.parse_args()
    path = Path(args.from_jsonl or args.jsonl)
    if not args.from_jsonl:
        run(args.dev, path)
    text = header("Relevance check of the cited lines (local model)")
    text += table(path)
    write_report(args.out, text)


if __name__ == "__main__":
    main()
