"""`ragfunnel train fusion`: fit the learned fusion (retrieve/learned.py) on judged questions.

Each question's retriever lists are collected once; the model's parameters (a log-weight per list and evidence type,
and the per-list slopes over the standardised query features) minimise the cross-entropy between a softmax over the
candidates' fused scores and the judged relevance (L-BFGS, analytic gradient, numpy + scipy). The L2 penalty on the
slopes — and whether the weights depend on the question at all (`theta = 0` is a fixed convex combination, the right
model for ~50 questions) — is chosen by cross-validation on the training questions, grouped by gold document so that
no document is fit and checked at once; the final model is refit on all of them.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragfunnel.errors import ConfigError
from ragfunnel.questions import Question
from ragfunnel.retrieve.base import collapse_to_parents
from ragfunnel.retrieve.learned import EVIDENCE, MODEL_FILE, MODEL_KIND, LearnedFusion, evidence, feature_names
from ragfunnel.retrieve.learned import list_features, question_features
from ragfunnel.types import Candidate

Progress = Callable[[str, int, int], None]
TRAIN_DEPTH = 100  # each list's best parents a question's candidates are drawn from in training
L2_GRID = (0.3, 1.0, 3.0, 10.0, 30.0)
MIN_QUERY_DEPENDENT = 150  # fewer judged questions: one convex combination (Bruch et al. fit theirs on ~50)


@dataclass
class QuestionLists:
    """One judged question with its retrievers' parent lists and its terms' IDF (what fusion sees)."""

    question: Question
    lists: dict[str, list[Candidate]]
    idfs: dict[str, float | None]


def collect(pipeline: Any, questions: Sequence[Question], retrievers: Sequence[str], idf_view: str | None = None,
            progress: Progress | None = None) -> list[QuestionLists]:
    """Run each retriever once per question (the lists the pipeline would fuse)."""
    store = pipeline.store
    view = idf_view or first_sparse_view(pipeline, retrievers)
    out = []
    for i, q in enumerate(questions, 1):
        lists = {name: collapse_to_parents(pipeline.retriever(name).retrieve(q.text)) for name in retrievers}
        idfs = store.term_idfs(view, q.text) if view else {}
        out.append(QuestionLists(q, lists, idfs))
        if progress:
            progress("retriever lists", i, len(questions))
    return out


def first_sparse_view(pipeline: Any, retrievers: Sequence[str]) -> str | None:
    """The view whose IDF the question features read: the first BM25 retriever's."""
    for name in retrievers:
        r = pipeline.retriever(name)
        if getattr(r, "kind", "") == "sparse" and hasattr(r, "view"):
            return r.view
    return None


@dataclass
class Prepared:
    x: np.ndarray  # candidates (all questions, concatenated) x lists x evidence
    target: np.ndarray  # per candidate: its share of the question's relevance
    starts: np.ndarray  # index of each question's first candidate
    phi: np.ndarray  # questions x features (raw)
    groups: list[str]  # a question's first gold document (cross-validation folds group by it)
    weight: np.ndarray  # per question: its weight in the loss (mean 1)


def prepare(data: Sequence[QuestionLists], retrievers: Sequence[str], kinds: Mapping[str, str],
            depth: int = TRAIN_DEPTH, weights: Sequence[float] | None = None,
            evidence_kinds: Sequence[str] = EVIDENCE) -> Prepared:
    """Candidates of each question (the union of each list's best `depth`), their evidence and target; questions
    whose relevant documents are in no list are left out (no fusion can find them). `weights`: per question, its
    weight in the loss (e.g. to give two question sets of different sizes the same say)."""
    xs, ts, starts, phis, groups, ws = [], [], [], [], [], []
    names = feature_names(retrievers)
    n = 0
    for k, d in enumerate(data):
        ids, x = evidence(d.lists, retrievers, limit_per_list=depth, kinds=evidence_kinds)
        rel = d.question.relevance
        t = np.asarray([max(rel.get(i, 0.0), 0.0) for i in ids], dtype=np.float64)
        if t.sum() <= 0:
            continue
        raw = {**question_features(d.question.text, d.idfs), **list_features(d.lists, kinds, retrievers)}
        xs.append(x)
        ts.append(t / t.sum())
        starts.append(n)
        n += len(ids)
        phis.append([raw.get(f, 0.0) for f in names])
        groups.append(d.question.gold[0] if d.question.gold else d.question.qid)
        ws.append(1.0 if weights is None else float(weights[k]))
    if not xs:
        raise ConfigError("none of the training questions has a relevant document in any retriever list")
    w = np.asarray(ws, dtype=np.float64)
    return Prepared(np.concatenate(xs), np.concatenate(ts), np.asarray(starts), np.asarray(phis, dtype=np.float64),
                    groups, w * len(w) / w.sum())


def _subset(p: Prepared, rows: Sequence[int]) -> Prepared:
    bounds = list(p.starts) + [len(p.target)]
    xs, ts, starts, n = [], [], [], 0
    for r in rows:
        a, b = bounds[r], bounds[r + 1]
        xs.append(p.x[a:b])
        ts.append(p.target[a:b])
        starts.append(n)
        n += b - a
    return Prepared(np.concatenate(xs), np.concatenate(ts), np.asarray(starts), p.phi[list(rows)],
                    [p.groups[r] for r in rows], p.weight[list(rows)])


def _loss_and_grad(params: np.ndarray, p: Prepared, z: np.ndarray, l2: float, use_theta: bool, n_lists: int):
    nf = p.x.shape[2]
    nb = n_lists * nf
    bias = params[:nb].reshape(n_lists, nf)
    theta = params[nb:].reshape(n_lists, z.shape[1]) if use_theta else np.zeros((n_lists, z.shape[1]))
    seg = np.repeat(np.arange(len(p.starts)), np.diff(np.append(p.starts, len(p.target))))
    logw = bias[None, :, :] + (z @ theta.T)[:, :, None]  # questions x lists x evidence
    w = np.exp(np.clip(logw, -30, 30))
    s = np.einsum("dif,dif->d", p.x, w[seg])
    m = np.maximum.reduceat(s, p.starts)
    e = np.exp(s - m[seg])
    denom = np.add.reduceat(e, p.starts)
    prob = e / denom[seg]
    q = len(p.starts)
    qw = p.weight[seg]
    loss = float((-(qw * p.target * (s - m[seg] - np.log(denom[seg])))).sum()) / q
    g = qw * (prob - p.target) / q  # d loss / d score
    gw = np.add.reduceat(g[:, None, None] * p.x, p.starts, axis=0) * w  # d loss / d log W per question
    grad_bias = gw.sum(axis=0)
    loss += 1e-3 * float((bias ** 2).sum())
    grad_bias += 2e-3 * bias
    grads = [grad_bias.ravel()]
    if use_theta:
        grad_theta = gw.sum(axis=2).T @ z  # lists x features
        loss += l2 * float((theta ** 2).sum()) / q
        grad_theta += 2 * l2 * theta / q
        grads.append(grad_theta.ravel())
    return loss, np.concatenate(grads)


def fit(p: Prepared, n_lists: int, l2: float = 3.0, use_theta: bool = True, init: np.ndarray | None = None,
        max_iter: int = 300) -> tuple[np.ndarray, np.ndarray, dict]:
    """Fitted (bias, theta) and the optimiser's report; features are standardised with `p`'s own statistics."""
    from scipy.optimize import minimize

    mean, std = p.phi.mean(axis=0), p.phi.std(axis=0)
    std[std < 1e-9] = 1.0
    z = (p.phi - mean) / std
    nf = p.x.shape[2]
    size = n_lists * nf + (n_lists * z.shape[1] if use_theta else 0)
    x0 = np.zeros(size) if init is None else init[:size]
    res = minimize(_loss_and_grad, x0, args=(p, z, l2, use_theta, n_lists), jac=True, method="L-BFGS-B",
                   options={"maxiter": max_iter})
    bias = res.x[: n_lists * nf].reshape(n_lists, nf)
    theta = res.x[n_lists * nf:].reshape(n_lists, z.shape[1]) if use_theta else np.zeros((n_lists, z.shape[1]))
    return bias, theta, {"loss": round(float(res.fun), 5), "iterations": int(res.nit), "mean": mean, "std": std}


def model_dict(retrievers: Sequence[str], kinds: Mapping[str, str], bias: np.ndarray, theta: np.ndarray,
               mean: np.ndarray, std: np.ndarray, evidence_kinds: Sequence[str] = EVIDENCE, **about: Any) -> dict:
    return {"kind": MODEL_KIND, "version": 1, "retrievers": list(retrievers),
            "kinds": {r: kinds.get(r, "dense") for r in retrievers}, "evidence": list(evidence_kinds),
            "features": feature_names(retrievers), "mean": mean.tolist(), "std": std.tolist(),
            "bias": bias.round(6).tolist(), "theta": theta.round(6).tolist(), **about}


def hits_at(fusion: LearnedFusion, p: Prepared, k: int = 5) -> list[float]:
    """Per question: 1 when a relevant document is in the model's top k (recall@k for one gold document), else 0."""
    return per_question(fusion, p, f"recall@{k}")


def per_question(fusion: LearnedFusion, p: Prepared, metric: str = "recall@5") -> list[float]:
    """Per question, `metric` of the model's order of its candidates: `recall@k` (a relevant document in the top k)
    or `ndcg@k` (graded, linear gain, the ideal order among the candidates)."""
    name, _, k_text = metric.partition("@")
    k = int(k_text)
    bounds = list(p.starts) + [len(p.target)]
    discount = 1.0 / np.log2(np.arange(2, k + 2))
    out = []
    for r in range(len(p.starts)):
        a, b = bounds[r], bounds[r + 1]
        s = fusion.scores(p.x[a:b], fusion.weights(p.phi[r]))
        gains = p.target[a:b][np.argsort(-s, kind="stable")[:k]]
        if name == "recall":
            out.append(float(gains.sum() > 0))
        else:
            ideal = np.sort(p.target[a:b])[::-1][:k]
            out.append(float((gains * discount[: len(gains)]).sum() / (ideal * discount[: len(ideal)]).sum()))
    return out


def default_metric(data: Sequence[QuestionLists]) -> str:
    """recall@5 when every question has one relevant document (Friends), else nDCG@10 (BEIR, graded folders)."""
    return "ndcg@10" if any(len(d.question.gold) > 1 for d in data) else "recall@5"


def cross_validate(p: Prepared, retrievers: Sequence[str], kinds: Mapping[str, str], folds: int = 5, seed: int = 13,
                   grid: Sequence[tuple[bool, float]] | None = None, progress: Progress | None = None,
                   metric: str = "recall@5", evidence_kinds: Sequence[str] = EVIDENCE) -> list[dict]:
    """`metric` out of fold for each (query-dependent, l2) setting; folds group questions by gold document."""
    grid = list(grid or [(False, 0.0), *[(True, l2) for l2 in L2_GRID]])
    groups = sorted(set(p.groups))
    random.Random(seed).shuffle(groups)
    fold_of = {g: i % folds for i, g in enumerate(groups)}
    which = np.asarray([fold_of[g] for g in p.groups])
    out = []
    for step, (use_theta, l2) in enumerate(grid, 1):
        scores: list[float] = []
        for f in range(folds):
            fit_rows = np.flatnonzero(which != f).tolist()
            check_rows = np.flatnonzero(which == f).tolist()
            if not fit_rows or not check_rows:
                continue
            part = _subset(p, fit_rows)
            bias, theta, info = fit(part, len(retrievers), l2, use_theta)
            model = LearnedFusion(model_dict(retrievers, kinds, bias, theta, info["mean"], info["std"], evidence_kinds))
            scores += per_question(model, _subset(p, check_rows), metric)
        out.append({"query_dependent": use_theta, "l2": l2, metric: round(float(np.mean(scores)), 4) if scores else 0.0})
        if progress:
            progress("cross-validation", step, len(grid))
    return out


def friends_training_sets(friends_dir: Path, seed: int = 13) -> list[tuple[str, list[Question]]]:
    """Friends' default: FriendsQA dev's training part (training_split: never the 800-question sample, never the
    hold-out) and the bundled vague-moment training set."""
    from ragfunnel.corpus.friends_questions import training_split, vague_training_moments

    return [("friendsqa-train", training_split(friends_dir, seed=seed).train), ("vague-train", vague_training_moments())]


def serving_modes(settings: Any, mode: str) -> list[str]:
    """`mode` and every other mode with the same retrievers and fusion and no query transforms (hybrid: accurate,
    which reranks hybrid's candidates)."""
    spec = settings.modes[mode]
    same = [name for name, m in settings.modes.items() if name != mode and not m.transforms
            and m.retrievers == spec.retrievers and m.fusion == spec.fusion]
    return [mode, *same]


def train_fusion(data: Sequence[QuestionLists], retrievers: Sequence[str], kinds: Mapping[str, str], out_dir: Path,
                 seed: int = 13, query_dependent: bool | None = None, l2: float | None = None,
                 progress: Progress | None = None, weights: Sequence[float] | None = None,
                 evidence_kinds: Sequence[str] = EVIDENCE, metric: str | None = None, **about: Any) -> dict:
    """Choose the setting by cross-validation (unless given), refit on every question, write `model.json`.
    `about`: what the model records (modes, encoder, idf_view...)."""
    t0 = time.perf_counter()
    if len(data) < 10:
        raise ConfigError(f"{len(data)} judged questions are too few to fit a fusion (at least 10)")
    metric = metric or default_metric(data)
    p = prepare(data, retrievers, kinds, weights=weights, evidence_kinds=evidence_kinds)
    report: dict[str, Any] = {"questions": len(data), "questions_used": len(p.starts), "retrievers": list(retrievers),
                              "evidence": list(evidence_kinds), "modes": list(about.get("modes", [])), "metric": metric}
    if query_dependent is None or (query_dependent and l2 is None):
        grid = [(True, x) for x in L2_GRID] if query_dependent else None
        if len(p.starts) < MIN_QUERY_DEPENDENT and query_dependent is None:  # too few for per-question weights
            grid = [(False, 0.0)]
        cv = cross_validate(p, retrievers, kinds, seed=seed, grid=grid, progress=progress, metric=metric,
                            evidence_kinds=evidence_kinds)
        best = max(cv, key=lambda r: (r[metric], not r["query_dependent"], r["l2"]))
        report["cross_validation"] = cv
        query_dependent, l2 = best["query_dependent"], best["l2"]
    bias, theta, info = fit(p, len(retrievers), l2 or 0.0, bool(query_dependent))
    model = model_dict(retrievers, kinds, bias, theta, info["mean"], info["std"], evidence_kinds,
                       query_dependent=bool(query_dependent), l2=l2, trained_on=len(p.starts), seed=seed, **about)
    fusion = LearnedFusion(model)
    report.update(query_dependent=bool(query_dependent), l2=l2, loss=info["loss"], iterations=info["iterations"],
                  **{f"train_{metric}": round(float(np.mean(per_question(fusion, p, metric))), 4)},
                  seconds=round(time.perf_counter() - t0, 1))
    model["training"] = {k: v for k, v in report.items() if k not in ("retrievers", "evidence", "modes")}
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / MODEL_FILE).write_text(json.dumps(model, indent=1), encoding="utf-8")
    return report
