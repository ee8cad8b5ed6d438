"""What the packed postings cost a write: one-document syncs on a PostgreSQL index, with and without repacking.

    python bench/serving/pg_write_cost.py --location DSN#scale_1000000 --cache CACHE [--syncs 6]
        [--out docs/results/serving/postgres_write_cost.md]

Upserts `--syncs` documents of the generated corpus (`g0000000`, ... : `ragfunnel bench scale` builds them), one
`apply` each, with a short Friends-like text (common terms: each touches ~20 buckets of common terms' postings),
three rounds: with the packed postings repacked (the store as it is), without (the write as it was before the
packed postings: the blocks then hold stale postings), and with again (the blocks repacked whole). The index is
left consistent. Reports the median and max seconds per sync of each round.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from ragfunnel.embedding import EmbeddingCache
from ragfunnel.evaluate.report import header, markdown_table, write_report
from ragfunnel.store.postgres import PostgresStore, open_postgres
from ragfunnel.types import Document, Unit

TEXTS = ["Oh, I know, I just, you know, I think Ross is going to get Rachel a coffee at Central Perk, okay?",
         "Joey, what are you doing here? Well, I came to see if Chandler wants to go out, right now, yeah."]


def syncs(store: PostgresStore, n: int) -> list[float]:
    seconds = []
    for i in range(n):
        doc = Document(f"g{i:07d}", "", (Unit(f"g{i:07d}:1", f"{TEXTS[i % 2]} #{i}"),), {"group": i % 100})
        t = time.perf_counter()
        store.apply([doc])
        seconds.append(time.perf_counter() - t)
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--location", required=True, help="DSN#schema of an index of the generated corpus")
    ap.add_argument("--cache", type=Path, required=True, help="the generated corpus's embedding cache")
    ap.add_argument("--syncs", type=int, default=6)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    store = open_postgres(args.location, EmbeddingCache(args.cache), check_encoder=False)
    chunks = sum(store.count_chunks(v) for v in store.settings.views)
    rows = []
    repack = PostgresStore._repack
    for label, packed in (("repacked", True), ("not repacked (the write before packed postings)", False),
                          ("repacked", True)):
        PostgresStore._repack = repack if packed else (lambda self, blocks: None)
        seconds = syncs(store, args.syncs)
        rows.append([label, args.syncs, round(statistics.median(seconds), 3), round(max(seconds), 3)])
        print(rows[-1], file=sys.stderr)
    PostgresStore._repack = repack
    store.close()
    text = header("PostgreSQL: one-document syncs with and without repacking the packed postings") + (
        f"\nIndex: `{args.location.split('#')[-1]}`, {chunks:,} chunks. Rounds in order; each sync is one `apply` "
        "(one transaction) upserting one generated document with a short text of common terms.\n\n"
        + markdown_table(["postings", "syncs", "median s", "max s"], rows) + "\n")
    write_report(args.out, text)


if __name__ == "__main__":
    main()
