"""BEIR through the product CLI: `ragfunnel eval beir` on SciFact test and NFCorpus dev, every mode of the BEIR
collection, and `accurate` with the LambdaMART of `ragfunnel train reranker --questions <folder> --split train`.

    python bench/first_stage/beir_product.py [--train] [--data ../shared/data/beir] --out docs/results/first_stage/beir.md

`--train` (re)trains each collection's reranker on its **train** judgments first (SciFact: 809 claims, 5-fold
cross-validated, every claim fit; NFCorpus: 2,590 queries, 80% fit / 20% early stopping); without it the trained
rerankers of `$RAGFUNNEL_HOME` are used (accurate is left out where there is none). NFCorpus test judgments are held
back; its dev split is reported and nothing is tuned on it. The first run indexes each folder (collection
`beir-<name>`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from ragfunnel.config import load_settings
from ragfunnel.evaluate.report import header, markdown_table, write_report

DATASETS = (("scifact", "test", "cv"), ("nfcorpus", "dev", "train"))
MODES = ("bm25", "vector", "hybrid", "accurate")
COLUMNS = ["ndcg@10", "recall@10", "recall@100", "mrr@10", "search_p50_ms"]


def ragfunnel(*args: str) -> str:
    cmd = [sys.executable, "-m", "ragfunnel.cli", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, env=os.environ)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return done.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=Path("../shared/data/beir"))
    ap.add_argument("--train", action="store_true", help="train each collection's reranker on its train split first")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    text = header("BEIR through the product: `ragfunnel eval beir`")
    text += ("Each dataset is indexed as collection `beir-<name>` (units: title and sentences; BM25 over documents, "
             "3-sentence windows and sentences; MiniLM vectors per document and per sentence; its collection.toml "
             "holds the modes). nDCG@10 with linear gain (trec_eval / BEIR). `accurate` = `hybrid` + the "
             "collection's LambdaMART over the top 50, trained on the dataset's **train** judgments only.\n\n")
    for name, split, fit_on in DATASETS:
        folder = args.data / name
        rows, notes = [], []
        t0 = time.perf_counter()
        ragfunnel("eval", "beir", "--data", str(folder), "--split", split, "--mode", "bm25", "--json", "--limit", "1")
        notes.append(f"index (or reuse) {time.perf_counter() - t0:.0f} s")
        if args.train:
            t1 = time.perf_counter()
            out = ragfunnel("train", "reranker", "-c", f"beir-{name}", "--questions", str(folder), "--split", "train",
                            "--fit-on", fit_on)
            report = json.loads(out[out.index("{"):])
            notes.append(f"reranker trained in {time.perf_counter() - t1:.0f} s on {report['train_questions'] + report['holdout_questions']} "
                         f"train queries (fit_on {fit_on})")
        trained = load_settings(collection=f"beir-{name}").reranker_dir / "training_report.json"
        has_reranker = trained.is_file()
        if has_reranker and not args.train:
            report = json.loads(trained.read_text())
            notes.append(f"reranker: `ragfunnel train reranker -c beir-{name} --questions {folder} --split train "
                         f"--fit-on {report['fit_on']}` ({report['train_questions'] + report['holdout_questions']} "
                         f"train queries, {report['seconds']:.0f} s)")
        for mode in MODES:
            if mode == "accurate" and not has_reranker:
                notes.append("accurate left out: no trained reranker (run with --train)")
                continue
            r = json.loads(ragfunnel("eval", "beir", "--data", str(folder), "--split", split, "--mode", mode, "--json"))
            rows.append([mode, *[r[c] for c in COLUMNS]])
        text += f"## {name} {split} (n={r['n']})\n\n" + markdown_table(["mode", *COLUMNS], rows)
        text += "\n" + "; ".join(notes) + ".\n\n"
    write_report(args.out, text)


if __name__ == "__main__":
    main()
