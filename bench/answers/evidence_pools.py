"""Dump the evidence selector's pools once, so selector designs can be compared offline on the same questions.

For every question of the training split (FriendsQA dev minus the 800 sample questions and their paraphrases;
`train` part and `holdout` part, split by gold scene, seed 13) it retrieves the top `--parents` parents with
`--mode`, computes the selector's feature rows (generate/evidence.py) and stores, per unit: its id, its parent's
rank, its rendered text and that of its neighbours, whether it is a gold answer utterance and whether its rendered
text holds a gold answer span. Output: one pickle (a list of dicts, one per question), read by
bench/answers/evidence_designs.py.

    python bench/answers/evidence_pools.py OUT.pkl [--mode hybrid] [--parents 20] [--index DIR] [--train-limit N]
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
from pathlib import Path

from ragfunnel.config import load_settings
from ragfunnel.corpus.friends_questions import training_split
from ragfunnel.generate.evaluate import contains_span
from ragfunnel.generate.evidence import EvidenceSelector
from ragfunnel.pipeline import Pipeline
from ragfunnel.questions import answer_unit_ids


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--mode", default="hybrid")
    ap.add_argument("--parents", type=int, default=20)
    ap.add_argument("--index", type=Path, default=None)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--train-limit", type=int, default=None, help="only every n-th training question, to keep N (CPU)")
    args = ap.parse_args()
    settings = load_settings(index_dir=args.index) if args.index else load_settings()
    split = training_split(Path(settings.friends_dir), args.seed)
    train = split.train
    if args.train_limit and len(train) > args.train_limit:
        step = len(train) / args.train_limit
        train = [train[int(i * step)] for i in range(args.train_limit)]
    cases = [(q, "holdout") for q in split.holdout] + [(q, "train") for q in train]
    pipeline = Pipeline(settings)
    selector = EvidenceSelector(pipeline.store, parents=args.parents)
    out, t0 = [], time.time()
    for n, (q, part) in enumerate(cases, 1):
        search = pipeline.search(q.text, args.mode, k=args.parents)
        t = time.perf_counter()
        pool = selector.pool(selector.context(search.question), search.candidates)
        pool_ms = (time.perf_counter() - t) * 1000
        gold = answer_unit_ids(q)
        spans = [a for a in q.answers if a]
        units = []
        for p, i in pool.keys:
            doc = pool.docs[p]
            u = doc.units[i]
            units.append({
                "id": u.unit_id, "doc": doc.doc_id, "p": p, "i": i, "rank": pool.candidates[p].rank,
                "text": u.render(), "speakers": list(u.speakers), "direction": u.is_direction,
                "prev": doc.units[i - 1].render() if i > 0 else "",
                "next": doc.units[i + 1].render() if i + 1 < len(doc.units) else "",
                "gold": u.unit_id in gold, "span": contains_span(u.render(), spans),
            })
        out.append({"qid": q.qid, "part": part, "question": q.text, "gold_scenes": list(q.gold), "gold_units": sorted(gold),
                    "answers": spans, "x": pool.x, "units": units, "pool_ms": pool_ms})
        if n % 50 == 0:
            print(f"{n}/{len(cases)} {time.time() - t0:.0f}s", file=sys.stderr, flush=True)
    pipeline.close()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("wb") as fh:
        pickle.dump(out, fh)
    print(f"{len(out)} questions -> {args.out} in {time.time() - t0:.0f}s", file=sys.stderr)


if __name__ == "__main__":
    main()
