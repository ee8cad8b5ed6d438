"""Friends cold build: what each dense view and the encoder's precision and length cost, and what they buy.

    # 1. encoder speed and parity on a sample of Friends chunk texts (no index is written)
    python bench/first_stage/cold_build.py sample --n 5000 --json /tmp/build-home/sample.json
    # 2. one full cold build per configuration, each in its own empty RAGFUNNEL_HOME (run them one at a time)
    python bench/first_stage/cold_build.py build --name b_w3s1_utt --root /tmp/build-home \
        --dense w3s1,utt --encoder minilm-l6-onnx
    # 3. the table
    python bench/first_stage/cold_build.py report --sample /tmp/build-home/sample.json --root /tmp/build-home \
        --names a_default,b_w3s1_utt,c_w3s1_utt_int8 --out docs/results/first_stage/cold_build.md

A build runs the product CLI (`ragfunnel index`, then `ragfunnel eval friends --set direct|reworded --mode hybrid
--json`) with a config file that sets only `[store]`; its wall time is the `index` command's, from an empty
embedding cache (the int8 model is quantised inside it, as a new user's first build would).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from ragfunnel.chunking import chunk_documents
from ragfunnel.config import load_settings
from ragfunnel.corpus.registry import make_corpus
from ragfunnel.embedding import DEFAULT_MODEL, INT8_MODEL, make_encoder
from ragfunnel.evaluate.report import header, markdown_table, write_report
from ragfunnel.store import StoreSettings

ENCODERS = {"fp32": DEFAULT_MODEL, "int8": INT8_MODEL}


def sample_texts(view: str, n: int, seed: int = 0) -> list[str]:
    settings = load_settings()
    docs = list(make_corpus("friends", settings.friends_dir).documents())
    texts = sorted({c.text for c in chunk_documents(docs, [view])})
    return random.Random(seed).sample(texts, min(n, len(texts)))


def timed_encode(encoder, texts: list[str], batch: int = 64) -> tuple[np.ndarray, float]:
    """Embed as a build does: length-sorted batches of 64; vectors back in the input order."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out = np.zeros((len(texts), encoder.dim), dtype=np.float32)
    encoder.encode(["warm up"])
    t0 = time.perf_counter()
    for start in range(0, len(order), batch):
        rows = order[start : start + batch]
        out[rows] = encoder.encode([texts[i] for i in rows])
    return out, time.perf_counter() - t0


def run_sample(args) -> None:
    rows = []
    for view in args.views.split(","):
        texts = sample_texts(view, args.n if view != "scene" else min(args.n, 500))
        vectors = {}
        for length in (256, 128):
            for precision, name in ENCODERS.items():
                encoder = make_encoder(name, max_length=length)
                vectors[precision, length], seconds = timed_encode(encoder, texts)
                tokens = sum(min(n, length) for n in encoder.token_lengths(texts))
                rows.append({"view": view, "texts": len(texts), "precision": precision, "max_length": length,
                             "seconds": seconds, "per_s": len(texts) / seconds, "tokens": tokens})
                print(json.dumps(rows[-1]), file=sys.stderr)
        for key, vec in vectors.items():
            cos = (vec * vectors["fp32", 256]).sum(axis=1)
            row = next(r for r in rows if r["view"] == view and (r["precision"], r["max_length"]) == key)
            row.update(cos_mean=float(cos.mean()), cos_p1=float(np.percentile(cos, 1)), cos_min=float(cos.min()))
    Path(args.json).write_text(json.dumps({"header": header(f"encoder sample: {args.n} texts per view"),
                                           "rows": rows}, indent=1))


def ragfunnel(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ragfunnel.cli", *args], env=env, capture_output=True, text=True,
                          check=True)


def run_build(args) -> None:
    home = Path(args.root) / args.name
    if home.exists():
        shutil.rmtree(home)  # an empty home: an empty embedding cache, no quantised model
    home.mkdir(parents=True)
    config = home / "config.toml"
    if args.defaults:  # the product's own defaults: no [store] line
        config.write_text("# the defaults\n")
        defaults = StoreSettings()
        args.dense, args.encoder, args.max_length = ",".join(defaults.dense_views), defaults.encoder, defaults.max_length
        args.derived = ",".join(f"{k}={v}" for k, v in defaults.derived_views.items())
        args.late = ",".join(defaults.late_chunked_views)
    else:  # every setting pinned, derived views included (none unless --derived)
        dense = ", ".join(f'"{v}"' for v in args.dense.split(",") if v)
        derived = ", ".join(f'{k} = "{v}"' for k, v in (p.split("=") for p in args.derived.split(",") if p))
        config.write_text(f'[store]\ndense_views = [{dense}]\nencoder = "{args.encoder}"\nmax_length = {args.max_length}\n'
                          f'derived_views = {{ {derived} }}\n'
                          f'late_chunked_views = {json.dumps([v for v in args.late.split(",") if v])}\n')
    if args.hybrid:  # hybrid over other retrievers (same RRF k=10), for a build without some dense view
        names = ", ".join(f'"{r}"' for r in args.hybrid.split(","))
        config.write_text(config.read_text() + f'\n[modes.hybrid]\nretrievers = [{names}]\nfusion = {{ method = "rrf", k = 10 }}\n')
    env = {**os.environ, "RAGFUNNEL_HOME": str(home), "PYTHONPATH": os.pathsep.join(sys.path)}
    index = home / "index"
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    searchable = first_search = None
    proc = subprocess.Popen([sys.executable, "-m", "ragfunnel.cli", "index", "--config", str(config), "--index",
                             str(index), "--quiet"], env=env, stderr=subprocess.PIPE, text=True)
    log = []
    for line in proc.stderr:  # a first build says when it serves BM25: a search is run right then, as a user would
        log.append(line)
        if line.startswith("searchable at") and searchable is None:
            searchable = time.perf_counter() - t0
            found = ragfunnel("search", args.question, "--k", "5", "--json", "--config", str(config), "--index",
                              str(index), env=env)
            first_search = {"s": time.perf_counter() - t0, "mode": json.loads(found.stdout)["mode"],
                            "top": json.loads(found.stdout)["results"][0]["id"], "note": found.stderr.strip()}
            if args.searchable_only:  # the time to a first search is measured: stop the build (it would resume)
                proc.terminate()
                break
    if proc.wait() != 0 and not args.searchable_only:
        raise SystemExit("".join(log[-20:]))
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    load = max(load, os.getloadavg()[0])
    size = sum(f.stat().st_size for f in index.rglob("*") if f.is_file())
    manifest = json.loads((index / "manifest.json").read_text())
    result = {"name": args.name, "dense_views": args.dense.split(","), "encoder": args.encoder,
              "max_length": args.max_length, "wall_s": wall, "cpu_s": cpu, "load_avg_1m": load, "index_bytes": size,
              "chunks": manifest["chunks"], "recall@5": {}, "derived": args.derived, "late": args.late, "searchable_s": searchable,
              "first_search": first_search, "cpu_count": os.cpu_count()}
    for question_set in [] if args.searchable_only else args.sets.split(","):
        out = ragfunnel("eval", "friends", "--set", question_set, "--mode", "hybrid", "--json", "--config", str(config),
                        "--index", str(index), env=env)
        result["recall@5"][question_set] = json.loads(out.stdout)
    (Path(args.root) / f"{args.name}.json").write_text(json.dumps(result, indent=1))
    print(json.dumps({k: v for k, v in result.items() if k != "recall@5"}))


# hybrid with one dense view less or more (the same RRF k=10 over the same BM25 views): what each dense view buys
VIEW_MODES = """
[modes.hybrid_no_dense_utt]
retrievers = ["bm25_scene", "bm25_w3s1", "bm25_utt", "dense_w3s1"]
fusion = { method = "rrf", k = 10 }

[modes.hybrid_no_dense_w3s1]
retrievers = ["bm25_scene", "bm25_w3s1", "bm25_utt", "dense_utt"]
fusion = { method = "rrf", k = 10 }

[modes.hybrid_bm25_only]
retrievers = ["bm25_scene", "bm25_w3s1", "bm25_utt"]
fusion = { method = "rrf", k = 10 }

[modes.hybrid_plus_dense_scene]
retrievers = ["bm25_scene", "bm25_w3s1", "bm25_utt", "dense_scene", "dense_w3s1", "dense_utt"]
fusion = { method = "rrf", k = 10 }
"""


def run_views(args) -> None:
    """Recall@5 of hybrid and its one-view-less/more variants on an existing index (read only)."""
    home = Path(args.home)
    home.mkdir(parents=True, exist_ok=True)
    config = home / "view_modes.toml"
    config.write_text(VIEW_MODES)
    env = {**os.environ, "RAGFUNNEL_HOME": str(home), "PYTHONPATH": os.pathsep.join(sys.path)}
    rows = []
    for mode in args.modes.split(","):
        for question_set in ("direct", "reworded"):
            out = ragfunnel("eval", "friends", "--set", question_set, "--mode", mode, "--json", "--config", str(config),
                            "--index", args.index, env=env)
            data = json.loads(out.stdout)
            rows.append({"label": args.label, "mode": mode, "set": question_set, "recall@5": data["recall@5"]})
            print(json.dumps(rows[-1]), file=sys.stderr)
    Path(args.json).write_text(json.dumps(rows, indent=1))


def recall5(result: dict, question_set: str) -> float:
    data = result["recall@5"][question_set]
    return data.get("recall@5", data.get("metrics", {}).get("recall@5"))


def run_report(args) -> None:
    doc = header(args.title)
    if args.sample:
        sample = json.loads(Path(args.sample).read_text())
        doc += "\n## Encoder on a sample of chunk texts (length-sorted batches of 64, 2 ONNX threads)\n\n"
        doc += markdown_table(
            ["view", "texts", "weights", "max length", "texts/s", "tokens embedded", "cosine to fp32@256: mean", "p1", "min"],
            [[r["view"], r["texts"], r["precision"], r["max_length"], f"{r['per_s']:.1f}", r["tokens"],
              f"{r['cos_mean']:.4f}", f"{r['cos_p1']:.4f}", f"{r['cos_min']:.4f}"] for r in sample["rows"]])
    results = [json.loads((Path(args.root) / f"{n}.json").read_text()) for n in args.names.split(",")
               if (Path(args.root) / f"{n}.json").is_file()]
    newer = any("searchable_s" in r for r in results)  # builds run since issue 35: derived views, first search, dev
    late = any("late" in r for r in results)  # builds run since late chunking
    rows = []
    for r in results:
        row = [r["name"], "+".join(r["dense_views"])]
        row += [r.get("derived") or "-"] if newer else []
        row += [r.get("late") or "-"] if late else []
        stopped = not r["recall@5"] and r.get("first_search")  # --searchable-only: the build was stopped
        row += [r["encoder"], r["max_length"], "stopped" if stopped else f"{r['wall_s'] / 60:.1f}", f"{r['cpu_s'] / 60:.1f}",
                f"{r['cpu_s'] / 120:.1f}", f"{r['load_avg_1m']:.1f}", f"{r['index_bytes'] / 2**20:.0f}"]
        if newer:
            first = r.get("first_search")
            row += [f"{r['searchable_s']:.0f}" if r.get("searchable_s") is not None else "-",
                    f"{first['s']:.0f} ({first['mode']}, top {first['top']})" if first else "-"]
        row += [f"{recall5(r, s):.4f}" if s in r["recall@5"] else "-" for s in ("direct", "reworded")]
        row += [f"{recall5(r, 'dev'):.4f}" if "dev" in r["recall@5"] else "-"] if newer else []
        rows.append(row)
    doc += "\n## Full cold builds (`ragfunnel index` from an empty RAGFUNNEL_HOME; BM25 views scene, w3s1, utt)\n\n"
    columns = ["build", "dense views"] + (["derived views"] if newer else []) + (["read in context"] if late else []) + [
        "encoder", "max length", "wall min", "CPU min", "CPU min / 2 (idle 2-core estimate)",
        "load avg (1 min, max of start/end)", "index MiB"]
    columns += ["searchable after s", "first search done after s (mode, top scene)"] if newer else []
    columns += ["hybrid R@5 direct", "hybrid R@5 reworded"] + (["hybrid R@5 dev"] if newer else [])
    doc += markdown_table(columns, rows)
    views = [row for path in args.views for row in json.loads(Path(path).read_text())] if args.views else []
    if views:
        table: dict[tuple[str, str], dict[str, float]] = {}
        for row in views:
            table.setdefault((row["label"], row["mode"]), {})[row["set"]] = row["recall@5"]
        doc += "\n## What each dense view buys (hybrid = RRF k=10 over BM25 scene, w3s1, utt + the dense views named)\n\n"
        doc += markdown_table(["index", "mode", "recall@5 direct", "recall@5 reworded"],
                              [[label, mode, f"{r['direct']:.4f}", f"{r['reworded']:.4f}"] for (label, mode), r in table.items()])
    write_report(args.out, doc)


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="part", required=True)
    s = sub.add_parser("sample")
    s.add_argument("--n", type=int, default=5000)
    s.add_argument("--views", default="w3s1,utt,scene")
    s.add_argument("--json", required=True)
    b = sub.add_parser("build")
    b.add_argument("--name", required=True)
    b.add_argument("--root", required=True)
    b.add_argument("--dense", default="scene,w3s1,utt")
    b.add_argument("--encoder", default=DEFAULT_MODEL)
    b.add_argument("--max-length", type=int, default=256)
    b.add_argument("--hybrid", help="comma-separated retrievers of the hybrid mode (default: the product's)")
    b.add_argument("--derived", default="", help="derived views, e.g. w3s1=utt (default: none; windows encoded)")
    b.add_argument("--late", default="", help="views read in context (late chunking), e.g. utt (default: none)")
    b.add_argument("--defaults", action="store_true", help="the product's default store settings (ignores --dense, "
                   "--encoder, --max-length, --derived)")
    b.add_argument("--sets", default="direct,reworded", help="question sets to score hybrid on (add dev: 1,182)")
    b.add_argument("--question", default="Who did Rachel dump at the altar?", help="the search run once it is searchable")
    b.add_argument("--searchable-only", action="store_true", help="stop the build once the first search is done "
                   "(measures the time to a first search, not the whole build; no recall)")
    r = sub.add_parser("report")
    r.add_argument("--sample", help="the JSON `sample` wrote (its table first)")
    r.add_argument("--title", default="Friends cold build: dense views, int8 encoder, max length (issue 17: <= 5 min, "
                   "hybrid R@5 >= 0.54 / 0.56)")
    r.add_argument("--root", required=True)
    r.add_argument("--names", required=True)
    r.add_argument("--views", nargs="*", help="JSON files written by `views`")
    r.add_argument("--out")
    v = sub.add_parser("views")
    v.add_argument("--index", required=True)
    v.add_argument("--home", required=True, help="a scratch RAGFUNNEL_HOME (its embedding cache takes the questions)")
    v.add_argument("--label", required=True)
    v.add_argument("--modes", default="hybrid,hybrid_no_dense_utt,hybrid_no_dense_w3s1,hybrid_bm25_only")
    v.add_argument("--json", required=True)
    args = ap.parse_args()
    {"sample": run_sample, "build": run_build, "views": run_views, "report": run_report}[args.part](args)


if __name__ == "__main__":
    main()
