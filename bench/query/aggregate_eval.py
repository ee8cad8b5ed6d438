"""Aggregation questions (bench/query/aggregate_dev.jsonl, gold from bench/query/aggregate_gold.py's rules): the
router's route, then the exhaustive path; item precision / recall / F1 against the gold scenes and episodes (the
scenes and episodes of the lines found, whatever the question lists), and whether the count is exact.
`--dense` adds lines by vector similarity to the phrase (each threshold given), to measure whether paraphrase
matches help.

    python bench/query/aggregate_eval.py [--index DIR] [--dense 0.6,0.7] [--out docs/results/query/aggregate.md]
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
from ragfunnel.types import Trace

HERE = Path(__file__).resolve().parent


def prf(found: set[str], gold: set[str]) -> tuple[float, float, float]:
    if not found and not gold:
        return 1.0, 1.0, 1.0
    tp = len(found & gold)
    p = tp / len(found) if found else 0.0
    r = tp / len(gold) if gold else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def evaluate(pipeline: Pipeline, questions: list[dict], gold: dict[str, dict]) -> tuple[list[dict], float]:
    rows = []
    t0 = time.perf_counter()
    for q in questions:
        g = gold[q["id"]]
        trace = Trace(q["question"], "aggregate")
        route = pipeline.route(q["question"], "auto", trace)
        t = time.perf_counter()
        result = pipeline.aggregate(q["question"], None, trace)
        ms = (time.perf_counter() - t) * 1000
        scenes = {m.doc_id for i in result.items for m in i.matches}
        episodes = {m.doc_id[:7] for i in result.items for m in i.matches}
        sp, sr, sf = prf(scenes, set(g["scenes"]))
        ep, er, ef = prf(episodes, set(g["episodes"]))
        rows.append({"id": q["id"], "question": q["question"], "route": route.name, "parsed": result.query.describe(),
                     "scene_p": sp, "scene_r": sr, "scene_f1": sf, "episode_p": ep, "episode_r": er, "episode_f1": ef,
                     "gold_scenes": len(g["scenes"]), "found_scenes": len(scenes), "count": result.count,
                     "gold_count": g["count"], "ms": ms})
    return rows, time.perf_counter() - t0


def summary(rows: list[dict]) -> dict:
    counts = [r for r in rows if r["gold_count"] is not None]
    return {
        "n": len(rows), "routed aggregate": sum(r["route"] == "aggregate" for r in rows),
        **{k: statistics.mean(r[k] for r in rows) for k in ("scene_p", "scene_r", "scene_f1", "episode_p", "episode_r", "episode_f1")},
        "count questions": len(counts), "counts exact": sum(r["count"] == r["gold_count"] for r in counts),
        "ms p50": statistics.median(r["ms"] for r in rows),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--index", type=Path, default=None)
    ap.add_argument("--dense", default="", help="comma-separated similarity thresholds to add dense matches at")
    ap.add_argument("--questions", type=Path, default=HERE / "aggregate_dev.jsonl",
                    help="a question file; its gold is <stem>_gold.jsonl beside it (bench/query/aggregate_gold.py)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    settings = load_settings(None, index=args.index)
    questions = [json.loads(s) for s in args.questions.read_text().splitlines() if s.strip()]
    gold_file = args.questions.with_name(args.questions.stem + "_gold.jsonl")
    gold = {g["id"]: g for g in map(json.loads, gold_file.read_text().splitlines())}
    load = Path("/proc/loadavg").read_text().split()[0]
    pipeline = Pipeline(settings)
    rows, seconds = evaluate(pipeline, questions, gold)
    variants = [("exact (phrase + speaker, no dense)", summary(rows))]
    for threshold in [float(x) for x in args.dense.split(",") if x.strip()]:
        settings_t = settings.model_copy(update={"aggregate_min_similarity": threshold})
        r, _ = evaluate(Pipeline(settings_t, store=pipeline.store, corpus=pipeline.corpus), questions, gold)
        variants.append((f"+ dense lines with cosine >= {threshold}", summary(r)))
    cols = ["variant", "n", "routed aggregate", "scene_p", "scene_r", "scene_f1", "episode_p", "episode_r", "episode_f1",
            "counts exact", "counts exact share", "ms p50"]
    table = [[name, s["n"], s["routed aggregate"], s["scene_p"], s["scene_r"], s["scene_f1"], s["episode_p"], s["episode_r"],
              s["episode_f1"], f"{s['counts exact']}/{s['count questions']}", s["counts exact"] / max(s["count questions"], 1),
              f"{s['ms p50']:.0f}"] for name, s in variants]
    per = [[r["id"], r["question"], r["route"], r["parsed"], f"{r['found_scenes']}/{r['gold_scenes']}", r["scene_f1"],
            r["episode_f1"], "" if r["gold_count"] is None else f"{r['count']}/{r['gold_count']}", f"{r['ms']:.0f}"] for r in rows]
    info = pipeline.store.info()
    text = header(f"Aggregation questions: exhaustive, cited lists ({args.questions.name}, {len(questions)} questions)") + (
        f"Index: {settings.index_dir} (fingerprint {info.fingerprint}, views {info.settings.sparse_views} sparse / "
        f"{info.settings.dense_views} dense). Load average at start: {load}. Questions: {args.questions.name}; "
        f"gold: {gold_file.name} (bench/query/aggregate_gold.py: regular expressions and speaker "
        "names over the corpus file, not the index). Precision / recall / F1 are per question over the set of "
        "scenes (episodes) of the lines found, then averaged; a count is exact when it equals the rule's count of "
        f"lines, scenes or episodes. {len(rows)} questions in {seconds:.1f} s.\n\n"
        + markdown_table(cols, table) + "\n## Per question (exact variant)\n\n"
        + markdown_table(["id", "question", "route", "read as", "scenes found/gold", "scene F1", "episode F1",
                          "count/gold", "ms"], per)
    )
    write_report(args.out, text)


if __name__ == "__main__":
    main()
