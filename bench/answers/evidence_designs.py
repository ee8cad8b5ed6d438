"""Evidence selector designs, compared offline on the same hold-out dev questions (issue 19, step 1).

Reads the pools dumped by bench/answers/evidence_pools.py (the top-20 hybrid scenes' lines of every training-split
question, with the selector's features, labels and texts) and measures, on the hold-out part only:

1. where the loss is: the ceiling (a gold answer line among the pool's lines) and the LambdaMART ranking's
   recall at 1, 3, 10, 30;
2. LambdaMART on the current features (as `ragfunnel train evidence` trains it);
3. LambdaMART with the answer-type cues (`cue_features` below: a line that is a question, that names
   a person, a time, a place, a number, a reason; crossed with the question type);
4. with `--cross-encoder DIR`: the line cross-encoder of bench/answers/evidence_cross_encoder.py (fine-tuned
   from the bundled MiniLM on (question, line + neighbours) pairs of the training part, ONNX), reranking LambdaMART's top `--top` lines, alone and
   blended with LambdaMART's score (the blend weight chosen on a calibration slice of the training part that
   the cross-encoder did not see);
5. windows: the best 3-line window by the sum of its lines' scores, returned as the 3 lines.

Training questions never include the hold-out (split by gold scene, seed 13), the 800 sample questions or
their paraphrases (corpus/friends_questions.training_split).

    python bench/answers/evidence_designs.py POOLS.pkl [--cross-encoder DIR] [--top 30] [--cv] [--skip-variants] [--out table.md]
        [--json out.json]
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Sequence
import json
import pickle
import random
import statistics
import time
from pathlib import Path

import numpy as np

from ragfunnel.evaluate.report import header, markdown_table, write_report
from ragfunnel.generate.evidence import _CAPITALISED, _NOT_NAMES, _NUMBER, FEATURES, line_passage, question_type
from ragfunnel.train.evidence import EVIDENCE_PARAMS


# Answer-type cues of a line (`cue_features`), crossed with the question type where one is expected
CUE_FEATURES = (
    "is_question", "prev_is_question", "next_is_question", "names_in_line", "has_time", "has_place", "has_reason",
    "type_match", "who_names", "who_speaker", "body_words",
)
_TIME = re.compile(
    r"\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february|march|april|may|june|july|august|"
    r"september|october|november|december|tonight|tomorrow|yesterday|today|morning|afternoon|evening|night|"
    r"weekend|week|weeks|month|months|year|years|o'clock|noon|midnight|christmas|thanksgiving|birthday|ago|"
    r"later|\d+:\d+|\d+ ?(am|pm))\b", re.IGNORECASE)
_PLACE = re.compile(
    r"\b(at|in|to|from|into) (the |my |his |her |our |their |a )?([A-Z][a-z]+|apartment|restaurant|hospital|"
    r"office|museum|bar|hotel|airport|house|home|room|kitchen|bedroom|bathroom|church|school|park|store|shop|"
    r"club|city|beach|car|cab|street|building|work|party|wedding|coffee ?house)\b")
_REASON = re.compile(r"\b(because|'cause|cause|since|so that|so i|so we|in order to|that's why)\b", re.IGNORECASE)


def _body(rendered: str) -> str:
    """A rendered line without its `Speaker: ` prefix."""
    head, sep, rest = rendered.partition(": ")
    return rest if sep and len(head) < 60 else rendered


def cue_features(question: str, lines: Sequence[str], before: Sequence[str], after: Sequence[str]) -> np.ndarray:
    """Answer-type cues of each rendered line (`Speaker: words`), with the line before and after it: whether it is
    itself a question (answers rarely are), how many names, times, places and reasons it holds, and whether its
    cue matches the question type (who -> names, when -> times, where -> places, why -> reasons, how many ->
    numbers). Columns in `CUE_FEATURES` order."""
    kind = question_type(question)
    qnames = {w.lower() for w in _CAPITALISED.findall(question)}
    rows = []
    for line, prev, nxt in zip(lines, before, after):
        body = _body(line)
        speaker = line[: len(line) - len(body)].rstrip(": ").lower()
        words = body.split()
        names = [w for w in _CAPITALISED.findall(" ".join(words[1:])) if w.lower() not in _NOT_NAMES and w.lower() not in qnames]
        has = {"who": float(len(names) > 0), "when": float(bool(_TIME.search(body))),
               "where": float(bool(_PLACE.search(body))), "why": float(bool(_REASON.search(body))),
               "how_many": float(bool(_NUMBER.search(body)))}
        rows.append([
            float(body.rstrip().endswith("?")), float(_body(prev).rstrip().endswith("?")),
            float(_body(nxt).rstrip().endswith("?")), float(len(names)), has["when"], has["where"], has["why"],
            has.get(kind, 0.0), float(len(names)) if kind == "who" else 0.0,
            1.0 if kind == "who" and speaker and not any(n in speaker for n in qnames) else 0.0,
            math.log1p(len(words)),
        ])
    return np.asarray(rows, dtype=np.float32).reshape(len(rows), len(CUE_FEATURES))


def recall(pools, scores, k: int, key: str = "gold") -> float:
    hits = 0
    for pool, s in zip(pools, scores):
        order = np.argsort(-s, kind="stable")[:k]
        hits += any(pool["units"][i][key] for i in order)
    return hits / len(pools)


def window_recall(pools, scores, key: str = "gold") -> float:
    """The best 3-line window (sum of its lines' scores, inside one parent) holds a gold line."""
    hits = 0
    for pool, s in zip(pools, scores):
        units = pool["units"]
        best, at = -1e9, 0
        for j in range(len(units)):
            if j + 2 < len(units) and units[j]["p"] == units[j + 2]["p"]:
                v = s[j] + s[j + 1] + s[j + 2]
                if v > best:
                    best, at = v, j
        hits += any(units[i][key] for i in range(at, min(at + 3, len(units))))
    return hits / len(pools)


def base_x(pool) -> np.ndarray:
    return pool["x"][:, : len(FEATURES)]


def with_cues(pool) -> np.ndarray:
    if pool["x"].shape[1] == len(FEATURES) + len(CUE_FEATURES):  # pools dumped by the selector that computes them
        return pool["x"]
    return np.hstack([base_x(pool), cue_features(pool["question"], [u["text"] for u in pool["units"]],
                                              [u["prev"] for u in pool["units"]], [u["next"] for u in pool["units"]])])


def fit_lambdamart(pools, xs, seed: int = 13, rounds: int | None = None, label: str = "gold", params: dict | None = None):
    """LambdaMART on `pools` (`label`: "gold" = the gold answer utterances; "gold+span" = also any line holding a
    gold answer span); rounds by early stopping on a tenth of the scenes unless `rounds` is given."""
    import lightgbm as lgb

    def lab(u) -> float:
        return 1.0 if u["gold"] or (label == "gold+span" and u["span"]) else 0.0

    useful = [(p, x) for p, x in zip(pools, xs) if any(lab(u) for u in p["units"])]
    scenes = sorted({p["gold_scenes"][0] for p, _ in useful})
    random.Random(seed).shuffle(scenes)
    valid_scenes = set(scenes[: max(1, len(scenes) // 10)])
    params = {**EVIDENCE_PARAMS, "seed": seed, **(params or {})}

    def stack(items):
        x = np.vstack([x for _, x in items])
        y = np.concatenate([[lab(u) for u in p["units"]] for p, _ in items])
        return x, y, [len(p["units"]) for p, _ in items]

    if rounds is None:
        xf, yf, gf = stack([it for it in useful if it[0]["gold_scenes"][0] not in valid_scenes])
        xv, yv, gv = stack([it for it in useful if it[0]["gold_scenes"][0] in valid_scenes])
        tr = lgb.Dataset(xf, yf, group=gf)
        probe = lgb.train(params, tr, num_boost_round=600, valid_sets=[lgb.Dataset(xv, yv, group=gv, reference=tr)],
                          callbacks=[lgb.early_stopping(50, first_metric_only=True, verbose=False)])
        rounds = max(20, probe.best_iteration or 600)
    xa, ya, ga = stack(useful)
    return lgb.train(params, lgb.Dataset(xa, ya, group=ga), num_boost_round=rounds)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pools", type=Path)
    ap.add_argument("--cross-encoder", type=Path, default=None, help="a line cross-encoder already trained (ONNX)")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--calibration", type=float, default=0.2, help="share of training scenes kept from the cross-encoder")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--cv", action="store_true", help="also 3-fold cross-validate each variant on the training part")
    ap.add_argument("--skip-variants", action="store_true", help="only the current features and the cues (and the "
                    "cross-encoder): not the three other LambdaMART fits")
    args = ap.parse_args()

    pools = pickle.loads(args.pools.read_bytes())
    train = [p for p in pools if p["part"] == "train"]
    hold = [p for p in pools if p["part"] == "holdout"]
    rows, result = [], {"n_holdout": len(hold), "n_train": len(train)}

    def report(name, scores, note=""):
        r = {f"R@{k}": round(recall(hold, scores, k), 4) for k in (1, 3, 10, 30)}
        r["span@3"] = round(recall(hold, scores, 3, "span"), 4)
        r["window R"] = round(window_recall(hold, scores), 4)
        r["window span"] = round(window_recall(hold, scores, "span"), 4)
        result[name] = r
        rows.append([name, *r.values(), note])
        print(name, r, flush=True)

    ceiling = sum(any(u["gold"] for u in p["units"]) for p in hold) / len(hold)
    span_ceiling = sum(any(u["span"] for u in p["units"]) for p in hold) / len(hold)
    result["ceiling"], result["span_ceiling"] = round(ceiling, 4), round(span_ceiling, 4)
    print("ceiling", ceiling, "span ceiling", span_ceiling)

    t = time.time()
    base = fit_lambdamart(train, [base_x(p) for p in train])
    base_scores = [base.predict(base_x(p), num_threads=1) for p in hold]
    report("LambdaMART, current features", base_scores, f"{base.num_trees()} trees, {time.time() - t:.0f} s")

    cue_train = [with_cues(p) for p in train]
    cue_hold = [with_cues(p) for p in hold]
    t = time.time()
    cues = fit_lambdamart(train, cue_train)
    cue_scores = [cues.predict(x, num_threads=1) for x in cue_hold]
    report("LambdaMART + answer-type cues", cue_scores, f"{cues.num_trees()} trees, {time.time() - t:.0f} s")

    # variants of the LambdaMART fit, chosen by 3-fold cross-validation (by scene) on the training part
    variants = {
        "labels: gold + span lines": {"label": "gold+span"},
        "300 rounds, no early stop": {"rounds": 300},
        "gold + span, 300 rounds, leaves 31": {"label": "gold+span", "rounds": 300, "params": {"num_leaves": 31}},
    }
    folds = sorted({p["gold_scenes"][0] for p in train})
    random.Random(3).shuffle(folds)
    fold_of = {sc: i % 3 for i, sc in enumerate(folds)}

    def cv(kw) -> float:
        hits = []
        for f in range(3):
            fit = [i for i, p in enumerate(train) if fold_of[p["gold_scenes"][0]] != f]
            test = [i for i, p in enumerate(train) if fold_of[p["gold_scenes"][0]] == f]
            model = fit_lambdamart([train[i] for i in fit], [base_x(train[i]) for i in fit], **kw)
            hits.append(recall([train[i] for i in test], [model.predict(base_x(train[i]), num_threads=1) for i in test], 3) * len(test))
        return sum(hits) / len(train)

    result["cv_R@3"] = {"base": round(cv({}), 4) if args.cv else None}
    cue_cv = [] if args.cv else [0.0]
    for f in range(3 if args.cv else 0):
        fit = [p for p in train if fold_of[p["gold_scenes"][0]] != f]
        test = [p for p in train if fold_of[p["gold_scenes"][0]] == f]
        model = fit_lambdamart(fit, [with_cues(p) for p in fit])
        cue_cv.append(recall(test, [model.predict(with_cues(p), num_threads=1) for p in test], 3) * len(test))
    result["cv_R@3"]["answer-type cues"] = round(sum(cue_cv) / len(train), 4) if args.cv else None
    for name, kw in ({} if args.skip_variants else variants).items():
        result["cv_R@3"][name] = round(cv(kw), 4) if args.cv else None
        t = time.time()
        model = fit_lambdamart(train, [base_x(p) for p in train], **kw)
        report(f"LambdaMART, {name}", [model.predict(base_x(p), num_threads=1) for p in hold],
               (f"3-fold CV R@3 on the training part {result['cv_R@3'][name]:.3f} (current features: "
                f"{result['cv_R@3']['base']:.3f})" if args.cv else f"{model.num_trees()} trees, {time.time() - t:.0f} s"))

    ce_dir = args.cross_encoder
    from ragfunnel.config import load_settings
    from ragfunnel.corpus.friends_questions import training_split

    # the same calibration slice as bench/answers/evidence_cross_encoder.py (kept from the cross-encoder)
    scenes = sorted({q.gold[0] for q in training_split(Path(load_settings().friends_dir), 13).train})
    random.Random(7).shuffle(scenes)
    calib_scenes = set(scenes[: round(len(scenes) * args.calibration)])
    ce_train = [p for p in train if p["gold_scenes"][0] not in calib_scenes]
    calib = [p for p in train if p["gold_scenes"][0] in calib_scenes]
    if ce_dir:
        from ragfunnel.rerank.cross_encoder import OnnxCrossEncoder

        ce = OnnxCrossEncoder(ce_dir, max_length=128, threads=2)

        def ce_scores(pool, lm):
            """LambdaMART scores with the top `--top` lines replaced by (rank-preserving) cross-encoder scores."""
            order = np.argsort(-lm, kind="stable")[: args.top]
            texts = [line_passage(pool["units"][i]["text"], pool["units"][i]["prev"], pool["units"][i]["next"]) for i in order]
            t0 = time.perf_counter()
            s = ce.scores(pool["question"], texts)
            return order, s, (time.perf_counter() - t0) * 1000

        def combine(lm, order, s, w):
            out = np.full(len(lm), -1e9, dtype=np.float64)
            z = (lm[order] - lm[order].mean()) / (lm[order].std() + 1e-6)
            zs = (s - s.mean()) / (s.std() + 1e-6)
            out[order] = w * zs + (1 - w) * z + 100.0
            return out

        ms = []
        hold_ce = []
        for p, lm in zip(hold, cue_scores):
            order, s, took = ce_scores(p, lm)
            hold_ce.append((order, s))
            ms.append(took)
        calib_lm = [cues.predict(with_cues(p), num_threads=1) for p in calib]
        calib_ce = [ce_scores(p, lm)[:2] for p, lm in zip(calib, calib_lm)]
        grid = [0.0, 0.2, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
        tuned = {w: recall(calib, [combine(lm, o, s, w) for lm, (o, s) in zip(calib_lm, calib_ce)], 3) for w in grid}
        best_w = max(grid, key=lambda w: (tuned[w], w))
        result["blend_calibration_R@3"] = tuned
        result["blend_weight"] = best_w
        result["cross_encoder_ms_p50"] = round(statistics.median(ms), 1)
        report(f"cross-encoder over the cue model's top {args.top}",
               [combine(lm, o, s, 1.0) for lm, (o, s) in zip(cue_scores, hold_ce)],
               f"p50 {statistics.median(ms):.0f} ms for {args.top} lines")
        report(f"blend (weight {best_w} on the cross-encoder, chosen on {len(calib)} calibration questions)",
               [combine(lm, o, s, best_w) for lm, (o, s) in zip(cue_scores, hold_ce)])
        # the cross-encoder score as a LambdaMART feature: trained on the calibration slice only (unseen by it)
        calib_x = []
        for p, (o, s) in zip(calib, calib_ce):
            col = np.full((len(p["units"]), 2), 0.0, dtype=np.float32)
            col[o, 0] = s
            col[o, 1] = 1.0 / (1 + np.argsort(np.argsort(-s)))
            calib_x.append(np.hstack([with_cues(p), col]))
        hold_x = []
        for x, (o, s) in zip(cue_hold, hold_ce):
            col = np.full((len(x), 2), 0.0, dtype=np.float32)
            col[o, 0] = s
            col[o, 1] = 1.0 / (1 + np.argsort(np.argsort(-s)))
            hold_x.append(np.hstack([x, col]))
        stacked = fit_lambdamart(calib, calib_x)
        report("LambdaMART + cues + cross-encoder score (fit on the calibration slice)",
               [stacked.predict(x, num_threads=1) for x in hold_x])

    pool_ms = [p["pool_ms"] for p in hold]
    result["features_ms_p50"] = round(statistics.median(pool_ms), 1)
    cols = ["design", "R@1", "R@3", "R@10", "R@30", "gold span@3", "window R", "window span", "note"]
    text = header("Evidence selector designs on the hold-out dev questions (hybrid, top 20 scenes)")
    text += (f"{len(hold)} hold-out questions (training_split seed 13, by gold scene); trained on the {len(train)} "
             f"training-part questions. Ceiling (a gold answer line among the pool's lines): {ceiling:.3f}; a gold "
             f"answer span in some pool line: {span_ceiling:.3f}. Feature rows p50 {result['features_ms_p50']} ms. "
             "R@k: a gold answer utterance among the k best lines; gold span@3: one of the 3 best lines holds a "
             "gold answer span (what `gold_span_rate` counts for the evidence reader); window: the best 3-line "
             "window by the sum of its lines' scores.\n\n")
    text += markdown_table(cols, rows)
    write_report(args.out, text)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, default=str))


if __name__ == "__main__":
    main()
