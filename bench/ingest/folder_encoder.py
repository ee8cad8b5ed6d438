"""A folder collection indexed from cold with each encoder: build seconds and nDCG@10 on the corpus's judged questions.

Issue 35: a new folder collection embeds with the int8 MiniLM by default (collections.folder_default_encoder). That
choice was first measured on the mixed-format NFCorpus folder; this bench checks it on another corpus: a BEIR
corpus (SciFact by default) written as a folder of Markdown files (bench/ingest/nfcorpus_folder.py's layout: one
file a document, the title as a heading, the abstract in paragraphs), its test judgments rewritten to those paths.
Each encoder builds in an empty RAGFUNNEL_HOME (no embedding cache; the int8 model is made inside the build, as a
new user's first build makes it), one after the other, with 2 encoder threads; then `ragfunnel eval questions` in
every mode, the same numbers the CLI prints.

    .venv/bin/python bench/ingest/folder_encoder.py --beir ../shared/data/beir/scifact --work /tmp/folder-encoder \
        --out docs/results/first_stage/folder_encoder.md
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from nfcorpus_folder import relpath, write_folder  # noqa: E402

from ragfunnel.corpus.loaders.beir import load_beir_queries  # noqa: E402
from ragfunnel.evaluate.report import header, markdown_table, write_report  # noqa: E402

COLLECTION = "folder"
MODES = ("bm25", "vector", "hybrid")


def write_questions(beir: Path, split: str, out: Path) -> int:
    """The split's judged questions for `ragfunnel eval questions`, document ids rewritten to the files' paths (only
    positive grades kept)."""
    n = 0
    with open(out, "w", encoding="utf-8") as f:
        for q in load_beir_queries(beir, split):
            relevant = {relpath(d): g for d, g in q["relevant"].items() if g > 0}
            if relevant:
                f.write(json.dumps({"id": q["id"], "question": q["question"], "relevant": relevant}) + "\n")
                n += 1
    return n


def run_encoder(encoder: str, docs: Path, questions: Path, work: Path, threads: int) -> dict:
    home = work / f"home-{encoder}"
    if home.exists():
        shutil.rmtree(home)
    home.mkdir(parents=True)
    env = {**os.environ, "RAGFUNNEL_HOME": str(home), "RAGFUNNEL_ENCODER_THREADS": str(threads),
           "RAGFUNNEL_ONNX_DEVICE": "cpu"}
    env.pop("RAGFUNNEL_CONFIG", None)
    cmd = [sys.executable, "-m", "ragfunnel.cli", "index", str(docs), "--collection", COLLECTION, "--json", "-q"]
    if encoder != "product default":
        cmd += ["--encoder", encoder]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"index with {encoder} failed:\n{done.stderr[-3000:]}")
    sync = json.loads(done.stdout)
    built = subprocess.run([sys.executable, "-c", (
        "from ragfunnel.config import load_settings; from ragfunnel.store import peek_index; "
        f"s = load_settings(collection={COLLECTION!r}); print(peek_index(s.index_location, s.backend).settings.encoder)")],
        env=env, capture_output=True, text=True, check=True).stdout.strip()
    modes = {}
    for mode in MODES:
        out = subprocess.run([sys.executable, "-m", "ragfunnel.cli", "eval", "questions", str(questions), "-c",
                              COLLECTION, "--mode", mode, "--json"], env=env, capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(f"eval {mode} with {encoder} failed:\n{out.stderr[-3000:]}")
        modes[mode] = json.loads(out.stdout)
    return {"encoder": encoder, "built_with": built, "wall_s": wall,
            "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "timings": sync.get("timings", {}), "parsed": sync.get("parsed"), "load_before": load,
            "load_after": os.getloadavg()[0], "modes": modes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--beir", type=Path, default=Path("../shared/data/beir/scifact"), help="a BEIR corpus folder")
    parser.add_argument("--split", default="test", help="its judgments to score (qrels/<split>.tsv)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/folder-encoder"))
    parser.add_argument("--encoders", default="default,product default",
                        help="comma-separated: encoder names for `index --encoder`, or 'product default' (none given)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, help="the Markdown table (e.g. docs/results/first_stage/folder_encoder.md)")
    args = parser.parse_args()
    work = args.work
    docs = work / "docs"
    if docs.exists():
        shutil.rmtree(docs)
    n_files = write_folder(args.beir / "corpus.jsonl", docs)
    questions = work / f"questions-{args.split}.jsonl"
    n_questions = write_questions(args.beir, args.split, questions)
    runs = [run_encoder(e.strip(), docs, questions, work, args.threads) for e in args.encoders.split(",") if e.strip()]
    rows = []
    for r in runs:
        for mode in MODES:
            m = r["modes"][mode]
            rows.append([f"{r['encoder']} ({r['built_with']})", mode, f"{r['wall_s']:.0f}", f"{r['cpu_s']:.0f}",
                         m["ndcg@10"], m["recall@10"], m["recall@100"], m["mrr@10"], m["n"]])
    text = header(f"A {args.beir.name} folder indexed from cold with each encoder: build seconds and nDCG@10")
    text += (f"{args.beir.name}'s {n_files} documents written as Markdown files (bench/ingest/nfcorpus_folder.py's layout), "
             f"indexed as a folder collection with its default settings (sec256 sections: BM25 and vectors) in an "
             f"empty RAGFUNNEL_HOME per encoder (no embedding cache), {args.threads} encoder threads, one build after "
             f"the other; scored on the {n_questions} judged **{args.split}** questions by `ragfunnel eval questions` "
             "(documents collapsed from sections). 'product default': `index` without `--encoder` (a new folder "
             "collection's default; the encoder it chose in brackets).\n\n")
    text += markdown_table(["encoder (built with)", "mode", "cold index s", "CPU s", "nDCG@10", "recall@10",
                            "recall@100", "MRR@10", "n"], rows)
    text += "\n" + "".join(
        f"- {r['encoder']}: {r['parsed']} files parsed; timings {json.dumps({k: round(v, 1) for k, v in r['timings'].items()})}; "
        f"load average {r['load_before']:.1f} before, {r['load_after']:.1f} after\n" for r in runs)
    write_report(args.out, text)
    (work / "runs.json").write_text(json.dumps(runs, indent=1))


if __name__ == "__main__":
    main()
