"""Train the evidence selector (generate/evidence.py): LightGBM LambdaMART over the units of the top retrieved
parents, one group per question, a unit relevant when it is one of the question's gold answer utterances
(FriendsQA `answers_detail` utterance ids).

Questions: the training part of `training_split` (FriendsQA dev minus the 800 sample questions and their
paraphrases; its hold-out, split by gold scene, is what `eval answers --reader evidence` measures on). A tenth of
the training questions (by gold scene) choose the number of rounds (early stopping); the model is then refit on
all training questions with that many rounds. Questions whose gold scene is not among the retrieved parents have
no relevant unit and teach nothing: they are left out of the groups.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ragfunnel.generate.evidence import DEFAULT_PARENTS, FEATURES, META_FILE, MODEL_FILE, EvidenceSelector, line_passage
from ragfunnel.pipeline import Pipeline
from ragfunnel.questions import Question, answer_unit_ids

EVIDENCE_PARAMS = {
    "objective": "lambdarank",
    "metric": "ndcg",
    "ndcg_eval_at": [1, 3],
    "learning_rate": 0.05,
    "num_leaves": 15,
    "min_data_in_leaf": 50,
    "feature_fraction": 0.8,
    "bagging_fraction": 0.8,
    "bagging_freq": 1,
    "lambdarank_truncation_level": 30,
    "num_threads": 2,
    "verbose": -1,
}


@dataclass
class QuestionPool:
    qid: str
    scene: str  # first gold scene (splits keep scenes apart)
    x: np.ndarray
    unit_ids: list[str]
    labels: np.ndarray


def question_pools(pipeline: Pipeline, selector: EvidenceSelector, questions: Sequence[Question], mode: str,
                   parents: int = DEFAULT_PARENTS, progress: Callable[[int, int], None] | None = None) -> list[QuestionPool]:
    """The feature rows of every unit of the top `parents` parents `mode` retrieves for each question, labelled."""
    out = []
    for n, q in enumerate(questions, 1):
        search = pipeline.search(q.text, mode, k=parents)
        pool = selector.pool(selector.context(search.question), search.candidates)
        ids = [pool.docs[p].units[i].unit_id for p, i in pool.keys]
        gold = answer_unit_ids(q)
        out.append(QuestionPool(q.qid, q.gold[0] if q.gold else "", pool.x,
                                ids, np.array([1.0 if u in gold else 0.0 for u in ids], dtype=np.float32)))
        if progress:
            progress(n, len(questions))
    return out


def _stack(pools: Sequence[QuestionPool]):
    useful = [p for p in pools if p.labels.any()]
    x = np.vstack([p.x for p in useful]) if useful else np.zeros((0, len(FEATURES)), np.float32)
    y = np.concatenate([p.labels for p in useful]) if useful else np.zeros(0, np.float32)
    return x, y, [len(p.labels) for p in useful]


def fit_evidence(pools: Sequence[QuestionPool], out_dir: Path, *, seed: int = 13, max_rounds: int = 600,
                 meta: dict | None = None) -> dict:
    """Fit LambdaMART on `pools` (rounds chosen on a tenth of their scenes), save `model.txt` + `meta.json` in
    `out_dir`; returns the meta."""
    import lightgbm as lgb

    t0 = time.time()
    scenes = sorted({p.scene for p in pools})
    random.Random(seed).shuffle(scenes)
    valid_scenes = set(scenes[: max(1, len(scenes) // 10)])
    fit = [p for p in pools if p.scene not in valid_scenes]
    valid = [p for p in pools if p.scene in valid_scenes]
    params = {**EVIDENCE_PARAMS, "seed": seed}
    xf, yf, gf = _stack(fit)
    xv, yv, gv = _stack(valid)
    if gf and gv:
        train_set = lgb.Dataset(xf, yf, group=gf, feature_name=list(FEATURES))
        valid_set = lgb.Dataset(xv, yv, group=gv, reference=train_set)
        probe = lgb.train(params, train_set, num_boost_round=max_rounds, valid_sets=[valid_set],
                          callbacks=[lgb.early_stopping(50, first_metric_only=True, verbose=False)])
        rounds = max(20, probe.best_iteration or max_rounds)
    else:  # too few questions to hold any out
        rounds = min(max_rounds, 100)
    xa, ya, ga = _stack(pools)
    model = lgb.train(params, lgb.Dataset(xa, ya, group=ga, feature_name=list(FEATURES)), num_boost_round=rounds)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_model(str(out_dir / MODEL_FILE))
    gains = model.feature_importance("gain")
    info = {
        "kind": "evidence-lambdamart", "features": list(FEATURES), "rounds": rounds, "seed": seed,
        "questions": len(pools), "questions_with_gold_in_pool": len(ga), "units": int(len(ya)),
        "params": params, "seconds": round(time.time() - t0, 1),
        "top_features": [FEATURES[i] for i in np.argsort(-gains)[:10]],
        **(meta or {}),
    }
    (out_dir / META_FILE).write_text(json.dumps(info, indent=2))
    return info


def line_groups(docs: Callable[[str], object], questions: Sequence[Question], negatives: int = 7,
                seed: int = 13) -> list:
    """Training groups for the line cross-encoder without retrieval: per question and gold answer line (at most 2)
    of its gold scene (`docs(id)` -> Document or None), the line with its neighbours (`line_passage`) as the
    positive; negatives: about half other lines of the same scene (not the gold line's neighbours), the rest lines
    of other scenes of the same episode (Friends ids `sSS_eEE_cCC`)."""
    from ragfunnel.train.cross_encoder import Group

    rng = random.Random(seed)

    def passage(doc, i: int) -> str:
        units = doc.units
        return line_passage(units[i].render(), units[i - 1].render() if i > 0 else "",
                            units[i + 1].render() if i + 1 < len(units) else "")

    episodes: dict[str, list] = {}
    groups = []
    for q in questions:
        doc = docs(q.gold[0]) if q.gold else None
        if doc is None:
            continue
        ids = [u.unit_id for u in doc.units]
        gold = [ids.index(u) for u in sorted(answer_unit_ids(q)) if u in ids]
        episode = doc.doc_id.rsplit("_", 1)[0]
        if episode not in episodes:
            episodes[episode] = [d for n in range(0, 60) if (d := docs(f"{episode}_c{n:02d}")) is not None]
        others = [d for d in episodes[episode] if d.doc_id != doc.doc_id and d.units]
        for g in gold[:2]:
            same = [i for i in range(len(ids)) if i not in gold and abs(i - g) > 1]
            negs = [passage(doc, i) for i in rng.sample(same, min(len(same), (negatives + 1) // 2))]
            while len(negs) < negatives and others:
                other = rng.choice(others)
                negs.append(passage(other, rng.randrange(len(other.units))))
            if negs:
                groups.append(Group(q.text, [passage(doc, g), *negs]))
    return groups
