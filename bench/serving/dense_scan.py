"""How the embedded store searches a dense view: speed of each way, and how much of the exact top list each finds.

    python bench/serving/dense_scan.py [--set direct] [--n 200] [--depth 300] [--out docs/results/serving/dense_scan.md]

For every dense view of the index with at least `SCAN_HELD_FROM` vectors and `--n` questions of a FriendsQA set
(each embedded once, before timing): usearch's exact search (`exact=True`, and the default dense retrievers' way
before the projection), numkong's f16 dot product over the whole held copy (a pool that holds every vector), the
projected scan with rescoring pools of 1,000 / 2,000 / 4,000 (the default dense retrievers' way now: `pool` 2,000),
and the HNSW graph at ef 600. Per way: p50 / p90 ms of one search of `--depth`
neighbours (one thread, the views searched in turn as a query does) and the share of the exact top `--depth` it
returns. The views' ways are timed in rounds over the questions, so that each scan meets the caches a query meets.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from ragfunnel.config import load_settings
from ragfunnel.embedding import shared_encoder
from ragfunnel.corpus.friends_questions import load_friends_set
from ragfunnel.evaluate.report import header, markdown_table, write_report
from ragfunnel.store import embedded, open_store
from ragfunnel.embedding import EmbeddingCache


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", default="direct")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--depth", type=int, default=300)
    ap.add_argument("--out")
    args = ap.parse_args()
    settings = load_settings()
    store = open_store(settings.index_location, EmbeddingCache(settings.cache_path), backend_name="embedded")
    encoder = shared_encoder(store.settings.encoder, store.settings.max_length)
    questions = [q.text for q in load_friends_set(args.set, settings.friends_dir)][: args.n]
    vectors = encoder.encode(questions)
    views = [v for v in store.settings.dense_views if store.count_dense(v) >= embedded.SCAN_HELD_FROM]

    def usearch_exact(view, v):
        return store.search_dense(view, v, args.depth, exact=True)

    ways = {
        "usearch exact (exact=True; the default before)": usearch_exact,
        "numkong f16, every vector": lambda view, v: store.search_dense(view, v, args.depth, exact=True, pool=10**9),
        **{f"projected, pool {p:,}" + (" (default)" if p == 2000 else ""):
           (lambda view, v, p=p: store.search_dense(view, v, args.depth, exact=True, pool=p)) for p in (1000, 2000, 4000)},
        "HNSW ef 600": lambda view, v: store.search_dense(view, v, args.depth, ef=600),
    }
    for view in views:  # the held copies and projections are made once, as a server's warm-up makes them
        for way in ways.values():
            way(view, vectors[0])
    exact = {view: [{c for c, _ in usearch_exact(view, v)} for v in vectors] for view in views}
    times: dict[tuple[str, str], list[float]] = {(view, w): [] for view in views for w in ways}
    found: dict[tuple[str, str], list[float]] = {(view, w): [] for view in views for w in ways}
    for name, way in ways.items():
        for i, v in enumerate(vectors):
            for view in views:
                t0 = time.perf_counter()
                hits = way(view, v)
                times[(view, name)].append((time.perf_counter() - t0) * 1000)
                found[(view, name)].append(len({c for c, _ in hits} & exact[view][i]) / max(1, len(exact[view][i])))
    rows = []
    for view in views:
        for name in ways:
            t = sorted(times[(view, name)])
            rows.append([view, f"{store.count_dense(view):,}", name, round(statistics.median(t), 2),
                         round(t[int(0.9 * (len(t) - 1))], 2), round(statistics.mean(found[(view, name)]), 4)])
    store.close()
    text = header("Dense search of the embedded store: each way's speed and its share of the exact top list")
    text += (f"{len(vectors)} {args.set} questions, {args.depth} neighbours a search, one thread; load average (1 min) at "
             f"the end: {os.getloadavg()[0]:.2f}. `found` = the share of usearch's exact top {args.depth} the way returns.\n\n")
    text += markdown_table(["view", "vectors", "way", "p50 ms", "p90 ms", f"found of exact top {args.depth}"], rows)
    write_report(args.out, text)


if __name__ == "__main__":
    main()
