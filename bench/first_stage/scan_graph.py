"""What the HNSW graph of a scanned view costs and finds (issue 35): a dense view of at most EXACT_SCAN_BELOW vectors is
searched by exact scan, so the store builds its graph at SCANNED_VIEW_EXPANSION_ADD instead of the settings'
`hnsw_expansion_add`. This builds graphs over one view's stored vectors at several expansions and reports the time
to add them (2 threads) and, for searches that ask for the graph anyway (`exact = false`), the share of the exact top
50 that a graph search at ef 64 and 600 finds, over queries made from the view's own vectors plus noise.

    python bench/first_stage/scan_graph.py --index ~/.ragfunnel/index --view w3s1 --expansions 16,32,48,128 \
        --out docs/results/first_stage/scan_graph.md
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

from ragfunnel.evaluate.report import header, markdown_table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--index", type=Path, default=Path("~/.ragfunnel/index"))
    ap.add_argument("--view", default="w3s1")
    ap.add_argument("--expansions", default="16,32,48,128")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    import onnxruntime  # noqa: F401  (before usearch: see store/embedded.py)
    from usearch.index import Index, MetricKind
    from usearch.index import search as exact_search

    stored = Index(ndim=384, metric="cos", dtype="f16")
    stored.load(str(args.index.expanduser() / "vectors" / f"{args.view}.usearch"))
    keys = np.asarray(stored.keys[:], dtype=np.uint64)
    vectors = np.vstack(stored.get(keys))
    rng = np.random.default_rng(1)
    queries = vectors[rng.choice(len(vectors), args.queries, replace=False)].astype(np.float32)
    queries += 0.05 * rng.standard_normal(queries.shape).astype(np.float32)
    truth = [set(keys[np.asarray(exact_search(vectors, q.astype(vectors.dtype), 50, MetricKind.Cos, exact=True).keys)
                      ].tolist()) for q in queries]
    rows = []
    for expansion in (int(e) for e in args.expansions.split(",")):
        graph = Index(ndim=384, metric="cos", dtype="f16", connectivity=16, expansion_add=expansion)
        t0, c0 = time.perf_counter(), time.process_time()
        for i in range(0, len(keys), 4096):
            graph.add(keys[i : i + 4096], vectors[i : i + 4096], threads=2)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        found = []
        for ef in (64, 600):
            graph.expansion_search = ef
            found.append(np.mean([len(set(np.asarray(graph.search(q, 50).keys).tolist()) & t) / 50
                                  for q, t in zip(queries, truth)]))
        rows.append([expansion, len(keys), f"{wall:.1f}", f"{cpu:.1f}", f"{found[0]:.4f}", f"{found[1]:.4f}"])
    command = "python " + " ".join([os.path.relpath(__file__), *sys.argv[1:]])
    doc = header(f"The HNSW graph of a scanned view ({args.view}): time to build it and what a graph search finds",
                 command)
    doc += (f"\nIndex {args.index}, view {args.view}; {args.queries} queries (stored vectors plus Gaussian noise of "
            "0.05 a dimension); found = the share of the exact top 50 (usearch's exact search) in a graph search's "
            "top 50. connectivity 16, f16.\n\n")
    doc += markdown_table(["expansion_add", "vectors", "add wall s", "add CPU s", "found@50, ef 64", "found@50, ef 600"],
                          rows) + "\n"
    if args.out:
        args.out.write_text(doc)
    print(doc)


if __name__ == "__main__":
    main()
