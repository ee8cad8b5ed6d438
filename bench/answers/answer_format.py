"""Compare answer formats of the local LLM on tuning questions: answer then quote (the default) vs quote first.

The quote-first reply copies its supporting line before it answers, so the 1.5B model writes the answer with the
line in front of it. Runs on FriendsQA dev questions outside the answer evaluation's sample (`tuning_questions`,
seed 21) and the first 30 off-topic training questions, through the same Answerer as `ragfunnel ask` (learned
gate, checks, retry). Every arm answers the same questions; per-question rows go to a JSONL file (a second run
resumes it), the table to --out. A dev question takes 40-60 s per arm on 2 cores (twice that with a retry); off-topic ones
the gate refuses take milliseconds.

    python bench/answers/answer_format.py [--dev 30] [--arms answer_first,quote_first] [--jsonl runs.jsonl] [--out table.md]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ragfunnel.config import load_settings
from ragfunnel.evaluate.report import header, markdown_table, write_report
from ragfunnel.generate.answer import Answerer, AnswerSettings
from ragfunnel.generate.evaluate import AnswerCase, off_topic_training_questions, scene_texts, score, tuning_questions
from ragfunnel.generate.llm import make_llm
from ragfunnel.pipeline import Pipeline
from answer_variants import QuoteFirstAnswerer  # bench/answers/, beside this script

ARMS: dict[str, tuple[type[Answerer], AnswerSettings]] = {
    "answer_first": (Answerer, AnswerSettings()),
    "quote_first": (QuoteFirstAnswerer, AnswerSettings()),
    # the default reply format over 5 shorter excerpts in the same 1,200 tokens
    "five_sources": (Answerer, AnswerSettings(max_sources=5)),
}


def run(arms: list[str], n_dev: int, path: Path, mode: str) -> None:
    settings = load_settings()
    pipeline = Pipeline(settings)
    dev = tuning_questions(settings.friends_dir, n_dev, seed=21)
    cases = [AnswerCase(q.qid, q.text, "dev", q.gold, q.answers) for q in dev]
    cases += [AnswerCase(f"off_{i:02d}", t, "oos") for i, t in enumerate(off_topic_training_questions()[:30], 1)]

    scene_text = scene_texts(pipeline.store)

    done = set()
    if path.is_file():  # resume: questions an arm already answered in this file are not asked again
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        done = {(r["arm"], r["id"]) for r in rows}
    with open(path, "a", encoding="utf-8") as out:
        # one model instance per arm: llama.cpp reuses the cached system prompt only while consecutive prompts share it
        answerers = {}
        for arm in arms:
            variant, arm_settings = ARMS[arm]
            answerers[arm] = variant(pipeline, make_llm("local", settings.home), settings=arm_settings)
        for case in cases:  # arms interleaved, so a run cut short still compares them on the same questions
            for arm, answerer in answerers.items():
                if (arm, case.qid) in done:
                    continue
                s = score(case, answerer.ask(case.question, mode), scene_text)
                r = s.result
                row = {"arm": arm, "mode": mode, "id": case.qid, "kind": case.kind, "question": case.question,
                       "refused": r.refused, "failed": r.failed, "gold_span": s.gold_span,
                       "citations": len(r.citations), "citations_correct": s.citations_correct,
                       "gold_in_sources": s.gold_in_sources, "answer": r.answer, "drafts": r.drafts,
                       "ttft_ms": r.timings.get("llm_first_token")}
                out.write(json.dumps(row) + "\n")
                out.flush()
                print(arm, case.kind, "refused" if r.refused else "answered", case.question, "|", r.answer[:80], flush=True)


def table(path: Path) -> list[list[object]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    out = []
    for arm in dict.fromkeys(r["arm"] for r in rows):
        dev = [r for r in rows if r["arm"] == arm and r["kind"] == "dev" and not r["failed"]]
        oos = [r for r in rows if r["arm"] == arm and r["kind"] == "oos" and not r["failed"]]
        cited = sum(r["citations"] for r in dev)
        with_gold = [r for r in dev if r["gold_in_sources"]]
        out.append([arm, len(dev), round(sum(r["gold_span"] for r in dev) / len(dev), 3),
                    round(sum(r["gold_span"] for r in with_gold) / max(len(with_gold), 1), 3),
                    round(sum(r["citations_correct"] for r in dev) / cited, 3) if cited else None,
                    round(sum(r["refused"] for r in dev) / len(dev), 3),
                    round(sum(r["refused"] for r in oos) / len(oos), 3) if oos else None])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dev", type=int, default=30)
    ap.add_argument("--arms", default="answer_first,quote_first")
    ap.add_argument("--mode", default="fast")
    ap.add_argument("--jsonl", type=Path, default=Path("answer_format.jsonl"))
    ap.add_argument("--from-jsonl", action="store_true", help="only write the table from an earlier --jsonl")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if not args.from_jsonl:
        run(args.arms.split(","), args.dev, args.jsonl, args.mode)
    doc = header("Answer format of the local LLM: answer then quote vs quote first (tuning questions)")
    doc += markdown_table(["arm", "dev questions", "gold span", "gold span when the gold scene is a source",
                           "citation precision", "false refusals", "off-topic refused"], table(args.jsonl))
    write_report(args.out, doc)


if __name__ == "__main__":
    main()
