"""The pointwise LLM reranker (bundled 1.5B GGUF, yes/no log-odds) on a slice of hold-out questions: too slow for
`accurate` (the issue's p50 limit is 500 ms), measured only to know whether its judgement would help.

    python bench/rerank/llm_rerank_slice.py [QUESTIONS] [N] [PASSAGE] [--out table.md]   # defaults: 20 hold-out questions, N = 10, context

Reports recall@1/5 of the fused order and of the LLM's order over the fused top N, and seconds per pair (one JSON
line; with --out also a Markdown table).
"""
import json
import sys
import time

from ragfunnel.config import load_settings
from ragfunnel.evaluate.candidates import first_stage
from ragfunnel.corpus.friends_questions import training_split
from ragfunnel.evaluate.report import header, markdown_table, write_report
from ragfunnel.generate.llm import bundled_gguf_path
from ragfunnel.pipeline import Pipeline
from ragfunnel.rerank.base import Passage
from ragfunnel.rerank.llm_pointwise import PointwiseLLMReranker
from ragfunnel.rerank.passages import passage_text

out = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else None
argv = [a for i, a in enumerate(sys.argv) if a != "--out" and (i == 0 or sys.argv[i - 1] != "--out")]
n_questions = int(argv[1]) if len(argv) > 1 else 20
N = int(argv[2]) if len(argv) > 2 else 10
kind = argv[3] if len(argv) > 3 else "context"
settings = load_settings()
pipeline = Pipeline(settings)
questions = training_split(settings.friends_dir).holdout[:n_questions]
reranker = PointwiseLLMReranker(bundled_gguf_path(settings.home))
assert reranker.warm_up() is None, reranker.warm_up()
hits = {"fused": [0, 0], "llm": [0, 0]}
t0, pairs = time.perf_counter(), 0
for i, cs in enumerate(first_stage(pipeline, questions, depth=N), 1):
    gold = set(cs.question.gold)
    passages = [Passage(c, passage_text(pipeline.store, d, c, kind), d) for c, d in zip(cs.candidates, cs.documents)]
    ranked = [p.candidate.doc_id for p in passages]
    result = reranker.rerank(cs.question.text, passages)
    pairs += len(passages)
    for name, order in (("fused", ranked), ("llm", [c.doc_id for c in result.candidates])):
        hits[name][0] += order[0] in gold
        hits[name][1] += bool(set(order[:5]) & gold)
    print(i, {k: v[:] for k, v in hits.items()}, f"{(time.perf_counter() - t0) / pairs:.2f} s a pair", file=sys.stderr, flush=True)
n = len(questions)
seconds = (time.perf_counter() - t0) / pairs
print(json.dumps({"questions": n, "N": N, "passage": kind,
                  **{f"{k} R@1": round(v[0] / n, 3) for k, v in hits.items()},
                  **{f"{k} R@5": round(v[1] / n, 3) for k, v in hits.items()},
                  "seconds_per_pair": round(seconds, 2)}))
if out:
    doc = header("Pointwise LLM reranker on a slice of the hold-out")
    doc += (f"The first {n} dev hold-out questions; the fused (`hybrid`) top {N} reranked by `PointwiseLLMReranker` "
            f"(passage `{kind}`); {seconds:.2f} s a pair.\n\n")
    doc += markdown_table(["order", "recall@1", "recall@5"],
                          [[label, hits[k][0] / n, hits[k][1] / n] for k, label in
                           (("fused", "fused (hybrid)"), ("llm", "pointwise LLM (1.5B)"))])
    write_report(out, doc, echo=False)
