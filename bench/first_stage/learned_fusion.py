"""Issue 37: the learned fusion (`ragfunnel train fusion`) against every fixed fusion, on every Friends set side by side.

    python bench/first_stage/learned_fusion.py --model DIR [--train] [--sets ...] [--modes ...] [--latency N] --out FILE

`--train` fits the fusion into DIR first, as `ragfunnel train fusion --out DIR` does (FriendsQA dev's training part and
the bundled vague-moment training set, each set weighing the same, seed 13), and times it. `learned` is `hybrid`
fused by the model in DIR (its own lists: hybrid's five and the scene vectors); every other mode is the index's fixed
fusion. Sets: `direct`, `reworded` (the friends-rag sample: tests, never tuned on), `holdout` (FriendsQA dev's
held-out part), `heavy` (the 200 heavily reworded: a test), `vague` (bench/query/vague_heldout.jsonl: 140 moments
on scenes no training moment describes, never tuned on); `train` (FriendsQA dev's training part) and `vague-train`
(the bundled training moments) are where the fusion learnt, marked in-sample. `--latency N`: N dev questions searched
by `hybrid` and `learned` in turn, whole searches (no list shared), p50 / p90 of each and of the fuse stage.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from ragfunnel.config import load_settings
from ragfunnel.corpus.friends_questions import load_friends_set, training_split, vague_training_moments
from ragfunnel.evaluate.report import header, markdown_table, write_report
from ragfunnel.evaluate.runner import metrics_for, run_modes
from ragfunnel.pipeline import Pipeline
from ragfunnel.questions import load_questions

HERE = Path(__file__).resolve().parent
VAGUE_HELDOUT = HERE.parents[1] / "bench" / "query" / "vague_heldout.jsonl"
SETS = "direct,reworded,holdout,heavy,vague,train,vague-train"
IN_SAMPLE = {"train", "vague-train"}
MODES = "bm25,vector,rrf_naive,rrf_weighted,score,query_aware_tuned,all4,hybrid,learned"
COLUMNS = ["recall@1", "recall@5", "recall@10", "recall@20", "mrr@10", "ndcg@10"]


def question_sets(settings, names):
    split = training_split(settings.friends_dir)
    loaders = {
        "train": lambda: split.train, "holdout": lambda: split.holdout,
        "vague": lambda: load_questions(VAGUE_HELDOUT), "vague-train": vague_training_moments,
    }
    return {n: (loaders[n]() if n in loaders else load_friends_set(n, settings.friends_dir)) for n in names}


def train(model: Path) -> float:
    import subprocess
    import sys

    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "ragfunnel.cli", "train", "fusion", "--out", str(model)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"ragfunnel train fusion failed:\n{done.stderr[-3000:]}")
    return time.perf_counter() - t0


def latency(pipeline: Pipeline, questions, modes) -> list[list]:
    for q in questions[:10]:  # warm up: models, index pages
        for m in modes:
            pipeline.search(q.text + " warm up", m, k=10)
    totals = {m: [] for m in modes}
    fuse = {m: [] for m in modes}
    for q in questions:  # the modes in turn on each question: both see the same load
        for m in modes:
            t0 = time.perf_counter()
            result = pipeline.search(q.text, m, k=10)
            totals[m].append((time.perf_counter() - t0) * 1000)
            fuse[m] += [st.seconds * 1000 for st in result.trace.stages if st.name == "fuse"]
    rows = []
    for m in modes:
        q90 = statistics.quantiles(totals[m], n=10)[8]
        rows.append([m, len(totals[m]), statistics.median(totals[m]), q90, statistics.median(fuse[m])])
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, required=True, help="the trained fusion's directory")
    ap.add_argument("--train", action="store_true", help="train it there first (ragfunnel train fusion --out MODEL)")
    ap.add_argument("--sets", default=SETS)
    ap.add_argument("--modes", default=MODES)
    ap.add_argument("--latency", type=int, default=300, help="dev questions for the latency pass (0: none)")
    ap.add_argument("--limit", type=int, default=None, help="first N questions of each set (smoke test)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    train_seconds = train(args.model) if args.train else None
    settings = load_settings()
    learned = settings.modes["hybrid"].model_copy(deep=True)
    learned.fusion.learned, learned.fusion.model = True, str(args.model)
    learned.description = f"hybrid fused by the trained fusion in {args.model}"
    settings.modes["learned"] = learned
    pipeline = Pipeline(settings)
    fusion = pipeline.learned_fusion("learned", learned)
    training = fusion.model.get("training", {})
    modes = args.modes.split(",")
    load = Path("/proc/loadavg").read_text().split()[0]
    l2 = f", L2 {fusion.model.get('l2')}" if fusion.query_dependent else ""
    doc = header("Learned fusion against the fixed fusions, every Friends set") + (
        f"Index fingerprint {pipeline.store.info().fingerprint} (bundled MiniLM); load average at start {load}. "
        f"`learned` = hybrid fused by the trained fusion ({args.model}/model.json: lists "
        f"{', '.join(fusion.retrievers)}; evidence {', '.join(fusion.evidence)}; "
        f"{'weights set per question' if fusion.query_dependent else 'one convex combination'}"
        f"{l2}; fit on "
        f"{training.get('questions_used')} questions: {json.dumps(fusion.model.get('question_sets', {}))}, each set "
        f"weighing the same; chosen by 5-fold cross-validation on them: {json.dumps(training.get('cross_validation'))})."
        + (f" Training took {train_seconds:.0f} s (`ragfunnel train fusion`, collecting the lists included)."
           if train_seconds is not None else "")
        + " Sets marked in-sample are where the fusion learnt; the others were never tuned on.\n\n")
    results: dict = {}
    for name, qs in question_sets(settings, args.sets.split(",")).items():
        qs = qs[: args.limit] if args.limit else qs
        t0 = time.perf_counter()
        runs = run_modes(pipeline, qs, modes)
        results[name] = {m: metrics_for(runs[m], qs) for m in modes}
        rows = [[m, *[results[name][m][c] for c in COLUMNS]] for m in modes]
        tag = " — in-sample for learned" if name in IN_SAMPLE else ""
        doc += f"## {name} (n={len(qs)}{tag}, {time.perf_counter() - t0:.0f} s)\n\n" + markdown_table(["mode", *COLUMNS], rows) + "\n"
        print(f"{name}: " + ", ".join(f"{m} {results[name][m]['recall@5']:.3f}" for m in modes), flush=True)
    if args.latency:
        dev = load_friends_set("dev", settings.friends_dir)[: args.latency]
        rows = latency(pipeline, dev, ["hybrid", "learned"])
        results["_latency"] = {r[0]: {"p50_ms": r[2], "p90_ms": r[3], "fuse_p50_ms": r[4]} for r in rows}
        doc += (f"## Search latency ({len(dev)} dev questions, the two modes in turn on each; load average "
                f"{Path('/proc/loadavg').read_text().split()[0]} at the end)\n\n"
                + markdown_table(["mode", "queries", "p50 ms", "p90 ms", "fuse stage p50 ms"], rows) + "\n")
    write_report(args.out, doc, echo=False)
    if args.out:
        args.out.with_suffix(".json").write_text(json.dumps(results, indent=1))
    print(doc)


if __name__ == "__main__":
    main()
