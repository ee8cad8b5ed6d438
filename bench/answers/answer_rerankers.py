"""Choosing among the span reader's candidates (issue 33): does a better answer scorer close the gap between the
reader's best candidate and the candidates it already finds?

The shipped span reader (corpus/friends_models/reader) reads the hold-out questions' windows as `ask --reader
extractive` does and pools its spans into candidates (`pool_candidates`, up to 30). On the training split's 206
hold-out dev questions, which no trained part saw, this measures exact match of the candidate each design puts first:

1. the ceiling: a gold answer among the first 3 / 5 / 10 / 30 candidates by pooled probability;
2. the pooled probability alone, and the answer scorer that ships (a logistic model fitted by `train reader`);
3. a logistic model over the same features refitted with 2-fold cross-fitting on the hold-out itself (every question
   scored by a model fitted on the other half; the mean of 5 random halvings), without and with answer-type
   features: the question's wh-word crossed with what a candidate looks like (a speaker of the windows read, capitalised
   words, a number, a time word, a preposition first, a reason word first, its length);
4. an answer cross-encoder: the bundled MiniLM fine-tuned (one epoch, softmax over a positive and up to 7 negatives)
   on (question, candidate || its line with the candidate marked, and the lines around it) from the candidates of
   the reader's training questions (their retrieved windows, as `train reader --save-examples` wrote them), ranking
   the first 10 candidates alone, added to the pooled log probability, and as one more cross-fitted feature.

No design refuses here (the reader's floor and the gate are left out), so the shipped scorer's figure is a little
above `eval answers`'. The span model learned from the training questions, so its candidates there are not what it finds on new questions;
the cross-encoder learns only what a right candidate reads like. Needs the `train` extra (torch) for the
cross-encoder.

    ragfunnel train reader --save-examples EXAMPLES.json.gz   # the windows of the training questions (~2 min)
    python bench/answers/answer_rerankers.py --examples EXAMPLES.json.gz [--out docs/results/answers/answer_rerankers.md]
"""

from __future__ import annotations

import argparse
import math
import random
import re
import tempfile
from pathlib import Path

import numpy as np

from ragfunnel.config import load_settings
from ragfunnel.corpus.friends_questions import training_split
from ragfunnel.evaluate.report import header, markdown_table, write_report
from ragfunnel.generate import reader as rd
from ragfunnel.generate.evaluate import exact_match, token_f1
from ragfunnel.generate.evidence import EvidenceSelector, evidence_model_dirs, trained_scorer
from ragfunnel.generate.reader import FEATURES, ExtractiveReader, Window, extract_spans, find_reader, pool_candidates
from ragfunnel.pipeline import Pipeline
from ragfunnel.train import reader as tr

POOL = 30
RANKED = 10  # candidates a scorer chooses among (as the reader does)
_NUMBER = re.compile(r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|twenty|hundred|thousand|first|second|"
                     r"third|half|dozen)\b", re.I)
_TIME = re.compile(r"\b(?:morning|night|tonight|tomorrow|yesterday|today|days?|weeks?|months?|years?|o'clock|am|pm|"
                   r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|christmas|thanksgiving|birthday|"
                   r"wedding|ago|after|before|when|while|during|later|since|until|minutes|hours|weekend)\b", re.I)
_PREPOSITION = re.compile(r"^(?:at|in|on|to|into|from|inside|outside|near|behind|under|over|by|across|through)\b", re.I)
_REASON = re.compile(r"^(?:because|cause|'cause|so|since|to|for|as)\b", re.I)
_PAIRS = (("who", "speaker"), ("who", "capitalised"), ("when", "time"), ("when", "number"), ("how many", "number"),
          ("where", "preposition"), ("why", "reason"), ("why", "log_words"), ("how", "log_words"),
          ("what", "speaker"), ("where", "capitalised"), ("who", "log_words"), ("when", "log_words"))


def wh_word(question: str) -> str:
    low = question.lower()
    if re.search(r"\bhow (?:many|much|long|old|often)\b", low):
        return "how many"
    return next((w for w in ("who", "where", "when", "why", "how", "which", "what") if re.search(rf"\b{w}\b", low)),
                "other")


def shape(text: str, speakers: set[str]) -> dict[str, float]:
    """What a candidate looks like, for the answer-type features."""
    key = rd.answer_key(text)
    words = text.split()
    return {"speaker": float(key in speakers or (bool(key) and key.split()[0] in speakers and len(key.split()) <= 3)),
            "capitalised": float(len(words) <= 4 and all(w[:1].isupper() for w in words)),
            "number": float(bool(_NUMBER.search(text))), "time": float(bool(_TIME.search(text))),
            "preposition": float(bool(_PREPOSITION.search(text))), "reason": float(bool(_REASON.search(text))),
            "log_words": math.log(1 + len(words))}


def read(reader: ExtractiveReader, question: str, answers: list[str], windows: list[Window]) -> list[dict]:
    if not windows:
        return []
    encs, start, end = reader.model.logits(question, [w.text()[0] for w in windows])
    spans, no_answer = extract_spans(windows, encs, start, end)
    speakers = {rd.answer_key(s) for w in windows for u in w.doc.units for s in (u.speakers or [])}
    speakers |= {s.split()[0] for s in speakers if s}
    out = []
    for c in pool_candidates(spans, windows, question, no_answer, limit=POOL):
        best = c.spans[0]
        doc = windows[best.window].doc
        lo, hi = max(0, best.unit - 1), min(len(doc.units), best.unit + 2)
        lines = [rd.line_text(doc, i) for i in range(lo, hi)]
        at = best.unit - lo
        lines[at] = lines[at][: best.start] + "[" + lines[at][best.start: best.end] + "]" + lines[at][best.end:]
        out.append({"text": c.text, "features": c.features, "shape": shape(c.text, speakers),
                    "passage": c.text + " || " + " \n ".join(lines),
                    "em": exact_match(c.text, answers), "f1": token_f1(c.text, answers)})
    return out


def rows_of(questions: list[dict], types: bool, extra: str | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x, y, group = [], [], []
    for qi, q in enumerate(questions):
        wh = wh_word(q["question"])
        for c in q["candidates"][:RANKED]:
            row = [c["features"][f] for f in FEATURES]
            if types:
                row += [c["shape"][s] * (wh == w) for w, s in _PAIRS]
            if extra:
                row.append(c[extra])
            x.append(row)
            y.append(1.0 if c["f1"] >= 0.5 else 0.0)
            group.append(qi)
    return np.asarray(x), np.asarray(y), np.asarray(group)


def cross_fitted(questions: list[dict], types: bool = False, extra: str | None = None, seeds: int = 5) -> float:
    """Exact match of the candidate a logistic model puts first, each half of the questions scored by a model fitted
    on the other half; the mean over `seeds` halvings."""
    from sklearn.linear_model import LogisticRegression

    x, y, group = rows_of(questions, types, extra)
    results = []
    for seed in range(seeds):
        order = np.random.RandomState(seed).permutation(len(questions))
        right = 0.0
        for k in range(2):
            held = set(order[k::2].tolist())
            fit = np.array([g not in held for g in group])
            mean, scale = x[fit].mean(0), x[fit].std(0)
            scale[scale == 0] = 1.0
            model = LogisticRegression(max_iter=2000).fit((x[fit] - mean) / scale, y[fit])
            for qi in held:
                idx = np.where(group == qi)[0]
                if len(idx):
                    right += questions[qi]["candidates"][int(np.argmax(model.decision_function((x[idx] - mean) / scale)))]["em"]
        results.append(right / len(questions))
    return float(np.mean(results))


def first(questions: list[dict], key) -> float:
    return sum(max(q["candidates"][:RANKED], key=key)["em"] for q in questions if q["candidates"]) / len(questions)


def train_answer_cross_encoder(fit: list[dict], out: Path, seed: int = 13) -> dict:
    from ragfunnel.train.cross_encoder import Group, train_cross_encoder

    rng = random.Random(seed)
    groups = []
    for q in fit:
        right = [c for c in q["candidates"][:RANKED] if c["f1"] >= 0.5]
        wrong = [c for c in q["candidates"][:RANKED] if c["f1"] == 0]
        if right and wrong:
            best = max(right, key=lambda c: c["f1"])
            groups.append(Group(q["question"], [best["passage"]] + [c["passage"] for c in rng.sample(wrong, min(7, len(wrong)))]))
    return train_cross_encoder(groups, out, epochs=1, lr=3e-5, max_length=160, seed=seed)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=Path, required=True, help="the training windows: ragfunnel train reader --save-examples FILE")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--limit", type=int, help="only the first N hold-out and training questions (a smoke test)")
    args = ap.parse_args()

    settings = load_settings()
    pipeline = Pipeline(settings)
    selector = EvidenceSelector(pipeline.store, trained_scorer(*evidence_model_dirs(settings.models_dir, pipeline.corpus)))
    model_dir = find_reader(settings.models_dir, pipeline.corpus)
    reader = ExtractiveReader(selector, model_dir)
    reader.warm_up()
    held = []
    for q in training_split(Path(settings.friends_dir)).holdout[: args.limit]:
        found = pipeline.search(q.text, "hybrid", k=20)
        held.append({"question": q.text, "candidates": read(reader, q.text, q.answers, reader.planner.plan(q.text, found.candidates))})
    examples, _ = tr.load_examples(args.examples)
    fit_examples, _ = tr.split_examples(examples, 13)
    fit = []
    for e in fit_examples[: args.limit]:
        windows = [Window(doc, int(r["start"]), int(r["end"]), int(r["rank"]), float(r["score"]), float(r["evidence"]))
                   for r in e.groups.get("retrieved") or [] if (doc := pipeline.store.document(r["doc"])) is not None]
        fit.append({"question": e.question, "candidates": read(reader, e.question, e.answers, windows)})
    pipeline.close()

    n = len(held)
    rows = [[f"gold among the first {k} by pooled probability (ceiling)", sum(any(c["em"] for c in q["candidates"][:k]) for q in held) / n]
            for k in (1, 3, 5, 10, 30)]
    shipped = reader.scorer
    rows.append(["pooled probability (first of 10)", first(held, lambda c: c["features"]["log_prob"])])
    rows.append(["the answer scorer that ships (logistic, fitted by train reader)", first(held, lambda c: shipped.score(c["features"]))])
    rows.append(["logistic refitted, cross-fitted on the hold-out", cross_fitted(held)])
    rows.append(["+ answer-type features, cross-fitted", cross_fitted(held, types=True)])
    with tempfile.TemporaryDirectory() as tmp:
        meta = train_answer_cross_encoder(fit, Path(tmp))
        from ragfunnel.rerank.cross_encoder import OnnxCrossEncoder

        ce = OnnxCrossEncoder(tmp)
        for q in held:
            if q["candidates"]:
                for c, s in zip(q["candidates"][:RANKED], ce.scores(q["question"], [c["passage"] for c in q["candidates"][:RANKED]])):
                    c["ce"] = float(s)
    rows.append(["answer cross-encoder alone", first(held, lambda c: c["ce"])])
    rows.append(["answer cross-encoder + 0.5 x pooled log probability", first(held, lambda c: c["ce"] + 0.5 * c["features"]["log_prob"])])
    rows.append(["logistic with the cross-encoder's score, cross-fitted", cross_fitted(held, extra="ce")])
    doc = header("Choosing among the span reader's candidates (issue 33)")
    doc += (f"{n} hold-out dev questions (training_split, seed 13); the span reader {model_dir}; candidates pooled as "
            f"`ask --reader extractive` pools them (first {RANKED} ranked by each design). Answer cross-encoder: "
            f"{meta['groups']} training groups from the reader's training questions, {meta['steps']} steps, "
            f"{meta['train_seconds']} s. Exact match of the candidate put first:\n\n")
    doc += markdown_table(["design", "exact match"], [[r[0], round(r[1], 4)] for r in rows])
    write_report(args.out, doc)


if __name__ == "__main__":
    main()
