"""BEIR through the product CLI: `ragfunnel eval beir` on SciFact test and NFCorpus dev, every mode of the BEIR
collection, and `accurate` with the LambdaMART of `ragfunnel train reranker --questions <folder> --split train`.

    python bench/first_stage/beir_product.py [--train] [--data ../shared/data/beir] --out docs/results/first_stage/beir.md
    python bench/first_stage/beir_product.py --tuned [--train] --out docs/results/first_stage/beir_tuned_encoder.md

`--suffix S` scores the collections `beir-<name>S` instead: collections you made beside the default ones, such as
one whose collection.toml names a fine-tuned encoder (`encoder = "onnx:<dir>"` under [store]); the table then says
which encoder each collection's index was built with. `--tuned` = `--suffix=-tuned`, and writes the collection
`beir-<name>-tuned` (the BEIR settings with `encoder = "onnx:<beir-<name>>/models/embedder"`) where it has no
settings yet: the encoder `ragfunnel train embedder -c beir-<name> --questions <folder> --split train` made.

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


def encoder_about(encoder: str) -> str:
    """What a fine-tuned encoder learnt from, from its meta.json (nothing for the bundled ones)."""
    meta = Path(encoder[5:]) / "meta.json" if encoder.startswith("onnx:") else None
    if meta is None or not meta.is_file():
        return ""
    m = json.loads(meta.read_text())
    return (f" (fine-tuned by `ragfunnel train embedder`: {m.get('pairs')} pairs from {m.get('questions')} questions of "
            f"the {m.get('split') or 'given'} split, view {m.get('view')}, {m.get('epochs')} epochs, "
            f"{m.get('steps')} steps on {m.get('device', 'cpu')} in {m.get('train_seconds')} s)")


def tuned_collection(folder: Path, name: str, split: str, coll: str) -> None:
    """Give `coll` the settings of beir-<name> with the encoder fine-tuned for it, unless it has settings."""
    own = load_settings(collection=coll).collection_dir / "collection.toml"
    if own.is_file():
        return
    base = load_settings(collection=f"beir-{name}")
    model = base.embedder_dir
    if not (model / "onnx" / "model.onnx").is_file():
        raise SystemExit(f"no fine-tuned encoder at {model}: run `ragfunnel train embedder -c beir-{name} --questions "
                         f"{folder} --split train` first")
    if not (base.collection_dir / "collection.toml").is_file():  # the BEIR settings are written by its first index
        ragfunnel("eval", "beir", "--data", str(folder), "--split", split, "--mode", "bm25", "--json", "--limit", "1")
    lines = (base.collection_dir / "collection.toml").read_text(encoding="utf-8").splitlines()
    at = lines.index("[store]") + 1
    lines[at:at] = [f"encoder = {json.dumps(f'onnx:{model}')}"]
    own.parent.mkdir(parents=True, exist_ok=True)
    own.write_text("\n".join(lines).replace(f"'beir-{name}'", f"'{coll}'") + "\n", encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=Path("../shared/data/beir"))
    ap.add_argument("--train", action="store_true", help="train each collection's reranker on its train split first")
    ap.add_argument("--suffix", default="", help="score the collections beir-<name><suffix>")
    ap.add_argument("--tuned", action="store_true",
                    help="--suffix=-tuned, with collections indexed by the encoder `train embedder` made for beir-<name>")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if args.tuned:
        args.suffix = "-tuned"
    text = header("BEIR through the product: `ragfunnel eval beir`")
    text += ("Each dataset is indexed as collection `beir-<name>` (units: title and sentences; BM25 over documents, "
             "3-sentence windows and sentences; MiniLM vectors per document and per sentence; its collection.toml "
             "holds the modes). nDCG@10 with linear gain (trec_eval / BEIR). `accurate` = `hybrid` + the "
             "collection's LambdaMART over the top 50, trained on the dataset's **train** judgments only.\n\n")
    for name, split, fit_on in DATASETS:
        folder = args.data / name
        coll = f"beir-{name}{args.suffix}"
        if args.tuned:
            tuned_collection(folder, name, split, coll)
        rows, notes = [], []
        t0 = time.perf_counter()
        ragfunnel("eval", "beir", "--data", str(folder), "-c", coll, "--split", split, "--mode", "bm25", "--json",
                  "--limit", "1")
        notes.append(f"collection `{coll}`, index (or reuse) {time.perf_counter() - t0:.0f} s")
        settings = load_settings(collection=coll)
        if args.suffix:
            notes.append(f"encoder `{settings.store.encoder}`" + encoder_about(settings.store.encoder))
        if args.train:
            t1 = time.perf_counter()
            out = ragfunnel("train", "reranker", "-c", coll, "--questions", str(folder), "--split", "train",
                            "--fit-on", fit_on)
            report = json.loads(out[out.index("{"):])
            notes.append(f"reranker trained in {time.perf_counter() - t1:.0f} s on {report['train_questions'] + report['holdout_questions']} "
                         f"train queries (fit_on {fit_on})")
        trained = settings.reranker_dir / "training_report.json"
        has_reranker = trained.is_file()
        if has_reranker and not args.train:
            report = json.loads(trained.read_text())
            notes.append(f"reranker: `ragfunnel train reranker -c {coll} --questions {folder} --split train "
                         f"--fit-on {report['fit_on']}` ({report['train_questions'] + report['holdout_questions']} "
                         f"train queries, {report['seconds']:.0f} s)")
        for mode in MODES:
            if mode == "accurate" and not has_reranker:
                notes.append("accurate left out: no trained reranker (run with --train)")
                continue
            r = json.loads(ragfunnel("eval", "beir", "--data", str(folder), "-c", coll, "--split", split, "--mode", mode,
                                     "--json"))
            rows.append([mode, *[r[c] for c in COLUMNS]])
        text += f"## {name} {split} (n={r['n']})\n\n" + markdown_table(["mode", *COLUMNS], rows)
        text += "\n" + "; ".join(notes) + ".\n\n"
    write_report(args.out, text)


if __name__ == "__main__":
    main()
