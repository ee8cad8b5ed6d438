"""LambdaMART fit on synthetic questions instead of the 206 hold-out questions, compared on the same candidates.

    python bench/rerank/ltr_synthetic.py SYNTHETIC.jsonl [OUT_DIR] [--limit N]

SYNTHETIC.jsonl: one scene excerpt a line, `{"scene", "units", "qa": [[question, answer], ...]}`, written by the
local LLM (bench/rerank/synthesize_questions.py). The index's bi-encoder never saw these questions, so their dense
evidence is as honest as the hold-out's and LambdaMART can be fit on thousands of them (early-stopped on the
hold-out). Reported: recall@1/5 and MRR@10 over the fused top 20 of the hold-out, Direct and Reworded for the fused
order, the installed ranker (`$RAGFUNNEL_HOME/models/reranker/ltr`, fit on the hold-out) and the synthetic one.
"""

import json
import sys
import time
from pathlib import Path

import numpy as np

from ragfunnel.config import load_settings
from ragfunnel.evaluate.candidates import first_stage
from ragfunnel.corpus.friends_questions import load_friends_set, training_split
from ragfunnel.pipeline import Pipeline
from ragfunnel.rerank.features import FeatureExtractor
from ragfunnel.train.ltr import train_ltr
from synthesize_questions import read_questions  # bench/, beside this script

args = [a for a in sys.argv[1:] if not a.startswith("--")]
limit = int(sys.argv[sys.argv.index("--limit") + 1]) if "--limit" in sys.argv else None
syn_path, out_dir = Path(args[0]), Path(args[1] if len(args) > 1 else "/tmp/ltr_synthetic")
N = 20


def measure(sets, scores):
    r1 = r5 = mrr = 0.0
    for cs, s in zip(sets, scores):
        cands = cs.candidates[:N]
        order = np.argsort(-s, kind="stable") if s is not None else np.arange(len(cands))
        ranked = [cands[j].doc_id for j in order]
        gold = set(cs.question.gold)
        pos = next((i for i, d in enumerate(ranked) if d in gold), None)
        r1 += pos == 0
        r5 += pos is not None and pos < 5
        mrr += 1 / (pos + 1) if pos is not None and pos < 10 else 0
    n = max(len(sets), 1)
    return {"R@1": round(r1 / n, 3), "R@5": round(r5 / n, 3), "MRR@10": round(mrr / n, 3)}


t0 = time.perf_counter()
settings = load_settings()
pipeline = Pipeline(settings)
extractor = FeatureExtractor(pipeline.store, settings.modes["hybrid"].retrievers)
syn = read_questions(syn_path)[:limit]
split = training_split(settings.friends_dir)
evals = {"holdout": split.holdout, "direct": load_friends_set("direct", settings.friends_dir),
         "reworded": load_friends_set("reworded", settings.friends_dir)}
if limit:
    evals = {k: v[:limit] for k, v in evals.items()}
syn_sets = first_stage(pipeline, syn, depth=N)
print(f"synthetic questions {len(syn)}, first stage {time.perf_counter() - t0:.0f}s", flush=True)
eval_sets = {k: first_stage(pipeline, v, depth=N) for k, v in evals.items()}
ceiling = sum(any(c.doc_id in cs.question.gold for c in cs.candidates) for cs in syn_sets) / max(len(syn_sets), 1)
meta = train_ltr(extractor, syn_sets, eval_sets["holdout"], out_dir / "ltr", n=N)
import lightgbm as lgb

installed = settings.home / "models" / "reranker" / "ltr" / "model.txt"
boosters = {"synthetic": lgb.Booster(model_file=str(out_dir / "ltr" / "model.txt"))}
if installed.is_file():
    boosters["installed (hold-out)"] = lgb.Booster(model_file=str(installed))
rows = {}
for name, sets in eval_sets.items():
    feats = [extractor.features(extractor.question_context(cs.question.text), cs.candidates[:N], cs.documents[:N])
             for cs in sets]
    rows[name] = {"fused": measure(sets, [None] * len(sets))}
    for label, booster in boosters.items():
        rows[name][label] = measure(sets, [booster.predict(x) for x in feats])
report = {"synthetic_questions": len(syn), "synthetic_gold_in_top20": round(ceiling, 3), "ltr": meta, "results": rows,
          "seconds": round(time.perf_counter() - t0, 1)}
out_dir.mkdir(parents=True, exist_ok=True)
(out_dir / "report.json").write_text(json.dumps(report, indent=2))
print(json.dumps(report, indent=2))
