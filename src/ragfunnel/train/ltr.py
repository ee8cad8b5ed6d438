"""LambdaMART (LightGBM lambdarank) over first-stage and text features; groups = questions."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ragfunnel.rerank.features import FeatureExtractor
from ragfunnel.evaluate.candidates import CandidateSet

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
        if extra is not None:  # one value per candidate, or one row of values
            x = np.hstack([x, np.asarray(extra[i])[: len(cands)].reshape(len(cands), -1)])
        xs.append(x)
        # graded judgments as LambdaMART's integer labels (Friends: 1 for the gold scene, else 0)
        relevance = cs.question.relevance
        ys.append(np.array([float(max(round(relevance.get(c.doc_id, 0.0)), 0)) for c in cands]))
        groups.append(len(cands))
    return np.vstack(xs), np.concatenate(ys), groups


def _meta_head(extractor: FeatureExtractor, names: Sequence[str], n: int, seed: int) -> dict:
    return {"kind": "ltr", "retrievers": extractor.retrievers, "features": list(names), "candidates": n, "seed": seed,
            "window_view": extractor.window_view, "utt_view": extractor.utt_view}


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
        **_meta_head(extractor, names, n, seed),
        "best_iteration": booster.best_iteration,
        "train_questions": len(train),
        "holdout_questions": len(holdout),
        "seconds": round(time.perf_counter() - t0, 1),
    }
    (out_dir / "meta.json").write_text(json.dumps(meta, indent=2))
    return meta


def train_ltr_cv(
    extractor: FeatureExtractor,
    sets: Sequence[CandidateSet],
    out_dir: Path,
    n: int = 50,
    seed: int = 13,
    rounds: int = 400,
    folds: int = 5,
    extra_names: Sequence[str] = (),
    extra=None,
) -> tuple[dict, list[np.ndarray]]:
    """LambdaMART fit on `sets` alone, for questions no earlier stage was trained on (the hold-out, when the
    bi-encoder was fine-tuned on the training questions). Folds group questions by gold scene; the number of
    rounds is the one with the best mean nDCG@5 over the folds, and the final model is fit on every question with
    it. Returns the meta and each question's out-of-fold scores (with that number of rounds), for an honest
    estimate on the same questions. `extra`: per question, one column per name in `extra_names` for each of its
    candidates (features the extractor does not compute)."""
    import random

    import lightgbm as lgb

    t0 = time.perf_counter()
    keep = [i for i, cs in enumerate(sets) if cs.candidates[:n]]
    sets = [sets[i] for i in keep]
    extra = [extra[i] for i in keep] if extra is not None else None
    scenes = sorted({cs.question.gold[0] for cs in sets})
    random.Random(seed).shuffle(scenes)
    fold_of = {s: i % folds for i, s in enumerate(scenes)}
    which = [fold_of[cs.question.gold[0]] for cs in sets]
    params = {**LTR_PARAMS, "seed": seed, "deterministic": True}
    names = [*extractor.names, *extra_names]
    # features once per question (the folds, the out-of-fold scores and the final fit reuse them)
    rows = [matrix(extractor, [cs], n, None if extra is None else [extra[i]]) for i, cs in enumerate(sets)]

    def stack(chosen: list[int]):
        return (np.vstack([rows[i][0] for i in chosen]), np.concatenate([rows[i][1] for i in chosen]),
                [rows[i][2][0] for i in chosen])

    curves, boosters = [], []
    for f in range(folds):
        fit = [i for i, w in enumerate(which) if w != f]
        check = [i for i, w in enumerate(which) if w == f]
        if not fit or not check:
            continue
        x, y, g = stack(fit)
        xv, yv, gv = stack(check)
        dtrain = lgb.Dataset(x, y, group=g, feature_name=names)
        record: dict = {}
        booster = lgb.train(
            params, dtrain, num_boost_round=rounds,
            valid_sets=[lgb.Dataset(xv, yv, group=gv, reference=dtrain)], valid_names=["check"],
            callbacks=[lgb.record_evaluation(record)],
        )
        curves.append(record["check"]["ndcg@5"])
        boosters.append((f, booster))
    if not curves:
        raise ValueError("cross-validation needs questions from at least two gold scenes")
    best = int(np.argmax(np.mean(curves, axis=0))) + 1
    oof: list[np.ndarray | None] = [None] * len(sets)
    for f, booster in boosters:
        for i, w in enumerate(which):
            if w == f:
                oof[i] = booster.predict(rows[i][0], num_iteration=best)
    x, y, g = stack(list(range(len(sets))))
    final = lgb.train(params, lgb.Dataset(x, y, group=g, feature_name=names), num_boost_round=best)
    out_dir.mkdir(parents=True, exist_ok=True)
    final.save_model(str(out_dir / "model.txt"))
    meta = {
        **_meta_head(extractor, names, n, seed),
        "fit_on": "holdout",
        "folds": len(curves),
        "best_iteration": best,
        "cv_ndcg@5": round(float(np.mean(curves, axis=0)[best - 1]), 4),
        "train_questions": len(sets),
        "holdout_questions": 0,
        "seconds": round(time.perf_counter() - t0, 1),
    }
    (out_dir / "meta.json").write_text(json.dumps(meta, indent=2))
    return meta, [s if s is not None else np.zeros(0) for s in oof]
