"""Chunkers × BEIR corpora -> nDCG@10 (documents collapsed, graded), index size on disk, build time.

Each view is built alone (an index holding just that view, BM25 and, with --dense, vectors) from a cold embedding
cache of its own, so the build time is what a user waits for: chunking (the semantic chunker embeds sentences),
BM25, embedding and HNSW. Queries go through the product's retrievers (BM25, exact dense) collapsed to documents;
`hybrid` is RRF (k=10, the product's default) of the view's BM25 and dense lists; combos (`--combo`) fuse the lists
of several views the same way. Runs are kept under --home, so views can be added in later calls and the table
is written from every run kept (`--report`).

    python bench/chunking/chunkers.py --corpus nfcorpus --split dev --views scene,tok256o32 --dense
    python bench/chunking/chunkers.py --report --out docs/results/first_stage/chunkers.md \
        --combo 'files today=scene+w3s1+utt|w3s1+utt' --combo 'candidate=scene+tok256o32|tok256o32'
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

from ragfunnel.corpus.folder import to_document
from ragfunnel.corpus.loaders.beir import load_beir_corpus, load_beir_queries
from ragfunnel.embedding import EmbeddingCache, shared_encoder
from ragfunnel.evaluate.metrics import ndcg_at, recall_at
from ragfunnel.evaluate.report import header, markdown_table, write_report
from ragfunnel.retrieve.base import collapse_to_parents
from ragfunnel.retrieve.dense import DenseRetriever
from ragfunnel.retrieve.sparse import BM25Retriever
from ragfunnel.store import StoreSettings, build_index

DATA = Path("../shared/data/beir")
SPLITS = {"scifact": "test", "nfcorpus": "dev"}  # NFCorpus test judgments are held back: dev only
DEPTH = 300  # chunks fetched per query before collapse (the product's window/line depth)


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def run_view(corpus: str, view: str, dense: bool, home: Path) -> dict:
    folder = DATA / corpus
    docs = [to_document(f.key, f, f.key) for f in load_beir_corpus(folder).files]
    queries = load_beir_queries(folder, SPLITS[corpus])
    where = home / corpus / view
    if where.exists():
        shutil.rmtree(where)
    where.mkdir(parents=True)
    cache = EmbeddingCache(where / "cache.sqlite")  # cold: the build time includes every embedding
    settings = StoreSettings(sparse_views=[view], dense_views=[view] if dense else [], corpus="beir")
    t0 = time.perf_counter()
    store = build_index(docs, where / "index", settings, cache)
    seconds = time.perf_counter() - t0
    retrievers = [BM25Retriever(store, view, DEPTH)]
    if dense:
        retrievers.append(DenseRetriever(store, shared_encoder(settings.encoder, settings.max_length), view, DEPTH,
                                         exact=True))
    lists = {r.kind: {q["id"]: [c.doc_id for c in collapse_to_parents(r.retrieve(q["question"]))][:100]
                      for q in queries} for r in retrievers}
    result = {"corpus": corpus, "view": view, "dense": dense, "documents": len(docs), "chunks": store.count_chunks(view),
              "seconds": round(seconds, 1), "bytes": du(where / "index"), "lists": lists}
    store.close()
    (home / corpus / "runs").mkdir(parents=True, exist_ok=True)
    (home / corpus / "runs" / f"{view}.{'dense' if dense else 'bm25'}.json").write_text(json.dumps(result))
    shutil.rmtree(where / "index")  # the numbers are kept; the index is not needed again
    return result


def rrf(lists: list[list[str]], k: float = 10.0) -> list[str]:
    scores: dict[str, float] = {}
    for ranked in lists:
        for rank, doc in enumerate(ranked, 1):
            scores[doc] = scores.get(doc, 0.0) + 1.0 / (k + rank)
    return sorted(scores, key=lambda d: -scores[d])


def mean_ndcg(run: dict[str, list[str]], gold: dict[str, dict]) -> float:
    return sum(ndcg_at(run.get(q, []), rel, 10) for q, rel in gold.items()) / len(gold)


def mean_recall(run: dict[str, list[str]], gold: dict[str, dict], k: int = 100) -> float:
    return sum(recall_at(run.get(q, []), [d for d, g in rel.items() if g > 0], k) for q, rel in gold.items()) / len(gold)


def load_runs(home: Path, corpus: str) -> dict[str, dict]:
    """view -> the run with the most lists (a dense run holds BM25 too)."""
    out: dict[str, dict] = {}
    for file in sorted((home / corpus / "runs").glob("*.json"), key=lambda f: f.stat().st_mtime):
        run = json.loads(file.read_text())
        if run["view"] not in out or run["dense"]:
            out[run["view"]] = run
    return out


def report(home: Path, combos: list[str], out: str | None) -> None:
    text = header("Chunkers × corpora: nDCG@10 (documents collapsed), index size, build time")
    text += (
        "Each view built alone (BM25 and, where a dense column is filled, MiniLM vectors) from a cold embedding cache "
        "on the 2-core machine (shared with other jobs: times are rough). nDCG@10 over documents (a hit on any "
        "chunk ranks its document; graded qrels), recall@100 likewise. `hybrid`: RRF k=10 of the view's BM25 and "
        "dense lists. Size: the index folder (SQLite with documents and chunk texts, tantivy, usearch f16).\n"
        "A parent-child view (`.sec`, `.doc`) indexes the same chunks as its child view: the same numbers, a "
        "different passage for the reader. A BEIR document is one unit (its abstract) without headings: `utt` and "
        "`w3s1` equal `scene`, and `sec256` / `code256` cut like a recursive splitter without overlap (what they "
        "do with sections, pages and functions is tested, not measured here). The new chunkers begin each chunk "
        "with the title line (`.bare`: without). Build s: the whole build; where the dense columns are empty, "
        "BM25 only (no embedding).\n\n"
        "Runs (each `python bench/chunking/chunkers.py --corpus C --views V[,V…] [--dense]`, kept under "
        "/tmp/chunk-home/bench; this table by `--report`): BM25 for every view on both corpora; dense (and so "
        "hybrid) only where filled in: embedding ran at ~7 passages/s on the shared machine (load ~11), so SciFact "
        "dense, `tok256o32` dense and the semantic chunker (`sem95`: it embeds every sentence, ~71k on NFCorpus) "
        "were not run; `python bench/chunking/chunkers.py --corpus nfcorpus --views sem95 --dense` measures it.\n\n"
    )
    for corpus, split in SPLITS.items():
        runs = load_runs(home, corpus)
        if not runs:
            continue
        gold = {q["id"]: q["relevant"] for q in load_beir_queries(DATA / corpus, split)}
        rows = []
        for view, run in runs.items():
            bm25, dense = run["lists"].get("sparse"), run["lists"].get("dense")
            hybrid = {q: rrf([bm25[q], dense[q]]) for q in gold} if dense else None
            rows.append([
                view, run["chunks"], f"{run['chunks'] / run['documents']:.1f}",
                mean_ndcg(bm25, gold), mean_ndcg(dense, gold) if dense else "", mean_ndcg(hybrid, gold) if hybrid else "",
                mean_recall(hybrid or bm25, gold), f"{run['bytes'] / 2**20:.1f}", f"{run['seconds']:.0f}",
            ])
        text += f"## {corpus} ({split}, {len(gold)} queries, {next(iter(runs.values()))['documents']} documents)\n\n"
        text += markdown_table(["view", "chunks", "chunks/doc", "nDCG@10 BM25", "nDCG@10 dense", "nDCG@10 hybrid",
                                "recall@100 (hybrid, else BM25)", "index MiB", "build s"], rows) + "\n"
        combo_rows = []
        for combo in combos:
            name, spec = combo.split("=", 1)
            sparse_views, _, dense_views = spec.partition("|")
            lists = []
            missing = []
            for views, kind in ((sparse_views, "sparse"), (dense_views, "dense")):
                for v in filter(None, views.split("+")):
                    if v in runs and kind in runs[v]["lists"]:
                        lists.append(runs[v]["lists"][kind])
                    else:
                        missing.append(f"{kind} {v}")
            if missing:
                continue
            fused = {q: rrf([lst[q] for lst in lists]) for q in gold}
            combo_rows.append([name, f"BM25 {sparse_views.replace('+', ', ')}; dense {dense_views.replace('+', ', ')}",
                               mean_ndcg(fused, gold), mean_recall(fused, gold)])
        if combo_rows:
            text += "Combinations (RRF k=10 of every list, as the product's `hybrid` mode):\n\n"
            text += markdown_table(["combination", "lists", "nDCG@10", "recall@100"], combo_rows) + "\n"
    write_report(out, text)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", choices=sorted(SPLITS))
    ap.add_argument("--views", default="")
    ap.add_argument("--dense", action="store_true", help="also embed the view (slow) for dense and hybrid")
    ap.add_argument("--home", default="/tmp/chunk-home/bench")
    ap.add_argument("--report", action="store_true")
    ap.add_argument("--combo", action="append", default=[], help="NAME=SPARSE+VIEWS|DENSE+VIEWS")
    ap.add_argument("--out")
    args = ap.parse_args()
    home = Path(args.home)
    for view in filter(None, args.views.split(",")):
        r = run_view(args.corpus, view, args.dense, home)
        print(json.dumps({k: v for k, v in r.items() if k != "lists"}), flush=True)
    if args.report:
        report(home, args.combo, args.out)


if __name__ == "__main__":
    main()
