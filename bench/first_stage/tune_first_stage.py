"""Tune the first stage on FriendsQA dev: BM25 analyzers and views, dense views, fusion rules.

Works on in-memory copies (tantivy in RAM, exact cosine with numpy, embeddings from the cache) so that many
settings can be compared without rebuilding the on-disk index. Prints JSON lines; the chosen defaults are then
measured end to end with `ragfunnel eval` (docs/results/first_stage/).

    python bench/first_stage/tune_first_stage.py --part bm25|dense|fusion [--sets dev,direct,reworded,heavy]
"""

from __future__ import annotations

import argparse
import json
import pickle
import re
import time

import numpy as np
import tantivy

from ragfunnel.analysis import AnalyzerSettings, build_analyzer
from ragfunnel.chunking import chunk_documents
from ragfunnel.config import load_settings
from ragfunnel.corpus import load_friends
from ragfunnel.embedding import EmbeddingCache, embed_with_cache, shared_encoder
from ragfunnel.corpus.friends_questions import load_friends_set
from ragfunnel.evaluate.metrics import summarize, union_coverage
from ragfunnel.evaluate.report import header, markdown_table, write_report
from ragfunnel.retrieve.base import collapse_to_parents
from ragfunnel.types import Hit

SPEAKER_PREFIX = re.compile(r"^[^:\n]{1,80}: ", re.M)


def bm25_index(chunks, analyzer: AnalyzerSettings, speakers=True):
    builder = tantivy.SchemaBuilder()
    builder.add_unsigned_field("key", stored=True, indexed=True, fast=True)
    builder.add_text_field("text", stored=False, tokenizer_name="a")
    index = tantivy.Index(builder.build())
    an = build_analyzer(analyzer)
    index.register_tokenizer("a", an)
    writer = index.writer(heap_size=256_000_000, num_threads=1)
    for i, c in enumerate(chunks):
        doc = tantivy.Document(text=c.text if speakers else SPEAKER_PREFIX.sub("", c.text))
        doc.add_unsigned("key", i)
        writer.add_document(doc)
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    return index, an


def bm25_lists(chunks, built, questions, name, depth=300):
    index, an = built
    searcher = index.searcher()
    n = searcher.num_docs
    out, idfs = [], []
    for q in questions:
        terms = an.analyze(q.text)
        if not terms:
            out.append([])
            idfs.append(None)
            continue
        query = tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, tantivy.Query.term_query(index.schema, "text", t)) for t in terms]
        )
        hits = []
        for rank, (score, addr) in enumerate(searcher.search(query, depth).hits, 1):
            c = chunks[searcher.doc(addr)["key"][0]]
            hits.append(Hit(c.chunk_id, c.doc_id, score, rank, name))
        out.append(collapse_to_parents(hits))
        vals = [np.log(1 + (n - df + 0.5) / (df + 0.5)) for t in dict.fromkeys(terms) if (df := searcher.doc_freq("text", t))]
        idfs.append(float(np.mean(vals)) if vals else None)
    return out, idfs


def dense_lists(chunks, matrix, qvecs, name, depth=300):
    sims = qvecs @ matrix.T
    out = []
    for row in sims:
        top = np.argpartition(-row, depth)[:depth]
        top = top[np.argsort(-row[top])]
        hits = [Hit(chunks[j].chunk_id, chunks[j].doc_id, float(row[j]), r, name) for r, j in enumerate(top, 1)]
        out.append(collapse_to_parents(hits))
    return out


def score(lists, questions, k_pool=50):
    ranked = [[c.doc_id for c in lst[:k_pool]] for lst in lists]
    golds = [q.gold for q in questions]
    m = summarize(list(zip(ranked, golds)))
    m["recall@50"] = union_coverage([ranked], golds, 50)
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in m.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", required=True)
    ap.add_argument("--sets", default="dev")
    ap.add_argument("--views", default="w3s1")
    ap.add_argument("--dense", default="", help="views (already in the embedding cache) to also score densely")
    ap.add_argument("--out")
    args = ap.parse_args()
    settings = load_settings()
    docs = load_friends(settings.friends_dir)
    sets = {s: load_friends_set(s, settings.friends_dir) for s in args.sets.split(",")}
    cache = EmbeddingCache(settings.cache_path)
    encoder = shared_encoder()

    def emit(**row):
        print(json.dumps(row), flush=True)

    if args.part == "views":
        # which chunk view (scene / window N stride S / utterance) serves BM25 and dense retrieval best
        rows = []
        for view in args.views.split(","):
            chunks = chunk_documents(docs, [view])
            built = bm25_index(chunks, AnalyzerSettings())
            dense = None
            if view in args.dense.split(","):
                dense = embed_with_cache(encoder, [c.text for c in chunks], cache)
            for sname, qs in sets.items():
                lists, _ = bm25_lists(chunks, built, qs, "bm25")
                m = score(lists, qs)
                rows.append([view, len(chunks), sname, "BM25", m["recall@5"], m["recall@20"], m["mrr@10"]])
                if dense is not None:
                    m = score(dense_lists(chunks, dense, encoder.encode([q.text for q in qs]), view), qs)
                    rows.append([view, len(chunks), sname, "MiniLM (exact)", m["recall@5"], m["recall@20"], m["mrr@10"]])
        doc = header("Chunk views for first-stage retrieval (collapsed to scenes)")
        doc += markdown_table(["view", "chunks", "set", "retriever", "recall@5", "recall@20", "mrr@10"], rows)
        write_report(args.out, doc)
    if args.part == "bm25":
        # tokenizer options: stemming, stopword list, speaker names in the indexed text
        rows = []
        for view in args.views.split(","):
            chunks = chunk_documents(docs, [view])
            for stem in (False, True):
                for stop in ("none", "lucene", "extended"):
                    for speakers in (True, False):
                        built = bm25_index(chunks, AnalyzerSettings(stem=stem, stopwords=stop), speakers)
                        row = [view, "yes" if stem else "no", stop, "yes" if speakers else "no"]
                        for sname, qs in sets.items():
                            lists, _ = bm25_lists(chunks, built, qs, "bm25")
                            m = score(lists, qs)
                            emit(set=sname, view=view, stem=stem, stop=stop, speakers=speakers, **m)
                            row += [m["recall@5"], m["recall@20"]]
                        rows.append(row)
        cols = ["view", "stem", "stopwords", "speakers"] + [f"{s} {m}" for s in sets for m in ("R@5", "R@20")]
        doc = header("BM25 analyzer options (tantivy; lower-casing always on)")
        doc += markdown_table(cols, rows)
        write_report(args.out, doc, echo=False)
    if args.part == "dense":
        for view in args.views.split(","):
            chunks = chunk_documents(docs, [view])
            t = time.time()
            matrix = embed_with_cache(encoder, [c.text for c in chunks], cache)
            for sname, qs in sets.items():
                qv = encoder.encode([q.text for q in qs])
                emit(set=sname, view=view, n_chunks=len(chunks), **score(dense_lists(chunks, matrix, qv, view), qs))
    if args.part == "lists":
        # every retriever's collapsed lists for every set, pickled for the fusion grid
        out = {s: {} for s in sets}
        idf = {}
        analyzer = AnalyzerSettings()
        for view in ("scene", "w3s1"):
            chunks = chunk_documents(docs, [view])
            built = bm25_index(chunks, analyzer)
            for sname, qs in sets.items():
                out[sname][f"bm25_{view}"], idfs = bm25_lists(chunks, built, qs, f"bm25_{view}")
                if view == "scene":
                    idf[sname] = idfs
        for view in args.views.split(","):
            chunks = chunk_documents(docs, [view])
            matrix = embed_with_cache(encoder, [c.text for c in chunks], cache)
            for sname, qs in sets.items():
                qv = encoder.encode([q.text for q in qs])
                out[sname][f"dense_{view}"] = dense_lists(chunks, matrix, qv, f"dense_{view}")
        with open("/tmp/ragfunnel_lists.pkl", "wb") as fh:
            pickle.dump({"lists": out, "idf": idf, "gold": {s: [q.gold for q in qs] for s, qs in sets.items()}}, fh)
        for sname, qs in sets.items():
            for name, lists in out[sname].items():
                emit(set=sname, retriever=name, **score(lists, qs))


if __name__ == "__main__":
    main()
