"""Grid over fusion rules on the pickled per-retriever lists of bench/first_stage/tune_first_stage.py --part lists."""

from __future__ import annotations

import itertools
import json
import pickle
import sys

from ragfunnel.evaluate.metrics import summarize, union_coverage
from ragfunnel.retrieve.fusion import QueryAwareRRFFuser, RRFFuser, ScoreFuser

data = pickle.load(open("/tmp/ragfunnel_lists.pkl", "rb"))
KINDS = {n: ("sparse" if n.startswith("bm25") else "dense") for n in next(iter(data["lists"].values()))}


def evaluate(fuser, names, set_name, depth=None):
    lists, golds, idfs = data["lists"][set_name], data["gold"][set_name], data["idf"][set_name]
    ranked = []
    for i in range(len(golds)):
        per = {n: lists[n][i][:depth] if depth else lists[n][i] for n in names}
        ranked.append([c.doc_id for c in fuser.fuse(per, KINDS, idfs[i])[:50]])
    m = summarize(list(zip(ranked, golds)))
    m["recall@50"] = union_coverage([ranked], golds, 50)
    return m


def row(label, fuser, names, sets=("dev",), depth=None):
    out = {"label": label}
    for s in sets:
        m = evaluate(fuser, names, s, depth)
        out.update({f"{s}_r5": round(m["recall@5"], 4), f"{s}_r1": round(m["recall@1"], 4), f"{s}_r50": round(m["recall@50"], 4)})
    print(json.dumps(out), flush=True)
    return out


if __name__ == "__main__":
    sets = tuple(sys.argv[1].split(",")) if len(sys.argv) > 1 else ("dev",)
    names = list(KINDS)
    for n in names:
        row(n, RRFFuser(60), [n], sets)
    for combo in [("bm25_scene", "dense_w3s1"), ("bm25_scene", "bm25_w3s1", "dense_w3s1"),
                  ("bm25_scene", "dense_scene", "dense_w3s1", "dense_utt"), tuple(names)]:
        combo = [c for c in combo if c in names]
        for k in (10, 30, 60, 120):
            row(f"rrf k={k} {'+'.join(combo)}", RRFFuser(k), combo, sets)
    pair = ["bm25_scene", "dense_w3s1"]
    for w in (0.5, 0.6, 0.7):
        row(f"rrf weighted bm25={w} pair", RRFFuser(60, {"bm25_scene": w, "dense_w3s1": 1 - w}), pair, sets)
    for lo, hi, wl, wh in [(2, 5, 0.2, 0.8), (3, 6, 0.3, 0.8), (3, 6, 0.4, 0.7), (4, 7, 0.3, 0.8)]:
        row(f"query_aware {lo}-{hi} {wl}-{wh} pair", QueryAwareRRFFuser(60, None, lo, hi, wl, wh), pair, sets)
    for w, b in itertools.product((0.4, 0.5, 0.6), (0.0, 0.1, 0.2)):
        row(f"score bm25={w} bonus={b} pair", ScoreFuser({"bm25_scene": w, "dense_w3s1": 1 - w}, b), pair, sets)
