"""Train the answerability gate of the answer step (`ragfunnel train gate`; see generate/gate.py).

Answerable questions: by default a seeded sample of FriendsQA dev questions outside the answer evaluation's sample
(`generate.evaluate.tuning_questions`); off-topic questions: `generate.evaluate.off_topic_training_questions`,
none of which is in the evaluation's `out_of_scope.txt`. Both can be the user's own files for another corpus.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ragfunnel.errors import ConfigError
from ragfunnel.registry import require
from ragfunnel.generate.gate import FEATURES, GATE_FILE, GateFeatures, similarity_threshold

DEFAULT_TARGET_REFUSAL = 0.05


def _logistic(c: float):
    linear_model = require("sklearn.linear_model", "gate", "ragfunnel train gate")
    return linear_model.LogisticRegression(C=c, class_weight="balanced", max_iter=2000)


def standardise(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(z, mean, scale) of the gate's features; a constant column keeps scale 1."""
    x = np.asarray(x, dtype=np.float64)
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    return (x - mean) / scale, mean, scale


def cross_validated_scores(z: np.ndarray, y: np.ndarray, folds: int = 5, seed: int = 0, c: float = 1.0) -> np.ndarray:
    """Each question's answerability by a model fitted without it (standardised features `z`, y = 1: answerable)."""
    model_selection = require("sklearn.model_selection", "gate", "ragfunnel train gate")
    cv = np.zeros(len(y))
    for train, test in model_selection.StratifiedKFold(folds, shuffle=True, random_state=seed).split(z, y):
        cv[test] = _logistic(c).fit(z[train], y[train]).predict_proba(z[test])[:, 1]
    return cv


def fit_gate(x: np.ndarray, y: np.ndarray, target_refusal: float = DEFAULT_TARGET_REFUSAL, folds: int = 5,
             seed: int = 0, c: float = 1.0) -> dict[str, Any]:
    """Fit the logistic regression (y = 1: answerable); the threshold refuses `target_refusal` of the answerable
    questions by their cross-validated scores, so it is not set on scores the model was fitted to."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=int)
    if np.bincount(y, minlength=2).min() < folds:
        raise ConfigError(f"the gate needs at least {folds} answerable and {folds} off-topic questions")
    z, mean, scale = standardise(x)
    cv = cross_validated_scores(z, y, folds, seed, c)
    threshold = float(np.quantile(cv[y == 1], target_refusal))
    final = _logistic(c).fit(z, y)
    return {
        "features": list(FEATURES), "mean": mean.tolist(), "scale": scale.tolist(),
        "coef": final.coef_[0].tolist(), "intercept": float(final.intercept_[0]), "threshold": threshold,
        "cross_validated": {
            "answerable_refused": float(np.mean(cv[y == 1] < threshold)),
            "off_topic_refused": float(np.mean(cv[y == 0] < threshold)),
            "answerable": int((y == 1).sum()), "off_topic": int((y == 0).sum()), "folds": folds,
        },
    }


def gate_inputs(pipeline: Any, questions: Sequence[str], mode: str = "fast", k: int = 5,
                progress: Callable[[int, int], None] | None = None) -> np.ndarray:
    features = GateFeatures(pipeline.store)
    rows = []
    for i, q in enumerate(questions, 1):
        rows.append(features(q, pipeline.search(q, mode, k=k).candidates[:k]))
        if progress:
            progress(i, len(questions))
    return np.vstack(rows) if rows else np.zeros((0, len(FEATURES)))


def similarity_rates(x: np.ndarray, y: np.ndarray, min_similarity: float) -> dict[str, float]:
    """What the similarity gate refuses on the same questions (for the training report)."""
    refused = x[:, 0] < min_similarity
    return {"answerable_refused": float(refused[y == 1].mean()), "off_topic_refused": float(refused[y == 0].mean())}


def train_gate(pipeline: Any, answerable: Sequence[str], off_topic: Sequence[str], *, mode: str = "fast", k: int = 5,
               target_refusal: float = DEFAULT_TARGET_REFUSAL, min_similarity: float | None = None, seed: int = 0,
               progress: Callable[[str, int, int], None] | None = None, answerable_from: dict | None = None) -> dict[str, Any]:
    """Fit the gate and write it beside the index (`<index>/gate.json`); returns the model with its report.

    `answerable_from` records where the answerable questions came from, so an evaluation can leave them out."""
    questions = [*answerable, *off_topic]
    x = gate_inputs(pipeline, questions, mode, k, (lambda d, t: progress("questions", d, t)) if progress else None)
    y = np.array([1] * len(answerable) + [0] * len(off_topic))
    model = fit_gate(x, y, target_refusal, seed=seed)
    if min_similarity is None:
        min_similarity = similarity_threshold(pipeline.store.settings)
    model.update(mode=mode, k=k, target_refusal=target_refusal, answerable_from=answerable_from,
                 similarity_gate={"min_similarity": min_similarity, **similarity_rates(x, y, min_similarity)})
    model["path"] = pipeline.store.write_artifact(GATE_FILE, json.dumps(model, indent=2))
    return model
