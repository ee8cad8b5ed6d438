"""Does a third kind of retriever add to the hybrid first stage? Reciprocal-rank fusion of the index's hybrid order
(top 100) with the rankings of bench/first_stage/extra_retrievers.py (splade-tiny, e5-small), weights chosen on the hold-out.

    python bench/first_stage/extra_fusion.py extra_rankings.json [--mode hybrid|accurate]

`accurate`: the installed reranker's order of the top 20 (its hold-out rows are in-sample: it was fit there).
"""
import itertools
import json
import sys

from ragfunnel.config import load_settings
from ragfunnel.corpus.friends_questions import load_friends_set, training_split
from ragfunnel.pipeline import Pipeline

extra = json.load(open(sys.argv[1]))
mode = sys.argv[sys.argv.index("--mode") + 1] if "--mode" in sys.argv else "hybrid"
settings = load_settings()
pipeline = Pipeline(settings)
split = training_split(settings.friends_dir)
questions = {"holdout": split.holdout, "direct": load_friends_set("direct", settings.friends_dir),
             "reworded": load_friends_set("reworded", settings.friends_dir)}
K = 60


def recall(lists, golds, k=5):
    return sum(bool(set(lst[:k]) & g) for lst, g in zip(lists, golds)) / len(golds)


def fuse(base, others, weights):
    score: dict[str, float] = {}
    for r, s in enumerate(base):
        score[s] = score.get(s, 0) + 1 / (K + r + 1)
    for ranking, w in zip(others, weights):
        for r, s in enumerate(ranking):
            score[s] = score.get(s, 0) + w / (K + r + 1)
    return sorted(score, key=lambda s: -score[s])


data = {}
for name, qs in questions.items():
    by_id = {q.qid: q for q in qs}
    ids = extra["sets"][name]
    base = [[c.doc_id for c in pipeline.search(by_id[i].text, mode, k=100).candidates] for i in ids]
    others = {r: [[s for s, _ in rk] for rk in extra["rankings"][r][name]] for r in extra["rankings"]}
    data[name] = (base, others, [set(by_id[i].gold) for i in ids])
names = list(extra["rankings"])
grid = [0.0, 0.25, 0.5, 0.75, 1.0]
rows = []
for ws in itertools.product(grid, repeat=len(names)):
    row = {"weights": dict(zip(names, ws))}
    for set_name, (base, others, golds) in data.items():
        fused = [fuse(b, [others[r][i] for r in names], ws) for i, b in enumerate(base)]
        row[set_name] = (round(recall(fused, golds, 5), 3), round(recall(fused, golds, 20), 3))
    rows.append(row)
rows.sort(key=lambda r: -r["holdout"][0])
print(f"mode {mode}: recall@5, recall@20 (rows by hold-out recall@5; first row of weights 0 = {mode} alone)")
for r in [x for x in rows if not any(x["weights"].values())] + rows[:12]:
    print(r)
