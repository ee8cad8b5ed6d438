"""The router's confusion matrix on held-out labelled questions (none of them in its training examples):

- lookup: the FriendsQA dev questions of the other half of dev scenes (bench/query/route_examples.py's split;
  never a friends-rag sample question) and the lookups of bench/query/route_heldout.tsv;
- aggregate: bench/query/route_heldout.tsv and the questions of bench/query/aggregate_dev.jsonl;
- out_of_scope: src/ragfunnel/generate/out_of_scope.txt (the answer evaluation's off-topic set).

    python bench/query/router_eval.py [--data /work/shared/data] [--out docs/results/query/router.md]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from route_examples import ROOT, dev_questions, lines, train_half  # noqa: E402

from ragfunnel.corpus.friends import FriendsCorpus  # noqa: E402
from ragfunnel.evaluate.report import header, markdown_table, write_report  # noqa: E402
from ragfunnel.query.router import Router  # noqa: E402

LABELS = ("lookup", "aggregate", "out_of_scope")


def held_out(data: Path) -> list[tuple[str, str, str]]:
    """(label, question, source)"""
    rows = [("lookup", " ".join(q["question"].split()), "FriendsQA dev (held-out half)")
            for q in dev_questions(data) if not train_half(q["gold_scene_ids"][0])]
    for line in lines(HERE / "route_heldout.tsv"):
        label, _, q = line.partition("\t")
        rows.append((label, q, "route_heldout.tsv"))
    agg = HERE / "aggregate_dev.jsonl"
    if agg.is_file():
        rows += [("aggregate", json.loads(s)["question"], "aggregate_dev.jsonl") for s in agg.read_text().splitlines() if s.strip()]
    rows += [("out_of_scope", q, "out_of_scope.txt") for q in lines(ROOT / "src" / "ragfunnel" / "generate" / "out_of_scope.txt")]
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=Path("/work/shared/data"))
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    router = Router(FriendsCorpus(args.data / "friends").route_examples)
    t = time.perf_counter()
    router.model
    train_s = time.perf_counter() - t
    rows = held_out(args.data)
    confusion: Counter = Counter()
    by_source: Counter = Counter()
    wrong = []
    t = time.perf_counter()
    for label, q, source in rows:
        route = router.route(q)
        confusion[label, route.path] += 1
        by_source[source, route.path == label] += 1
        if route.path != label:
            wrong.append((label, route.path, route.reason, q))
    per_q_ms = (time.perf_counter() - t) / len(rows) * 1000
    table = [[f"**{g}**", *[confusion[g, p] for p in LABELS], sum(confusion[g, p] for p in LABELS),
              f"{confusion[g, g] / max(sum(confusion[g, p] for p in LABELS), 1):.3f}"] for g in LABELS]
    dev_total = by_source["FriendsQA dev (held-out half)", True] + by_source["FriendsQA dev (held-out half)", False]
    dev_ok = by_source["FriendsQA dev (held-out half)", True]
    text = header("Router: confusion matrix on held-out questions") + (
        f"Load average at start: {Path('/proc/loadavg').read_text().split()[0]}. Classifier trained on "
        f"{len(router.model.labels) and sum(1 for _ in open(router.examples)) - 1} examples in {train_s:.2f} s; "
        f"routing {per_q_ms:.2f} ms per question.\n\n"
        "Rows: gold label; columns: the path the router chose (scoped counts as lookup: same path, with a filter).\n\n"
        + markdown_table(["gold \\ routed", *LABELS, "n", "recall"], table)
        + f"\nFriendsQA dev lookups (held-out half, no sample question) routed to lookup: **{dev_ok}/{dev_total} = "
        f"{dev_ok / dev_total:.3f}** (target >= 0.95).\n\n"
        + markdown_table(["measure", "value"], [
            ["dev lookups routed to lookup", dev_ok / dev_total],
            *[[f"{g} recall", confusion[g, g] / max(sum(confusion[g, p] for p in LABELS), 1)] for g in LABELS],
        ]) + "\n"
        + "Misrouted:\n\n" + markdown_table(["gold", "routed", "why", "question"], [list(w) for w in wrong])
    )
    write_report(args.out, text)


if __name__ == "__main__":
    main()
