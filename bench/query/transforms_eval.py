"""First-stage modes with and without pseudo-relevance feedback (retrieve/feedback.py) on FriendsQA dev, the
friends-rag Direct / Reworded / Heavy sets (reported as tests: never tuned on) and the vague-description dev set
(bench/query/vague_dev.jsonl): recall@k, MRR@10, nDCG@10 and time per question.

    python bench/query/transforms_eval.py [--sets dev,direct,reworded,heavy,vague] [--modes ...] [--limit N] [--out FILE]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from ragfunnel.config import load_settings
from ragfunnel.corpus.friends_questions import load_friends_set
from ragfunnel.evaluate.report import header, markdown_table, write_report
from ragfunnel.evaluate.runner import metrics_for, run_modes
from ragfunnel.pipeline import Pipeline
from ragfunnel.questions import load_questions

HERE = Path(__file__).resolve().parent
DEFAULT_MODES = "bm25,bm25_rm3,vector,vector_prf,hybrid,hybrid_rm3,hybrid_prf"
COLUMNS = ["recall@1", "recall@5", "recall@10", "recall@20", "mrr@10", "ndcg@10"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", default="dev,direct,reworded,heavy,vague")
    ap.add_argument("--modes", default=DEFAULT_MODES)
    ap.add_argument("--limit", type=int, default=None, help="first N questions of each set")
    ap.add_argument("--index", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    settings = load_settings(None, index=args.index)
    pipeline = Pipeline(settings)
    modes = args.modes.split(",")
    load = Path("/proc/loadavg").read_text().split()[0]
    doc = header("Query transforms without an LLM: RM3 and Rocchio pseudo-relevance feedback") + (
        f"Index fingerprint {pipeline.store.info().fingerprint}; load average at start {load}. "
        "Modes: bm25_rm3 = BM25 scenes + RM3 (3 feedback chunks, 30 terms, original weight 0.8; the best of a grid of 8 on dev, none better than plain BM25); vector_prf = window "
        "vectors + Rocchio (top 5, beta 0.5); hybrid_rm3 / hybrid_prf = hybrid with those retrievers in place of BM25 "
        "scenes (and window vectors). Direct, Reworded and Heavy are the friends-rag sample: reported, never tuned on. "
        "ms/q: mean seconds per question of the mode's own retrievers and fusion (lists shared between modes are "
        "counted once, in the first mode that ran them).\n\n")
    for set_name in args.sets.split(","):
        if set_name == "vague":
            qs = load_questions(HERE / "vague_dev.jsonl")
        else:
            qs = load_friends_set(set_name, settings.friends_dir)
        qs = qs[: args.limit] if args.limit else qs
        t0 = time.perf_counter()
        runs = run_modes(pipeline, qs, modes)
        rows = []
        for mode in modes:
            m = metrics_for(runs[mode], qs)
            ms = statistics.fmean(runs[mode].seconds) * 1000 if runs[mode].seconds else float("nan")
            rows.append([mode, *[m.get(c, float("nan")) for c in COLUMNS], f"{ms:.0f}"])
        doc += f"## {set_name} (n={len(qs)}, {time.perf_counter() - t0:.0f} s)\n\n" + markdown_table(["mode", *COLUMNS, "ms/q"], rows) + "\n"
        print(doc.split("## ")[-1], flush=True)
    write_report(args.out, doc, echo=False)


if __name__ == "__main__":
    main()
