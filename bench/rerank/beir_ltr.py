"""Is the learned-reranker recipe general? LambdaMART trained only on BEIR SciFact train, scored on SciFact test.

The same code as `ragfunnel train reranker` (`train.ltr.train_ltr` over `rerank.features.FeatureExtractor`) on a
different corpus: each abstract is a document whose units are its title and sentences; views: the whole
abstract ("scene"), 3-sentence windows and single sentences for BM25, whole abstracts for MiniLM (the window and
sentence vectors are left out to keep the embedding under ~5 minutes on 2 cores, so the "window evidence"
features read the abstract vector). First stage: RRF (k=60, equal weights, untuned) of the four retrievers.
Training questions: SciFact train (809 claims with judgments), split 80/20 by a seed for early stopping; no test
claim is seen. Reported: nDCG@10 and recall@10 of the fused order and of LambdaMART over its top N (20 and 50),
on the 300 test claims.

    python bench/rerank/beir_ltr.py [--data ../shared/data/beir/scifact] [--out docs/results/rerank/beir_scifact_ltr.md]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
from pathlib import Path

import numpy as np

from ragfunnel.config import FusionSpec, ModeSpec, RetrieverSpec, Settings
from ragfunnel.embedding import EmbeddingCache
from ragfunnel.evaluate.candidates import first_stage
from ragfunnel.questions import Question
from ragfunnel.evaluate.metrics import ndcg_at, recall_at
from ragfunnel.evaluate.report import header, markdown_table, write_report
from ragfunnel.pipeline import Pipeline
from ragfunnel.rerank.features import FeatureExtractor
from ragfunnel.store import StoreSettings, build_index
from ragfunnel.train.ltr import train_ltr
from ragfunnel.types import Document, Unit

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[])")
RETRIEVERS = {
    "bm25_scene": RetrieverSpec(kind="bm25", view="scene", depth=100),
    "bm25_w3s1": RetrieverSpec(kind="bm25", view="w3s1", depth=300),
    "bm25_utt": RetrieverSpec(kind="bm25", view="utt", depth=300),
    "dense_scene": RetrieverSpec(kind="dense", view="scene", depth=100),
}


def load_corpus(root: Path) -> list[Document]:
    docs = []
    with open(root / "corpus.jsonl", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            parts = [row.get("title", "").strip(), *_SENTENCE.split(row.get("text", "").strip())]
            units = tuple(Unit(f"{row['_id']}_u{i:03d}", p) for i, p in enumerate(parts) if p)
            docs.append(Document(str(row["_id"]), row.get("title", ""), units, {"label": row.get("title", "")[:80]}))
    return docs


def load_queries(root: Path, split: str) -> list[Question]:
    texts = {}
    with open(root / "queries.jsonl", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            texts[str(row["_id"])] = row["text"]
    gold: dict[str, list[str]] = {}
    for line in (root / "qrels" / f"{split}.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        qid, doc, score = line.split("\t")
        if int(score) > 0:
            gold.setdefault(qid, []).append(doc)
    return [Question(qid, texts[qid], tuple(docs)) for qid, docs in sorted(gold.items())]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="../shared/data/beir/scifact")
    ap.add_argument("--home", default="~/.ragfunnel/beir/scifact")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--out")
    args = ap.parse_args()
    root, home = Path(args.data).expanduser(), Path(args.home).expanduser()
    store_settings = StoreSettings(sparse_views=["scene", "w3s1", "utt"], dense_views=["scene"])
    settings = Settings(
        home=home, index=home / "index", store=store_settings, retrievers=RETRIEVERS,
        modes={"hybrid": ModeSpec(retrievers=list(RETRIEVERS), fusion=FusionSpec(method="rrf", k=60.0)),
               "bm25": ModeSpec(retrievers=["bm25_scene"], fusion=FusionSpec(method="none"))},
        aliases={}, default_mode="hybrid",
    )
    t0 = time.perf_counter()
    if not (home / "index").exists():
        cache = EmbeddingCache(settings.cache_path)
        build_index(load_corpus(root), home / "index", store_settings, cache).close()
        cache.close()
    build_s = time.perf_counter() - t0
    pipeline = Pipeline(settings)
    train_q, test_q = load_queries(root, "train"), load_queries(root, "test")
    rng = random.Random(args.seed)
    shuffled = train_q[:]
    rng.shuffle(shuffled)
    cut = int(len(shuffled) * 0.8)
    fit, valid = shuffled[:cut], shuffled[cut:]
    t1 = time.perf_counter()
    fit_sets, valid_sets, test_sets = (first_stage(pipeline, qs, "hybrid", 50) for qs in (fit, valid, test_q))
    fit_sets, valid_sets, test_sets = list(fit_sets), list(valid_sets), list(test_sets)
    extractor = FeatureExtractor(pipeline.store, list(RETRIEVERS), window_view="scene", utt_view="scene")
    t2 = time.perf_counter()
    meta = train_ltr(extractor, fit_sets, valid_sets, home / "ltr", n=50, seed=args.seed)
    train_s = time.perf_counter() - t2

    import lightgbm as lgb

    booster = lgb.Booster(model_file=str(home / "ltr" / "model.txt"))
    rows = []
    fused = [[c.doc_id for c in cs.candidates] for cs in test_sets]
    golds = [cs.question.gold for cs in test_sets]

    def metrics(name: str, n: int | str, ranked: list[list[str]]) -> list:
        ndcg = float(np.mean([ndcg_at(r, g, 10) for r, g in zip(ranked, golds)]))
        rec = float(np.mean([recall_at(r, g, 10) for r, g in zip(ranked, golds)]))
        ceiling = float(np.mean([recall_at(r, g, n) for r, g in zip(fused, golds)])) if isinstance(n, int) else "-"
        return [name, n, ndcg, rec, ceiling]

    rows.append(metrics("none (fused order)", "-", fused))
    for n in (20, 50):
        ranked = []
        for cs in test_sets:
            cands, docs = cs.candidates[:n], cs.documents[:n]
            x = extractor.features(extractor.question_context(cs.question.text), cands, docs)
            order = np.argsort(-booster.predict(x, num_threads=1), kind="stable")
            ranked.append([cands[i].doc_id for i in order] + [c.doc_id for c in cs.candidates[n:]])
        rows.append(metrics("LambdaMART (SciFact train only)", n, ranked))
    bm25 = [[c.doc_id for c in pipeline.search(q.text, "bm25", k=50).candidates] for q in test_q]
    rows.insert(0, metrics("BM25 (whole abstracts) alone", "-", bm25))
    text = header("BEIR SciFact: the learned reranker trained on SciFact train only")
    text += (f"{len(test_q)} test claims; {len(fit)} train claims to fit and {len(valid)} for early stopping "
             f"(best iteration {meta['best_iteration']}). Index build {build_s:.0f} s (0 when it already existed), "
             f"first stage {time.perf_counter() - t1 - train_s:.0f} s, LambdaMART training {train_s:.0f} s. "
             "Ceiling: recall@N of the fused list (the gold abstract among the N reranked).\n\n")
    text += markdown_table(["ranker", "N", "nDCG@10", "recall@10", "ceiling recall@N"], rows)
    write_report(args.out, text)


if __name__ == "__main__":
    main()
