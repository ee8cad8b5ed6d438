"""`ragfunnel train reranker`: the whole recipe, reproducible from a seed.

1. questions: FriendsQA dev (+train) minus the 800-question sample and its paraphrase partners, split by scene
   into train / hold-out;
2. candidates: our own hybrid first stage (top 50) for every question; hard negatives come from there;
3. cross-encoder fine-tuned from the bundled MiniLM, exported to ONNX;
4. LambdaMART over first-stage evidence + text and window-level features (+ the cross-encoder score when one was
   trained), fit on the training questions, early-stopped on the hold-out — or, when the index's bi-encoder was
   fine-tuned on the training questions (`ragfunnel train embedder`), fit on the hold-out alone with
   cross-validation (`fit_on="holdout"`).

The cross-encoder is optional: fine-tuned on ~850 questions it did not beat the fused order on the hold-out
(docs/results/rerank/reranker.md), so the default recipe is LambdaMART alone.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ragfunnel.errors import ConfigError
from ragfunnel.pipeline import Pipeline
from ragfunnel.rerank.cross_encoder import OnnxCrossEncoder
from ragfunnel.rerank.features import FeatureExtractor
from ragfunnel.rerank.passages import passage_text
from ragfunnel.train.cross_encoder import build_groups, train_cross_encoder
from ragfunnel.corpus.friends_questions import training_split
from ragfunnel.evaluate.candidates import CandidateSet, first_stage
from ragfunnel.questions import Question
from ragfunnel.train.ltr import train_ltr, train_ltr_cv

Progress = Callable[[str, int, int], None]


def ce_scores(ce: OnnxCrossEncoder, store, sets: list[CandidateSet], n: int, kind: str, progress: Progress | None):
    out = []
    for i, cs in enumerate(sets, 1):
        texts = [passage_text(store, d, c, kind) for c, d in zip(cs.candidates[:n], cs.documents[:n])]
        out.append(ce.scores(cs.question.text, texts))
        if progress:
            progress("cross-encoder scores", i, len(sets))
    return out


def recall_at(sets: list[CandidateSet], scores: list[np.ndarray] | None, n: int, k: int = 5) -> float:
    hits = 0
    for i, cs in enumerate(sets):
        cands = cs.candidates[:n]
        order = np.argsort(-scores[i], kind="stable") if scores is not None else np.arange(len(cands))
        hits += bool({cands[j].doc_id for j in order[:k]} & set(cs.question.gold))
    return hits / max(len(sets), 1)


def train_reranker(
    pipeline: Pipeline,
    out_dir: Path,
    seed: int = 13,
    epochs: int = 1,
    max_minutes: float = 40.0,
    candidates: int = 20,
    passage: str = "context",
    limit: int | None = None,
    cross_encoder: bool = False,
    fit_on: str = "train",
    progress: Progress | None = None,
    questions: Sequence[Question] | None = None,
) -> dict:
    """`questions`: the labelled questions of any collection (a JSONL file, a BEIR train split), split at random by
    `seed` into 80% to fit and 20% to early-stop on; None: the Friends training split.
    `fit_on="holdout"`: LambdaMART is fit on the hold-out alone with cross-validation (for an index whose
    bi-encoder was fine-tuned on the training questions: their dense evidence is inflated — on the tuned Friends
    index the training questions' recall@5 with vectors alone is 0.727, the hold-out's 0.539 — and a ranker fit
    on them learns to over-trust it)."""
    if fit_on not in ("train", "holdout", "cv"):
        raise ConfigError(f"fit_on must be 'train', 'holdout' or 'cv', not {fit_on!r}")
    if fit_on == "cv" and questions is None:
        raise ConfigError("fit_on='cv' fits on every question given: pass questions")
    if fit_on in ("holdout", "cv") and cross_encoder:
        raise ConfigError("the cross-encoder is trained on the training questions: use it with fit_on='train'")
    t0 = time.perf_counter()
    settings = pipeline.settings
    if questions is None:
        split = training_split(settings.friends_dir, seed=seed)
        train_q, hold_q, excluded = split.train, split.holdout, split.excluded
    else:
        if len(questions) < 10:
            raise ConfigError(f"{len(questions)} labelled questions are too few to train a reranker (at least 10)")
        shuffled = list(questions)
        random.Random(seed).shuffle(shuffled)
        cut = 0 if fit_on == "cv" else int(len(shuffled) * 0.8)  # cv: every question is fit and checked out of fold
        train_q, hold_q, excluded = shuffled[:cut], shuffled[cut:], 0
    if limit:
        train_q, hold_q = train_q[:limit], hold_q[: max(limit // 4, 5)]
    report: dict = {"seed": seed, "fit_on": fit_on, "train_questions": len(train_q), "holdout_questions": len(hold_q),
                    "excluded_sample_questions": excluded, "collection": settings.collection}
    step = (lambda name: (lambda d, t: progress(name, d, t))) if progress else (lambda name: None)
    hold_sets = first_stage(pipeline, hold_q, progress=step("first stage (hold-out)"))
    store = pipeline.store
    retrievers = settings.modes["hybrid"].retrievers
    extractor = FeatureExtractor(store, retrievers)
    report["holdout_fused_recall@5"] = recall_at(hold_sets, None, candidates)
    if fit_on in ("holdout", "cv"):
        ltr_meta, oof = train_ltr_cv(extractor, hold_sets, out_dir / "ltr", n=candidates, seed=seed)
        report["ltr"] = ltr_meta
        report["ltr_fit_questions"] = ltr_meta["train_questions"]
        report["holdout_ltr_recall@5_out_of_fold"] = recall_at(
            [cs for cs in hold_sets if cs.candidates[:candidates]], oof, candidates
        )
        report["seconds"] = round(time.perf_counter() - t0, 1)
        (out_dir / "training_report.json").write_text(json.dumps(report, indent=2))
        return report
    train_sets = first_stage(pipeline, train_q, progress=step("first stage (train)"))
    extra_names: tuple[str, ...] = ()
    extra_train = extra_hold = None
    if cross_encoder:
        groups = build_groups(store, train_sets, kind=passage, seed=seed)
        ce_meta = train_cross_encoder(
            groups, out_dir / "cross_encoder", epochs=epochs, seed=seed, max_seconds=max_minutes * 60,
            progress=step("cross-encoder"),
        )
        report["cross_encoder"] = ce_meta
        ce = OnnxCrossEncoder(out_dir / "cross_encoder")
        extra_hold = ce_scores(ce, store, hold_sets, candidates, passage, step("CE scores (hold-out)"))
        report["holdout_cross_encoder_recall@5"] = recall_at(hold_sets, extra_hold, candidates)
        extra_train = ce_scores(ce, store, train_sets, candidates, passage, step("CE scores (train)"))
        extra_names = ("cross_encoder",)
    ltr_meta = train_ltr(
        extractor, train_sets, hold_sets, out_dir / "ltr", n=candidates, seed=seed,
        extra_names=extra_names, extra_train=extra_train, extra_holdout=extra_hold,
    )
    report["ltr"] = ltr_meta
    ltr_scores = []
    import lightgbm as lgb

    booster = lgb.Booster(model_file=str(out_dir / "ltr" / "model.txt"))
    for i, cs in enumerate(hold_sets):
        x = extractor.features(extractor.question_context(cs.question.text), cs.candidates[:candidates], cs.documents[:candidates])
        if extra_hold is not None:
            x = np.hstack([x, extra_hold[i][:, None]])
        ltr_scores.append(booster.predict(x))
    report["holdout_ltr_recall@5"] = recall_at(hold_sets, ltr_scores, candidates)
    report["seconds"] = round(time.perf_counter() - t0, 1)
    (out_dir / "training_report.json").write_text(json.dumps(report, indent=2))
    return report
