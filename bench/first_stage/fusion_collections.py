"""Issue 37, per collection: each collection's own fusion fitted on its training judgments (`ragfunnel train fusion
-c NAME --questions ...`), against the fixed fusion its settings name, with and without the trained reranker.

    RAGFUNNEL_HOME=/tmp/fusion-home python bench/first_stage/fusion_collections.py [--only scifact,nfcorpus,nf-mixed]
        [--data ../shared/data/beir] [--folder /tmp/nf-mixed] --out docs/results/first_stage/fusion_collections.md

For each collection, in order:
1. index it when needed (`ragfunnel eval beir` for a BEIR folder; bench/ingest/mixed_folder.py's folder of six formats
   built from NFCorpus, then `ragfunnel index`);
2. `before`: train its reranker on the fixed fusion's candidates (`ragfunnel train reranker --questions ... --split
   train`, as bench/first_stage/beir_product.py does), score bm25, vector, hybrid and accurate;
3. `ragfunnel train fusion` on the same training judgments (its cross-validation picks the model), timed;
4. `after`: hybrid now fuses with it; train the reranker again on its candidates and score hybrid and accurate.

Scored on judgments never trained on: SciFact **test**, NFCorpus **dev** (its test judgments are held back), the
mixed folder's NFCorpus **dev** judgments. nDCG@10 with linear gain, as trec_eval.
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

HERE = Path(__file__).resolve().parent
COLUMNS = ["ndcg@10", "recall@10", "recall@100", "mrr@10", "search_p50_ms"]


def ragfunnel(*args: str) -> tuple[str, float]:
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "ragfunnel.cli", *args], capture_output=True, text=True, env=os.environ)
    if done.returncode != 0:
        raise SystemExit(f"ragfunnel {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return done.stdout, time.perf_counter() - t0


def targets(data: Path, folder: Path) -> dict[str, dict]:
    return {
        "scifact": {"collection": "beir-scifact", "beir": data / "scifact", "eval_split": "test", "fit_on": "cv",
                    "train": ["--questions", str(data / "scifact"), "--split", "train"]},
        "nfcorpus": {"collection": "beir-nfcorpus", "beir": data / "nfcorpus", "eval_split": "dev", "fit_on": "train",
                     "train": ["--questions", str(data / "nfcorpus"), "--split", "train"]},
        "nf-mixed": {"collection": "nf-mixed", "folder": folder, "nfcorpus": data / "nfcorpus", "fit_on": "train",
                     "eval": folder / "questions-mixed.jsonl",
                     "train": ["--questions", str(folder / "questions-mixed-train.jsonl")]},
    }


def ensure_index(t: dict) -> str:
    if "beir" in t:
        _, seconds = ragfunnel("eval", "beir", "--data", str(t["beir"]), "--split", t["eval_split"], "--mode", "bm25",
                               "--json", "--limit", "1")
        return f"indexed or reused in {seconds:.0f} s"
    if not (t["folder"] / "questions-mixed.jsonl").is_file():
        subprocess.run([sys.executable, str(HERE.parents[0] / "ingest" / "mixed_folder.py"), "--out", str(t["folder"]),
                        "--data", str(t["nfcorpus"])], check=True)
    out, seconds = ragfunnel("index", str(t["folder"] / "docs"), "-c", t["collection"], "--json")
    return f"index: {json.loads(out.strip().splitlines()[-1]).get('action')} in {seconds:.0f} s"


def score(t: dict, mode: str) -> dict:
    if "beir" in t:
        out, _ = ragfunnel("eval", "beir", "--data", str(t["beir"]), "--split", t["eval_split"], "--mode", mode, "--json")
    else:
        out, _ = ragfunnel("eval", "questions", str(t["eval"]), "-c", t["collection"], "--mode", mode, "--json")
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=Path("../shared/data/beir"))
    ap.add_argument("--folder", type=Path, default=Path("/tmp/nf-mixed"), help="where the mixed folder is (built)")
    ap.add_argument("--only", default="scifact,nfcorpus,nf-mixed")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    load = Path("/proc/loadavg").read_text().split()[0]
    doc = header("Learned fusion per collection: fitted on each collection's training judgments") + (
        f"RAGFUNNEL_HOME {load_settings().home}; load average at start {load}. Bundled MiniLM everywhere. `before`: the "
        "collection's fixed fusion (its settings' hybrid), `accurate` its LambdaMART trained on those candidates; "
        "`after`: hybrid fused by `ragfunnel train fusion` on the training judgments, `accurate` the LambdaMART "
        "trained again on its candidates. Scored on judgments never trained on.\n\n")
    results: dict = {}
    for name in args.only.split(","):
        t = targets(args.data, args.folder)[name]
        coll = t["collection"]
        notes = [ensure_index(t)]
        rows = []
        results[name] = {}
        _, s = ragfunnel("train", "reranker", "-c", coll, *t["train"], "--fit-on", t["fit_on"])
        notes.append(f"reranker (before) trained in {s:.0f} s")
        for mode in ("bm25", "vector", "hybrid", "accurate"):
            m = score(t, mode)
            results[name][f"before {mode}"] = m
            rows.append(["before", mode, *[m[c] for c in COLUMNS]])
            print(name, "before", mode, round(m["ndcg@10"], 4), flush=True)
        out, s = ragfunnel("train", "fusion", "-c", coll, *t["train"])
        report = json.loads(out)
        results[name]["fusion"] = report
        notes.append(f"`ragfunnel train fusion` in {s:.0f} s ({report['questions_used']} questions, "
                     f"{'per-question weights' if report['query_dependent'] else 'one convex combination'}, "
                     f"cross-validated {report['metric']}: {json.dumps(report.get('cross_validation'))})")
        for mode in ("hybrid",):
            m = score(t, mode)
            results[name][f"after {mode}"] = m
            rows.append(["after", mode, *[m[c] for c in COLUMNS]])
            print(name, "after", mode, round(m["ndcg@10"], 4), flush=True)
        _, s = ragfunnel("train", "reranker", "-c", coll, *t["train"], "--fit-on", t["fit_on"])
        notes.append(f"reranker (after) trained in {s:.0f} s")
        m = score(t, "accurate")
        results[name]["after accurate"] = m
        rows.append(["after", "accurate", *[m[c] for c in COLUMNS]])
        print(name, "after accurate", round(m["ndcg@10"], 4), flush=True)
        split = t.get("eval_split", "dev")
        doc += (f"## {name} ({coll}, {split} judgments, n={m['n']})\n\n" + markdown_table(["", "mode", *COLUMNS], rows)
                + "\n" + "".join(f"- {n}\n" for n in notes) + "\n")
    write_report(args.out, doc, echo=False)
    if args.out:
        args.out.with_suffix(".json").write_text(json.dumps(results, indent=1))
    print(doc)


if __name__ == "__main__":
    main()
