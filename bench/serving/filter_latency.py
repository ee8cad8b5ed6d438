"""Search latency with metadata filters (applied inside the index), and whether k results still come back.

    python bench/serving/filter_latency.py --filter "" --filter "season=8" --filter "id=s08_e16_*" [--set dev]
    python bench/serving/filter_latency.py --collection NAME --questions queries.jsonl --filter "year=2019" ...
    python bench/serving/filter_latency.py --make-folder DIR --from corpus.jsonl   # a folder to index first

A filter is one or more `--filter` expressions joined by ';' ("" = no filter). For each: the documents it admits
(and their share of the index), p50 / p90 / p99 ms of `--n` searches after a warm-up of 10 (each question embedded
afresh), the first search after the store forgot every filter (`cold`: the filter resolved from SQLite), and the
fewest results any question got (k whenever k documents match).

`--make-folder` writes the documents of a BEIR corpus.jsonl as Markdown files with front matter, spread over
folders, so a folder collection has fields to filter on: `part` folders (`path=part03/*`: 10%), `year`
(2000 + n % 25: 4% a year), `reviewed` (a date in 2019-2020), and the heading `Methods` over every fifth
document's text (`section=Methods`: 20%, a unit-level fact).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import time
from pathlib import Path

from ragfunnel.config import load_settings
from ragfunnel.corpus.friends_questions import load_friends_set
from ragfunnel.evaluate.report import header, markdown_table, write_report
from ragfunnel.pipeline import Pipeline
from ragfunnel.retrieve.dense import embed_query
from ragfunnel.store.filters import Filter


def make_folder(target: Path, corpus: Path) -> int:
    n = 0
    with corpus.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh):
            record = json.loads(line)
            reviewed = dt.date(2019, 1, 1) + dt.timedelta(days=(n * 37) % 730)
            heading = "## Methods\n\n" if n % 5 == 0 else ""  # a heading is a unit of its own: on a fifth only
            title = " ".join((record.get("title") or record["_id"]).split()).replace('"', "'")
            text = (f'---\ntitle: "{title}"\nyear: {2000 + n % 25}\nreviewed: {reviewed.isoformat()}\n---\n\n'
                    f"{heading}{record['text'].strip()}\n")
            path = target / f"part{n % 10:02d}" / f"{record['_id']}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    return n + 1


def read_questions(args: argparse.Namespace, settings) -> list[str]:
    if args.questions:
        lines = Path(args.questions).read_text(encoding="utf-8").splitlines()
        records = [json.loads(line) for line in lines if line.strip()]
        return [r.get("question") or r["text"] for r in records][: args.n]
    return [q.text for q in load_friends_set(args.set, settings.friends_dir)[: args.n]]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--filter", action="append", default=[], help="';'-joined expressions; '' for none (repeatable)")
    ap.add_argument("--collection")
    ap.add_argument("--index")
    ap.add_argument("--set", default="dev", help="Friends question set (without --questions)")
    ap.add_argument("--questions", help="JSONL with a question or text field per line")
    ap.add_argument("--mode", default="hybrid")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--out")
    ap.add_argument("--make-folder")
    ap.add_argument("--from", dest="source")
    args = ap.parse_args()
    if args.make_folder:
        print(f"{make_folder(Path(args.make_folder), Path(args.source))} files written to {args.make_folder}")
        return
    settings = load_settings(index=Path(args.index) if args.index else None, collection=args.collection)
    pipeline = Pipeline(settings)
    store = pipeline.store
    questions = read_questions(args, settings)
    total = len(store.doc_ids())
    pipeline.warm_up([args.mode])
    load_before = os.getloadavg()[0]
    rows = []
    for spec in args.filter or [""]:
        where = Filter.parse([e for e in spec.split(";") if e.strip()])
        store._filters.clear()  # noqa: SLF001 - the bench measures the first search of a filter, uncached
        store._held = {}  # noqa: SLF001 - and of the vectors held for filtered scans
        embed_query.cache_clear()
        t0 = time.perf_counter()
        pipeline.search(questions[0], args.mode, k=args.k, where=where)
        cold = (time.perf_counter() - t0) * 1000
        matching = store.count_matching(where) if where else total
        for q in questions[:10]:
            pipeline.search(q + " warmup", args.mode, k=args.k, where=where)
        embed_query.cache_clear()  # every row pays for its query embeddings, as a first search of a question does
        times, fewest = [], args.k
        for q in questions:
            t0 = time.perf_counter()
            result = pipeline.search(q, args.mode, k=args.k, where=where)
            times.append((time.perf_counter() - t0) * 1000)
            fewest = min(fewest, len(result.candidates))
        qtl = statistics.quantiles(times, n=100)
        rows.append([where.describe() if where else "(none)", matching, f"{100 * matching / max(total, 1):.1f}%",
                     len(times), statistics.median(times), qtl[89], qtl[98], cold, fewest])
        print(rows[-1], flush=True)
    info = store.info()
    doc = header(f"Search latency with metadata filters, mode {args.mode}, k = {args.k}")
    doc += (f"Index: {settings.index_dir} ({info.documents:,} documents, chunks {info.chunks}, fingerprint "
            f"{info.fingerprint}); questions: {args.questions or 'Friends ' + args.set}, first {len(questions)}. "
            f"Load average of the shared machine: {load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end "
            f"(2 cores: above 2, other jobs slow every row alike).\n\n")
    doc += markdown_table(["filter", "documents", "share", "queries", "p50 ms", "p90 ms", "p99 ms", "cold ms",
                           f"fewest results (k={args.k})"], rows)
    write_report(args.out, doc)


if __name__ == "__main__":
    main()
