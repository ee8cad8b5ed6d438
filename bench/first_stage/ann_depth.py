"""HNSW search depth (ef) against exact search: recall@5 of the collapsed scene list and time per search.

    python bench/first_stage/ann_depth.py [--set dev] [--n 300]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ragfunnel.config import load_settings
from ragfunnel.embedding import shared_encoder
from ragfunnel.corpus.friends_questions import load_friends_set
from ragfunnel.evaluate.report import header, markdown_table, write_report
from ragfunnel.pipeline import Pipeline
from ragfunnel.types import Chunk


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", default="dev")
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--depth", type=int, default=300)
    ap.add_argument("--out")
    args = ap.parse_args()
    settings = load_settings()
    store = Pipeline(settings).store
    qs = load_friends_set(args.set, settings.friends_dir)[: args.n]
    vectors = shared_encoder().encode([q.text for q in qs])
    rows = []
    for view in store.settings.dense_views:
        for ef in (64, 128, 300, 600, 1200, "exact"):
            hits, overlap, secs = 0, [], []
            for q, v in zip(qs, vectors):
                t0 = time.perf_counter()
                res = store.search_dense(view, v, args.depth, ef=None if ef == "exact" else ef, exact=ef == "exact")
                secs.append(time.perf_counter() - t0)
                exact = store.search_dense(view, v, args.depth, exact=True)
                overlap.append(len({c for c, _ in res} & {c for c, _ in exact}) / max(len(exact), 1))
                parents = list(dict.fromkeys(Chunk.parent_of(c) for c, _ in res))[:5]
                hits += bool(set(q.gold) & set(parents))
            rows.append([view, ef, hits / len(qs), float(np.mean(overlap)), 1000 * float(np.median(secs))])
    doc = header(f"Dense ANN search depth (ef) vs exact search, {args.set}, depth {args.depth} chunks")
    doc += markdown_table(["view", "ef", "recall@5 (scenes)", f"overlap with exact top-{args.depth}", "p50 ms"], rows)
    write_report(args.out, doc)


if __name__ == "__main__":
    main()
