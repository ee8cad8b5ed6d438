"""LambdaMART (LightGBM lambdarank) over first-stage and text features; groups = questions."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ragfunnel.rerank.features import FeatureExtractor
from ragfunnel.train.data import CandidateSet

LTR_PARAMS = {
    "objective": "lambdarank",
    "metric": "ndcg",
    "ndcg_eval_at": [1, 5, 10],
    "learning_rate": 0.05,
    "num_leaves": 15,
    "min_data_in_leaf": 20,
    "feature_fraction": 0.8,
    "bagging_fraction": 0.8,
    "bagging_freq": 1,
    "lambdarank_truncation_level": 20,
    "num_threads": 2,
    "verbose": -1,
}


def matrix(extractor: FeatureExtractor, sets: Sequence[CandidateSet], n: int, extra=None):
    xs, ys, groups = [], [], []
    for i, cs in enumerate(sets):
        cands, docs = cs.candidates[:n], cs.documents[:n]
        if not cands:
            continue
        x = extractor.features(extractor.question_context(cs.question.text), cands, docs)
        if extra is not None:
            x = np.hstack([x, extra[i][: len(cands), None]])
        xs.append(x)
        ys.append(np.array([float(c.doc_id in cs.question.gold) for c in cands]))
        groups.append(len(cands))
    return np.vstack(xs), np.concatenate(ys), groups


def train_ltr(
    extractor: FeatureExtractor,
    train: Sequence[CandidateSet],
    holdout: Sequence[CandidateSet],
    out_dir: Path,
    n: int = 50,
    seed: int = 13,
    rounds: int = 400,
    extra_names: Sequence[str] = (),
    extra_train=None,
    extra_holdout=None,
) -> dict:
    import lightgbm as lgb

    t0 = time.perf_counter()
    x, y, g = matrix(extractor, train, n, extra_train)
    xv, yv, gv = matrix(extractor, holdout, n, extra_holdout)
    names = [*extractor.names, *extra_names]
    params = {**LTR_PARAMS, "seed": seed, "deterministic": True}
    dtrain = lgb.Dataset(x, y, group=g, feature_name=names)
    dvalid = lgb.Dataset(xv, yv, group=gv, reference=dtrain)
    booster = lgb.train(
        params, dtrain, num_boost_round=rounds, valid_sets=[dvalid],
        callbacks=[lgb.early_stopping(50, verbose=False)],
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    booster.save_model(str(out_dir / "model.txt"), num_iteration=booster.best_iteration)
    meta = {
        "kind": "ltr",
        "retrievers": extractor.retrievers,
        "features": names,
        "candidates": n,
        "seed": seed,
        "best_iteration": booster.best_iteration,
        "train_questions": len(train),
        "holdout_questions": len(holdout),
        "seconds": round(time.perf_counter() - t0, 1),
    }
    (out_dir / "meta.json").write_text(json.dumps(meta, indent=2))
    return meta
