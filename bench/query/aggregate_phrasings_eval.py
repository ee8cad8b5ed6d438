"""List questions asked as a user asks them (bench/query/aggregate_phrasings.jsonl: 51 targets, each in three
phrasings; gold from bench/query/aggregate_gold.py's rules), scored on what `ragfunnel search/ask --json` returns:
the router's route, then the items of the answer (an exhaustive list, or the ranked list it falls back to), against
the plain top-20 `hybrid` list of scenes on the same question.

Item F1 is per question over the items the gold rule lists (scenes, or episodes: a listed scene stands for its
episode), then averaged; a question routed to lookup gets no list (F1 0 unless its gold is empty). Phrasings 1 and 2
were development material from the start; phrasing 3, `fresh` to `fresh49` (aggregate_fresh*.jsonl, 60 questions
each, written by sessions that had not read the parser) became development material from 2026-11-28 on, when their
failures were read, in that order, each after it was measured once (its unseen figure is in its own table,
aggregate_freshN_<commit>.md). None is unseen now: the next set written the same way is measured once, on its own,
before it is read.

    python bench/query/aggregate_phrasings_eval.py [--sets phrasings,dev,heldout,fresh,...,fresh49] [--index DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from ragfunnel.config import load_settings
from ragfunnel.evaluate.report import header, markdown_table, write_report
from ragfunnel.pipeline import Pipeline

HERE = Path(__file__).resolve().parent
SETS = {"phrasings": "aggregate_phrasings.jsonl", "dev": "aggregate_dev.jsonl", "heldout": "aggregate_heldout.jsonl",
        "fresh": "aggregate_fresh.jsonl", "fresh2": "aggregate_fresh2.jsonl", "fresh3": "aggregate_fresh3.jsonl",
        "fresh4": "aggregate_fresh4.jsonl", "fresh5": "aggregate_fresh5.jsonl", "fresh6": "aggregate_fresh6.jsonl",
        "fresh7": "aggregate_fresh7.jsonl", "fresh8": "aggregate_fresh8.jsonl",
        "fresh9": "aggregate_fresh9.jsonl", "fresh10": "aggregate_fresh10.jsonl", "fresh11": "aggregate_fresh11.jsonl",
        "fresh12": "aggregate_fresh12.jsonl", "fresh13": "aggregate_fresh13.jsonl",
        "fresh14": "aggregate_fresh14.jsonl", "fresh15": "aggregate_fresh15.jsonl",
        "fresh16": "aggregate_fresh16.jsonl", "fresh17": "aggregate_fresh17.jsonl",
        "fresh18": "aggregate_fresh18.jsonl", "fresh19": "aggregate_fresh19.jsonl",
        "fresh20": "aggregate_fresh20.jsonl", "fresh21": "aggregate_fresh21.jsonl", "fresh22": "aggregate_fresh22.jsonl",
        "fresh23": "aggregate_fresh23.jsonl", "fresh24": "aggregate_fresh24.jsonl",
        "fresh25": "aggregate_fresh25.jsonl", "fresh26": "aggregate_fresh26.jsonl", "fresh27": "aggregate_fresh27.jsonl",
        "fresh28": "aggregate_fresh28.jsonl", "fresh29": "aggregate_fresh29.jsonl",
        "fresh30": "aggregate_fresh30.jsonl", "fresh31": "aggregate_fresh31.jsonl",
        "fresh32": "aggregate_fresh32.jsonl", "fresh33": "aggregate_fresh33.jsonl",
        "fresh34": "aggregate_fresh34.jsonl", "fresh35": "aggregate_fresh35.jsonl",
        "fresh36": "aggregate_fresh36.jsonl", "fresh37": "aggregate_fresh37.jsonl",
        "fresh38": "aggregate_fresh38.jsonl", "fresh39": "aggregate_fresh39.jsonl",
        "fresh40": "aggregate_fresh40.jsonl", "fresh41": "aggregate_fresh41.jsonl",
        "fresh42": "aggregate_fresh42.jsonl", "fresh43": "aggregate_fresh43.jsonl",
        "fresh44": "aggregate_fresh44.jsonl", "fresh45": "aggregate_fresh45.jsonl",
        "fresh46": "aggregate_fresh46.jsonl", "fresh47": "aggregate_fresh47.jsonl",
        "fresh48": "aggregate_fresh48.jsonl", "fresh49": "aggregate_fresh49.jsonl"}
BASELINE_K = 20


def prf(found: set[str], gold: set[str]) -> tuple[float, float, float]:
    if not found and not gold:
        return 1.0, 1.0, 1.0
    tp = len(found & gold)
    p = tp / len(found) if found else 0.0
    r = tp / len(gold) if gold else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def as_items(scenes: set[str], group: str) -> set[str]:
    return {s[:7] for s in scenes} if group == "episode" else scenes


def score(pipeline: Pipeline, q: dict, g: dict) -> dict:
    group = q["rule"].get("group", "scene")
    gold_items = set(g["episodes"] if group == "episode" else g["scenes"])
    t = time.perf_counter()
    result = pipeline.search(q["question"], k=BASELINE_K, route="auto")
    ms = (time.perf_counter() - t) * 1000
    agg = result.aggregate
    scenes = {m.doc_id for item in agg.items for m in item.matches} if agg is not None else set()
    p, r, f1 = prf(as_items(scenes, group), gold_items)
    baseline = pipeline.search(q["question"], "hybrid", k=BASELINE_K)
    _, _, base_f1 = prf(as_items({c.doc_id for c in baseline.candidates}, group), gold_items)
    exhaustive = agg is not None and getattr(agg, "exhaustive", True)
    return {"id": q["id"], "phrasing": q.get("phrasing"), "question": q["question"], "route": result.route.name,
            "read as": agg.query.describe() if agg is not None else "",
            "answer": "none (lookup)" if agg is None else ("exhaustive" if exhaustive else "ranked"),
            "empty": agg is not None and not agg.items, "p": p, "r": r, "f1": f1, "base_f1": base_f1,
            "found": len(as_items(scenes, group)), "gold": len(gold_items),
            "count": agg.count if agg is not None else None, "gold_count": g["count"], "ms": ms}


def summary(name: str, rows: list[dict]) -> list:
    counts = [r for r in rows if r["gold_count"] is not None]
    below = sum(r["f1"] < r["base_f1"] - 1e-9 for r in rows)
    return [name, len(rows), sum(r["route"] == "aggregate" for r in rows),
            sum(r["answer"] == "exhaustive" for r in rows), sum(r["answer"] == "ranked" for r in rows),
            sum(r["empty"] for r in rows), statistics.mean(r["p"] for r in rows), statistics.mean(r["r"] for r in rows),
            statistics.mean(r["f1"] for r in rows), statistics.mean(r["base_f1"] for r in rows), below,
            f"{sum(r['count'] == r['gold_count'] for r in counts)}/{len(counts)}",
            f"{statistics.median(r['ms'] for r in rows):.0f}"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", default="phrasings,dev,heldout", help=f"comma-separated: {', '.join(SETS)}")
    ap.add_argument("--index", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    settings = load_settings(None, index=args.index)
    pipeline = Pipeline(settings)
    load = Path("/proc/loadavg").read_text().split()[0]
    table, per, total = [], [], 0
    t0 = time.perf_counter()
    for name in args.sets.split(","):
        path = HERE / SETS[name]
        questions = [json.loads(s) for s in path.read_text().splitlines() if s.strip()]
        gold = {g["id"]: g for g in map(json.loads, path.with_name(path.stem + "_gold.jsonl").read_text().splitlines())}
        rows = [score(pipeline, q, gold[q["id"]]) for q in questions]
        total += len(rows)
        table.append(summary(f"{name} (all)" if name == "phrasings" else name, rows))
        phrasings = sorted({r["phrasing"] for r in rows if r["phrasing"] is not None})
        if len(phrasings) > 1:  # each target asked in several phrasings: each phrasing on its own
            for i in phrasings:
                table.append(summary(f"{name}, phrasing {i}", [r for r in rows if r["phrasing"] == i]))
        if name.startswith("fresh"):
            for kind in dict.fromkeys(q["kind"] for q in questions):
                table.append(summary(f"{name}, {kind}", [r for r, q in zip(rows, questions) if q["kind"] == kind]))
        per += [[name, r["id"], r["question"], r["route"], r["answer"], r["read as"], f"{r['found']}/{r['gold']}",
                 r["f1"], r["base_f1"], "" if r["gold_count"] is None else f"{r['count']}/{r['gold_count']}"] for r in rows]
    info = pipeline.store.info()
    cols = ["set", "n", "routed aggregate", "exhaustive lists", "ranked fallbacks", "empty answers", "item P", "item R",
            "item F1", "hybrid top-20 item F1", "questions below hybrid", "counts exact", "ms p50"]
    text = header("List questions in a user's words: the routed answer against a plain hybrid top 20") + (
        f"Index: {settings.index_dir} (fingerprint {info.fingerprint}). Load average at start: {load}. "
        f"{total} questions in "
        f"{time.perf_counter() - t0:.0f} s. Each question goes through `Pipeline.search(question, k={BASELINE_K}, "
        "route='auto')`, what `ragfunnel search/ask --json` runs: a question routed to the aggregation path is scored "
        "on its items (an exhaustive list, or the ranked list it falls back to when nothing matches exactly); one "
        f"routed to lookup has no list and scores 0. Baseline: the scenes of plain `hybrid` top {BASELINE_K} (no "
        "routing). Item P / R / F1 per question over the items the gold rule lists (scenes, or episodes), averaged; "
        "gold from bench/query/aggregate_gold.py (regular expressions and speaker names over the corpus file). "
        "Phrasings 1 and 2 of aggregate_phrasings.jsonl were looked at while building; phrasing 3 was only measured "
        "until 2026-11-28, when its failures were read, then those of `fresh` to `fresh49` (aggregate_fresh*.jsonl: 60 "
        "new questions each, written by sessions that had not read the parser; each measured once before its failures "
        "were read; each one's unseen figure is in its own table, aggregate_freshN_<commit>.md). Rows "
        "`SET, KIND` split a fresh set by what is asked (spoken by, mention, a speaker says, count, other)."
        "\n\n"
        + markdown_table(cols, table) + "\n## Per question\n\n"
        + markdown_table(["set", "id", "question", "route", "answer", "read as", "items found/gold", "item F1",
                          "hybrid F1", "count/gold"], per)
    )
    write_report(args.out, text)


if __name__ == "__main__":
    main()
