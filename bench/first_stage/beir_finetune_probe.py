"""Does fine-tuning the bundled MiniLM on a BEIR train split lift dense retrieval? A probe for issue 17, on train only.

    python bench/first_stage/beir_finetune_probe.py --dataset scifact --out docs/results/first_stage/beir_finetune_probe.md

The train judgments are split 80/20 (seed 7); the bundled encoder and one fine-tuned on the 80% (`train_embedder`:
in-batch negatives plus one of ten hard negatives the bundled model ranks high, 2 epochs, batch 32, passages of 256
tokens) each rank every document (title + text, one vector a document, exact cosine) for the 20% hold-out queries;
nDCG@10 with graded gains. The test split is not read. This is dense retrieval of whole documents, not the product's
BEIR collection (sentence units, hybrid, reranker): it says whether building the tuned encoder into
`ragfunnel eval beir` is worth its index rebuilds.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from pathlib import Path

import numpy as np

from ragfunnel.embedding import make_encoder
from ragfunnel.evaluate.report import header, markdown_table, write_report
from ragfunnel.train.embedder import Pair, train_embedder


def qrels(path: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        q, d, s = line.split("\t")
        if int(s) > 0:
            out.setdefault(q, {})[d] = int(s)
    return out


def ndcg(ranked: list[str], rel: dict[str, int], k: int = 10) -> float:
    dcg = sum(rel.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(rel.values(), reverse=True)[:k]
    return dcg / sum(g / math.log2(i + 2) for i, g in enumerate(ideal))


def encode_all(encoder, texts: list[str], batch: int = 64) -> np.ndarray:
    """In length-sorted batches: one call for all would build attention for every text at once (20 GB here)."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out = np.zeros((len(texts), encoder.dim), dtype=np.float32)
    for start in range(0, len(order), batch):
        part = order[start:start + batch]
        out[part] = encoder.encode([texts[i] for i in part])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="scifact")
    parser.add_argument("--data", type=Path, default=Path("../shared/data/beir"))
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--work", type=Path, default=Path("/tmp/ragfunnel-beir-finetune"))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    root = args.data / args.dataset
    docs = [json.loads(line) for line in (root / "corpus.jsonl").open(encoding="utf-8")]
    ids = [d["_id"] for d in docs]
    text = {d["_id"]: (d.get("title", "") + ". " + d["text"]).strip(". ") for d in docs}
    queries = {(r := json.loads(line))["_id"]: r["text"] for line in (root / "queries.jsonl").open(encoding="utf-8")}
    train = qrels(root / "qrels" / "train.tsv")
    keys = sorted(train)
    random.Random(7).shuffle(keys)
    cut = len(keys) // 5
    holdout = {q: train[q] for q in keys[:cut]}
    fit = {q: train[q] for q in keys[cut:]}

    def evaluate(encoder) -> tuple[float, np.ndarray, float]:
        t = time.perf_counter()
        matrix = encode_all(encoder, [text[i] for i in ids])
        scores = encode_all(encoder, [queries[q] for q in holdout]) @ matrix.T
        values = [ndcg([ids[j] for j in np.argsort(-scores[n])[:10]], holdout[q]) for n, q in enumerate(holdout)]
        return float(np.mean(values)), matrix, time.perf_counter() - t

    base = make_encoder("minilm-l6-onnx", max_length=args.max_length)
    bundled, matrix, bundled_s = evaluate(base)
    print(f"bundled dense nDCG@10 {bundled:.4f} on {len(holdout)} hold-out queries", flush=True)
    fit_queries = list(fit)
    sims = encode_all(base, [queries[q] for q in fit_queries]) @ matrix.T
    pairs = []
    for n, q in enumerate(fit_queries):
        negatives = [text[ids[j]] for j in np.argsort(-sims[n])[:30] if ids[j] not in fit[q]][:10]
        for d in sorted(fit[q], key=lambda d: -fit[q][d])[:3]:
            pairs.append(Pair(queries[q], text[d], negatives))
    out_dir = args.work / f"{args.dataset}-model"
    meta = train_embedder(pairs, out_dir, epochs=args.epochs, batch_size=32, max_passage=args.max_length,
                          progress=lambda d, n: print(f"step {d}/{n}", flush=True) if d % 10 == 0 else None)
    tuned, _, tuned_s = evaluate(make_encoder(f"onnx:{out_dir}", max_length=args.max_length))
    print(f"tuned dense nDCG@10 {tuned:.4f}", flush=True)
    doc = header(f"BEIR {args.dataset}: the bundled MiniLM fine-tuned on 80% of the train judgments, dense nDCG@10 on the other 20%")
    doc += markdown_table(["encoder", "hold-out queries", "dense nDCG@10", "encode s"],
                          [["bundled all-MiniLM-L6-v2", len(holdout), bundled, round(bundled_s)],
                           ["fine-tuned", len(holdout), tuned, round(tuned_s)]])
    doc += (f"\nFine-tuning: {meta['pairs']} pairs ({len(fit)} queries, up to 3 relevant documents each), "
            f"{meta['steps']} steps, {meta['train_seconds']} s; loss {meta['first_epoch_loss']} -> {meta['final_epoch_loss']}.\n")
    write_report(args.out, doc)


if __name__ == "__main__":
    main()
