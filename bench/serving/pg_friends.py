"""The Friends index on PostgreSQL against the embedded store it was copied from (`ragfunnel migrate`).

    ragfunnel db start --dir DIR --port PORT            # prints DSN
    ragfunnel migrate --from embedded --to postgres --dsn DSN
    python bench/serving/pg_friends.py --dsn DSN --out docs/results/serving/postgres_friends.md

Reports, for both stores: hybrid recall@5 (and MRR@10) on the Direct and Reworded sets; the overlap of the BM25
top 10 (chunk ids, per sparse view, and scenes of the `bm25` mode) on the 800 sample questions; p50 / p90 ms of
BM25 and vector searches of the store (the depths and settings the hybrid mode uses) and of whole hybrid searches.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from ragfunnel.config import load_settings
from ragfunnel.evaluate.report import header, markdown_table, write_report
from ragfunnel.evaluate.runner import metrics_for, run_modes
from ragfunnel.corpus import question_set
from ragfunnel.pipeline import Pipeline
from ragfunnel.embedding import shared_encoder
from ragfunnel.store.base import EXACT_SCAN_BELOW


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def timed(fn, *args, **kwargs) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return (time.perf_counter() - t0) * 1000, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dsn", required=True)
    ap.add_argument("--index", help="the embedded index (default: the home's)")
    ap.add_argument("--sets", default="direct,reworded")
    ap.add_argument("--mode", default="hybrid")
    ap.add_argument("--n-latency", type=int, default=200)
    ap.add_argument("--limit", type=int, help="only the first N questions of each set (a smoke run)")
    ap.add_argument("--dense-ann", action="store_true", help="dense retrievers search HNSW (exact = false) on both stores")
    ap.add_argument("--skip-overlap", action="store_true", help="leave out the BM25 overlap (unchanged by --dense-ann)")
    ap.add_argument("--out")
    args = ap.parse_args()
    os.environ.pop("RAGFUNNEL_DSN", None)
    embedded = load_settings(index=Path(args.index) if args.index else None)
    if args.dense_ann:
        for spec in embedded.retrievers.values():
            if spec.kind == "dense":
                spec.exact = False
    postgres = embedded.model_copy(update={"backend": "postgres", "dsn": args.dsn})
    pipes = {"embedded": Pipeline(embedded), "postgres": Pipeline(postgres)}
    infos = {name: p.store.info() for name, p in pipes.items()}
    load_start = os.getloadavg()[0]

    # recall
    recall_rows = []
    for set_name in args.sets.split(","):
        row = [set_name]
        values = {}
        for name, pipe in pipes.items():
            questions = question_set(pipe.corpus, set_name)[: args.limit]
            run = next(iter(run_modes(pipe, questions, [args.mode]).values()))
            m = metrics_for(run, questions)
            values[name] = m
            row += [f"{m['recall@5']:.4f}", f"{m['mrr@10']:.4f}"]
        row.append(f"{values['postgres']['recall@5'] - values['embedded']['recall@5']:+.4f}")
        recall_rows.append(row)
        print(row, flush=True)

    # BM25 overlap on the 800 sample questions
    sample = [json.loads(line)["question"] for line in
              (embedded.friends_dir / "friends_rag_eval_sample.jsonl").read_text().splitlines() if line.strip()]
    sample = sample[: args.limit]
    overlap_rows = []
    stores = {name: p.store for name, p in pipes.items()}
    for view in ([] if args.skip_overlap else embedded.store.sparse_views):
        overlaps, exact = [], 0
        for q in sample:
            a = [c for c, _ in stores["embedded"].search_sparse(view, q, 10)]
            b = [c for c, _ in stores["postgres"].search_sparse(view, q, 10)]
            overlaps.append(len(set(a) & set(b)) / max(len(a), len(b)) if a or b else 1.0)  # both empty: agree
            exact += a == b
        overlap_rows.append([f"BM25 chunks, view {view}", len(sample), f"{statistics.mean(overlaps):.4f}",
                             f"{min(overlaps):.2f}", f"{exact / len(sample):.3f}"])
        print(overlap_rows[-1], flush=True)
    overlaps, exact = [], 0
    for q in ([] if args.skip_overlap else sample):
        a, b = ([c.doc_id for c in pipes[n].search(q, mode="bm25", k=10).candidates] for n in ("embedded", "postgres"))
        overlaps.append(len(set(a) & set(b)) / max(len(a), len(b)) if a or b else 1.0)  # both empty: agree
        exact += a == b
    if overlaps:
        overlap_rows.append(["scenes of mode bm25", len(sample), f"{statistics.mean(overlaps):.4f}",
                             f"{min(overlaps):.2f}", f"{exact / len(sample):.3f}"])
        print(overlap_rows[-1], flush=True)

    # latency
    mode = embedded.modes[args.mode]
    questions = sample[: args.n_latency]
    latency_rows = []
    for name, pipe in pipes.items():
        store = pipe.store
        for q in questions[:10]:  # warm-up
            pipe.search(q, mode=args.mode, k=10)
        vectors = shared_encoder(embedded.store.encoder, embedded.store.max_length).encode(questions)
        for rname in mode.retrievers:
            spec = embedded.retrievers[rname]
            if spec.kind == "bm25":
                times = [timed(store.search_sparse, spec.view, q, spec.depth)[0] for q in questions]
            else:
                exact = spec.exact if spec.exact is not None else store.count_dense(spec.view) <= EXACT_SCAN_BELOW
                times = [timed(store.search_dense, spec.view, v, spec.depth, ef=spec.ef, exact=exact)[0] for v in vectors]
                rname = f"{rname} ({'exact' if exact else f'HNSW ef={spec.ef}'})"
            latency_rows.append([name, rname, len(times), f"{statistics.median(times):.2f}",
                                 f"{percentile(times, 0.9):.2f}", f"{percentile(times, 0.99):.2f}"])
            print(latency_rows[-1], flush=True)
        times = [timed(pipe.search, q, mode=args.mode, k=10)[0] for q in questions]
        latency_rows.append([name, f"whole {args.mode} search (embedding, 5 retrievers, fusion)", len(times),
                             f"{statistics.median(times):.2f}", f"{percentile(times, 0.9):.2f}",
                             f"{percentile(times, 0.99):.2f}"])
        print(latency_rows[-1], flush=True)
    load_end = os.getloadavg()[0]
    info = infos["embedded"]
    text = header("The Friends index on PostgreSQL + pgvector vs the embedded store") + f"""
Embedded index: {embedded.index_location} ({info.documents:,} documents, chunks {info.chunks}, fingerprint
{info.fingerprint}); PostgreSQL copy made by `ragfunnel migrate --from embedded --to postgres` (vectors copied,
nothing re-embedded; fingerprint {infos['postgres'].fingerprint}), PostgreSQL 18.6 + pgvector 0.8.6 from the
`postgres` extra (`ragfunnel db start`) on the same machine. Load average of the shared machine: {load_start:.1f} at
the start, {load_end:.1f} at the end (2 cores).

## Hybrid retrieval quality (mode {args.mode}{", dense retrievers on HNSW (exact = false, ef as configured)" if args.dense_ann else ""})

{markdown_table(["set", "embedded recall@5", "embedded MRR@10", "postgres recall@5", "postgres MRR@10", "difference recall@5"], recall_rows)}

## BM25 agreement on the 800 sample questions (top 10)

{markdown_table(["what", "questions", "mean overlap", "lowest overlap", "identical lists"], overlap_rows)}

The embedded BM25 is tantivy's, which stores a chunk's length in one byte (lengths of 24+ terms rounded down
by up to 1/8); PostgreSQL scores exact lengths with the same analyzer, k1 = 1.2, b = 0.75 and Lucene's IDF.

## Latency (ms, {len(questions)} sample questions after 10 warm-up searches)

{markdown_table(["store", "what", "queries", "p50", "p90", "p99"], latency_rows)}

Store calls at the depths of the hybrid mode's retrievers (BM25: 100 scenes, 300 windows / lines; vectors: 300,
exact below 200k vectors as the retrievers do). A PostgreSQL store is one connection per process over TCP on
127.0.0.1.
"""
    write_report(args.out, text)


if __name__ == "__main__":
    main()
