"""LambdaMART with evidence from retrievers the index does not have (bench/first_stage/extra_retrievers.py: splade-tiny,
e5-small): for each candidate of the hybrid top 20, its rank (101 when absent) and score in each extra ranking.
Fit on the hold-out with cross-validation like `ragfunnel train reranker` on the tuned index, with and without the
extra columns; recall@5 out of fold on the hold-out, and of the final model on Direct and Reworded.

    python bench/rerank/extra_ltr.py extra_rankings.json [synthetic_questions.json]

With the synthetic questions (`[{"id", "q", "gold"}]`, ranked by extra_retrievers.py as the set "synthetic"),
LambdaMART is also fit on them (early-stopped on the hold-out), with and without the extra columns.
"""
import json
import sys
import tempfile
from pathlib import Path

import lightgbm as lgb
import numpy as np

from ragfunnel.config import load_settings
from ragfunnel.evaluate.candidates import first_stage
from ragfunnel.corpus.friends_questions import load_friends_set, training_split
from ragfunnel.questions import Question
from ragfunnel.pipeline import Pipeline
from ragfunnel.rerank.features import FeatureExtractor
from ragfunnel.train.ltr import train_ltr, train_ltr_cv
from ragfunnel.train.run import recall_at

extra = json.load(open(sys.argv[1]))
N = 20
settings = load_settings()
pipeline = Pipeline(settings)
extractor = FeatureExtractor(pipeline.store, settings.modes["hybrid"].retrievers)
split = training_split(settings.friends_dir)
questions = {"holdout": split.holdout, "direct": load_friends_set("direct", settings.friends_dir),
             "reworded": load_friends_set("reworded", settings.friends_dir)}
if len(sys.argv) > 2:
    questions["synthetic"] = [Question(q["id"], q["q"], tuple(q["gold"])) for q in json.load(open(sys.argv[2]))]
names = [f"{r}_{k}" for r in extra["rankings"] for k in ("rank", "score")]


def columns(set_name, sets):
    out = []
    for i, (qi, cs) in enumerate(zip(extra["sets"][set_name], sets)):
        assert qi == cs.question.qid
        cols = []
        for r in extra["rankings"]:
            ranking = {s: (rank + 1, score) for rank, (s, score) in enumerate(extra["rankings"][r][set_name][i])}
            floor = extra["rankings"][r][set_name][i][-1][1]
            cols.append([ranking.get(c.doc_id, (101, floor)) for c in cs.candidates[:N]])
        out.append(np.array([[v for col in cols for v in col[j]] for j in range(len(cs.candidates[:N]))]))
    return out


sets, cols = {}, {}
for name, qs in questions.items():
    by_id = {q.qid: q for q in qs}
    sets[name] = first_stage(pipeline, [by_id[i] for i in extra["sets"][name]], depth=N)
    cols[name] = columns(name, sets[name])


def recall5(css, scores):
    return round(recall_at(css, scores, N), 3)


features = {name: [extractor.features(extractor.question_context(cs.question.text), cs.candidates[:N], cs.documents[:N])
                   for cs in sets[name]] for name in ("direct", "reworded")}


def report(label, booster, use, row):
    for name in ("direct", "reworded"):
        feats = [np.hstack([f, c]) for f, c in zip(features[name], cols[name])] if use else features[name]
        row[name] = recall5(sets[name], [booster.predict(f) for f in feats])
    print(label, row, flush=True)


if "synthetic" in sets:
    for label, use in (("fit on synthetic, index features", False), ("fit on synthetic, + extra rank and score", True)):
        with tempfile.TemporaryDirectory() as tmp:
            meta = train_ltr(extractor, sets["synthetic"], sets["holdout"], Path(tmp), n=N,
                             extra_names=names if use else (), extra_train=cols["synthetic"] if use else None,
                             extra_holdout=cols["holdout"] if use else None)
            booster = lgb.Booster(model_file=str(Path(tmp) / "model.txt"))
        report(label, booster, use, {"rounds (early-stopped on the hold-out)": meta["best_iteration"]})
for label, use in (("index features", False), ("+ extra rank and score", True)):
    with tempfile.TemporaryDirectory() as tmp:
        meta, oof = train_ltr_cv(extractor, sets["holdout"], Path(tmp), n=N,
                                 extra_names=names if use else (), extra=cols["holdout"] if use else None)
        booster = lgb.Booster(model_file=str(Path(tmp) / "model.txt"))
    report(label, booster, use, {"holdout (out of fold)": recall5(sets["holdout"], oof), "rounds": meta["best_iteration"]})
