"""Export what bench/rerank/cross_encoder_variants.py needs into OUT_DIR/ce.json: training groups (question, positive
passage first, 7 hard negatives from the current index's hybrid top 30) and the hybrid top 20 with passages for
the hold-out, Direct and Reworded.

    python bench/rerank/cross_encoder_export.py [OUT_DIR] [--matched]

Default groups are `ragfunnel train reranker --cross-encoder`'s (positives: the gold scene's passage as the first
stage shows it, and the lines around each gold answer). `--matched` keeps only the first kind, so that positives
and negatives are cut the same way (a test of whether the cross-encoder learnt the cut rather than relevance).
"""

import json
import random
import sys
from pathlib import Path

from ragfunnel.config import load_settings
from ragfunnel.evaluate.candidates import first_stage
from ragfunnel.corpus.friends_questions import load_friends_set, training_split
from ragfunnel.pipeline import Pipeline
from ragfunnel.rerank.passages import passage_text
from ragfunnel.train.cross_encoder import build_groups

args = [a for a in sys.argv[1:] if not a.startswith("--")]
out_dir = Path(args[0] if args else ".gpu")
settings = load_settings()
pipeline = Pipeline(settings)
store = pipeline.store
split = training_split(settings.friends_dir)
train_sets = first_stage(pipeline, split.train, depth=30)
if "--matched" in sys.argv:
    rng = random.Random(13)
    groups = []
    for cs in train_sets:
        gold = set(cs.question.gold)
        texts = [(c.doc_id in gold, passage_text(store, d, c, "context")) for c, d in zip(cs.candidates, cs.documents)]
        pos = [t for g, t in texts if g]
        negs = [t for g, t in texts if not g]
        if pos and len(negs) >= 7:
            groups.append([cs.question.text, [pos[0], *rng.sample(negs, 7)]])
else:
    groups = [[g.question, g.passages] for g in build_groups(store, train_sets, negatives=7, pool=30, kind="context", seed=13)]
data = {"groups": groups}
for name, qs in (("holdout", split.holdout), ("direct", load_friends_set("direct", settings.friends_dir)),
                 ("reworded", load_friends_set("reworded", settings.friends_dir))):
    data[name] = [
        {"q": cs.question.text, "gold": list(cs.question.gold),
         "c": [[c.doc_id, passage_text(store, d, c, "context"), c.rank] for c, d in zip(cs.candidates, cs.documents)]}
        for cs in first_stage(pipeline, qs, depth=20)
    ]
out_dir.mkdir(parents=True, exist_ok=True)
(out_dir / "ce.json").write_text(json.dumps(data))
print(len(groups), {k: len(v) for k, v in data.items()})
