"""Stream drafts or wait for the checked answer? Time to first token against flicker, from `eval answers` results.

    python bench/answers/ttft_flicker.py docs/results/answers/answers_local_100.json [...] --out docs/results/answers/ttft_flicker.md

For every question the LLM answered (its timings hold a first token): streaming drafts (POST /ask's default) shows
text at the first token; waiting (`"stream": "validated"`) shows it when the answer passed its check (the answer's
total time). The cost of waiting is the difference, per question. The cost of streaming is flicker: the share of
answers whose streamed text was taken back, because the check sent the LLM back for a second reply (more than one
draft) or withdrew the reply for a refusal.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from ragfunnel.evaluate.report import header, markdown_table, write_report


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]


def row(path: Path) -> list[object]:
    questions = json.loads(path.read_text())["questions"]
    answered = [q for q in questions if (q.get("timings") or {}).get("llm_first_token")]
    first = [q["timings"]["llm_first_token"] / 1000 for q in answered]
    total = [q["timings"]["total"] / 1000 for q in answered]
    wait = [t - f for f, t in zip(first, total)]
    retried = [q for q in answered if len(q.get("drafts") or []) > 1]
    withdrawn = [q for q in answered if len(q.get("drafts") or []) == 1 and q.get("refused")]
    return [path.name, len(answered), round(statistics.median(first), 1), round(statistics.median(total), 1),
            round(statistics.median(wait), 1), round(pct(wait, 0.9), 1), round(len(retried) / len(answered), 3),
            round(len(withdrawn) / len(answered), 3), round((len(retried) + len(withdrawn)) / len(answered), 3)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="+", type=Path)
    ap.add_argument("--out")
    args = ap.parse_args()
    text = header("Streaming drafts against waiting for the checked answer: time to first text and flicker")
    text += ("From the committed `eval answers` results named (the local LLM, Qwen2.5-Coder-1.5B Q4_K_M on 2 cores); "
             "seconds. `wait` = the checked answer's time minus the first token's, per question.\n\n")
    text += markdown_table(["results", "LLM answers", "first token p50 s", "checked answer p50 s", "wait p50 s",
                            "wait p90 s", "retried", "withdrawn", "flicker (either)"], [row(p) for p in args.results])
    write_report(args.out, text)


if __name__ == "__main__":
    main()
