"""Replay recorded LLM replies through the current answer checks: what a change to the checks does, without the LLM.

The local model answers a dev question in 15-60 s on 2 cores, but its replies are deterministic (greedy decoding)
and every evaluation records them (`drafts`). This feeds a run's drafts back, in order, through the same Answerer
(retrieval, prompt, gate, citation checks, retry) as `ragfunnel eval answers`, and scores both the recorded and the
replayed outcome. A question whose replay needs a reply that was not recorded (the checks now retry where they did
not) is counted as "not replayable" and keeps its recorded outcome out of both columns.

The index and mode must be those of the recorded run, or the prompts (and so the replies) would differ.

    python bench/answers/answer_replay.py RUN.json|RUN.jsonl [--index DIR] [--mode fast] [--arm answer_first] [--repair-citations]
        [--min-quote-similarity 0.1|off]
        [--out table.md]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path

from ragfunnel.config import load_settings
from ragfunnel.corpus.friends_questions import load_friends_set
from ragfunnel.evaluate.report import header, markdown_table, write_report
from ragfunnel.generate.answer import Answerer, AnswerSettings
from ragfunnel.generate.evaluate import AnswerCase, scene_texts, score, summarize
from ragfunnel.generate.prompt import parse_user_message
from ragfunnel.pipeline import Pipeline
from answer_variants import RepairingAnswerer  # bench/answers/, beside this script


class ReplayLLM:
    """Replies with the recorded drafts of the question in the prompt, in order; raises when they run out."""

    name = "replay"

    def __init__(self, drafts: dict[str, list[str]]):
        self.drafts = drafts
        self.used: dict[str, int] = {}

    def stream(self, system: str, user: str, max_tokens: int) -> Iterator[str]:
        question = " ".join(parse_user_message(user)[0].split())
        i = self.used.get(question, 0)
        recorded = self.drafts.get(question, [])
        if i >= len(recorded):
            raise LookupError("no recorded reply left for this question")
        self.used[question] = i + 1
        yield recorded[i]


def load_rows(path: Path, arm: str | None) -> list[dict]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        return [r for r in rows if arm is None or r.get("arm") == arm]
    return json.loads(text)["questions"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path, help="an `eval answers` JSON or a bench JSONL with drafts")
    ap.add_argument("--index", help="the index the run used (default: the configured one)")
    ap.add_argument("--mode", default="fast")
    ap.add_argument("--arm", help="for a JSONL of several arms: the rows of this arm")
    ap.add_argument("--repair-citations", action="store_true",
                    help="replay with the citation repair (answer_variants.RepairingAnswerer)")
    ap.add_argument("--min-quote-similarity", help="replay with this relevance threshold of the cited lines ('off': none)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()


    settings = load_settings(index=args.index) if args.index else load_settings()
    pipeline = Pipeline(settings)
    dev = {q.qid: q for q in load_friends_set("dev", settings.friends_dir)}
    rows = load_rows(args.run, args.arm)
    llm = ReplayLLM({" ".join(r["question"].split()): r["drafts"] for r in rows})
    relevance = {}
    if args.min_quote_similarity is not None:
        off = args.min_quote_similarity.lower() in ("off", "none")
        relevance = {"min_quote_similarity": None if off else float(args.min_quote_similarity)}
    variant = RepairingAnswerer if args.repair_citations else Answerer
    answerer = variant(pipeline, llm, settings=AnswerSettings(**relevance))

    scene_text = scene_texts(pipeline.store)

    recorded, replayed, changed, skipped = [], [], [], 0
    for r in rows:
        q = dev.get(r["id"])
        case = (AnswerCase(r["id"], r["question"], "dev", tuple(q.gold), tuple(q.answers)) if r["kind"] == "dev"
                else AnswerCase(r["id"], r["question"], "oos"))
        new = answerer.ask(r["question"], args.mode)
        if new.failed and any("no recorded reply" in n for n in new.notes):
            skipped += 1
            continue
        s = score(case, new, scene_text)
        recorded.append(r)
        replayed.append(s)
        old_cited = _cited(r)
        if (r["refused"], r["answer"], old_cited) != (new.refused, new.answer, len(new.citations)):
            changed.append([case.kind, case.question, _outcome(r["refused"], r["answer"], r["gold_span"]),
                            _outcome(new.refused, new.answer, s.gold_span, new.citations)])

    before, after = _rates(recorded), summarize(replayed)
    keys = [("gold_span_rate", "gold span (dev)"), ("citation_precision", "citation precision (dev)"),
            ("citations", "citations (dev)"), ("false_refusal_rate", "false refusals (dev)"),
            ("oos_refusal_rate", "out-of-scope refused")]
    doc = header("Recorded replies replayed through the current answer checks")
    doc += (f"Run: `{args.run}`; {len(recorded)} questions replayed, {skipped} not replayable (they now need a reply "
            "that was not recorded).\n\n")
    doc += markdown_table(["metric", "recorded", "replayed"],
                          [[label, _fmt(before[k]), _fmt(after[k])] for k, label in keys])
    doc += "\n\nQuestions whose outcome changed:\n\n"
    doc += markdown_table(["kind", "question", "recorded", "replayed"], changed) if changed else "none\n"
    write_report(args.out, doc)


def _cited(row: dict) -> int:
    return len(row["citations"]) if isinstance(row["citations"], list) else int(row["citations"])


def _rates(rows: list[dict]) -> dict:
    """The recorded run's rates from its own per-question columns (a bench JSONL keeps counts, not citations)."""
    dev = [r for r in rows if r["kind"] == "dev" and not r["failed"]]
    oos = [r for r in rows if r["kind"] == "oos" and not r["failed"]]
    cited = sum(_cited(r) for r in dev)
    return {"gold_span_rate": sum(r["gold_span"] for r in dev) / len(dev) if dev else None,
            "citation_precision": sum(r["citations_correct"] for r in dev) / cited if cited else None,
            "citations": cited,
            "false_refusal_rate": sum(r["refused"] for r in dev) / len(dev) if dev else None,
            "oos_refusal_rate": sum(r["refused"] for r in oos) / len(oos) if oos else None}


def _outcome(refused: bool, answer: str, gold_span: bool, citations=()) -> str:
    if refused:
        return "refused"
    cited = " [" + ", ".join(f"{c.label}: {c.quote[:60]}" for c in citations) + "]" if citations else ""
    return f"{answer[:80]}{cited}" + (" (gold span)" if gold_span else "")


def _fmt(value) -> str:
    return "n/a" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


if __name__ == "__main__":
    main()
