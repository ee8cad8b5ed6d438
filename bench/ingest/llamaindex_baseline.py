"""The mixed-format folder indexed from cold by ragfunnel and by a textbook LlamaIndex pipeline, scored alike.

Issue 35: ragfunnel must index bench/ingest/mixed_folder.py's folder from cold at least as fast as a textbook
LlamaIndex pipeline on the same folder, at an nDCG@10 at least as high. The LlamaIndex side runs in a venv of its
own (the project's dependencies stay as they are); it needs no download at run time (no LLM, our embedding, the
tokenizer / NLTK data llama-index-core bundles), which `unshare -n` (no network) checks.

    # setup, once
    python3 -m venv /work/li-venv
    /work/li-venv/bin/pip install llama-index-core==0.14.25 llama-index-readers-file==0.7.0 \
        llama-index-readers-json==0.6.0 llama-index-retrievers-bm25==0.8.0 onnxruntime==1.32.0 tokenizers==0.23.3 \
        numpy pypdf docx2txt beautifulsoup4
    .venv/bin/python bench/ingest/mixed_folder.py --out /tmp/nf-mixed          # the folder and its dev questions
    # the benchmark: LlamaIndex, then ragfunnel (a fresh RAGFUNNEL_HOME: no embedding cache), one after the other
    .venv/bin/python bench/ingest/llamaindex_baseline.py run --mixed /tmp/nf-mixed --work /tmp/li-bench \
        --li-python /work/li-venv/bin/python --no-network
    .venv/bin/python bench/ingest/llamaindex_baseline.py selfcheck --work /tmp/li-bench   # scoring parity
    .venv/bin/python bench/ingest/llamaindex_baseline.py report --work /tmp/li-bench \
        --out docs/results/first_stage/mixed_folder_llamaindex.md
    # a quick check on a subset: --limit-files 200 --limit-questions 30 (judgments cut to the files kept)

The LlamaIndex pipeline (`li-side`, run by `run` under --li-python) is the documented recipe, defaults kept:
SimpleDirectoryReader(recursive=True) with its default extractors (PDFReader, DocxReader from
llama-index-readers-file; anything else read as UTF-8 text, errors ignored) plus, with `--readers per-format` (the
default), the per-format readers LlamaIndex offers for the other formats: MarkdownReader (.md), HTMLTagReader with
tag="main" (.html) and JSONReader(is_jsonl=True) (.jsonl, one Document per line); `--readers default` leaves those
as text. Then SentenceSplitter() (1024 tokens, overlap 200), VectorStoreIndex(nodes) (the in-memory
SimpleVectorStore) embedding with ragfunnel's bundled all-MiniLM-L6-v2 ONNX model (the same file, mean pooling and
L2 normalisation as ragfunnel's encoder, max 256 tokens, batches of 64, 2 onnxruntime threads),
BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=100) and QueryFusionRetriever([vector, bm25],
mode="reciprocal_rerank", num_queries=1, use_async=False, similarity_top_k=100) for hybrid. Settings.llm = None
(MockLLM: no query generation). Retrieved nodes become document ids as ragfunnel's are: the file's path under the
folder, `RELPATH#<id>` for a JSONL record; a document's first node counts (document-level ranking).

What differs by design (for the table's notes): LlamaIndex keeps its indexes in memory (nothing written to disk;
ragfunnel's time includes its SQLite store, BM25 files, HNSW and embedding cache); its 1024-token nodes are cut at
256 tokens by MiniLM (the vector sees each node's start, file_path metadata line included; ragfunnel embeds 256-token
sections of the whole text, about twice the texts); it batches in node order (ragfunnel sorts by length); exact
search (ragfunnel: f16 HNSW); RRF k=60 over node lists (ragfunnel: its own hybrid); 100 nodes a question can be
fewer than 100 documents (the report gives the mean); HTMLTagReader is told the content tag, Latin-1 text is read as
UTF-8 with errors ignored, a JSONL file with one bad line is dropped whole, .xyz is read as text.

Both sides' rankings are scored by one function, ragfunnel.evaluate.judged.judged_metrics (what `ragfunnel eval
questions` reports); `selfcheck` checks that it gives ragfunnel's rankings the numbers `ragfunnel eval questions`
prints, and that the same rankings through the LlamaIndex side's file give the same numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

MODES_LI = ("bm25", "vector", "hybrid")
MODES_RF = ("bm25", "vector", "hybrid")
DEPTH = 100
COLLECTION = "nf-mixed"
HERE = Path(__file__).resolve()


# ---------------------------------------------------------------------------------------------------------------
# the LlamaIndex side: runs under the LlamaIndex venv, imports nothing of ragfunnel


def embedding_class():
    """A LlamaIndex BaseEmbedding over ragfunnel's bundled MiniLM ONNX files (imports LlamaIndex: its venv only)."""
    import numpy as np
    import onnxruntime as ort
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from pydantic import PrivateAttr
    from tokenizers import Tokenizer

    class MiniLMOnnxEmbedding(BaseEmbedding):
        """ragfunnel's bundled all-MiniLM-L6-v2 ONNX model as a LlamaIndex embedding: the encoder ragfunnel's
        OnnxMiniLM is (tokenizer padded per batch, truncated at max_length; mean pooling over the attention mask;
        L2 normalisation)."""

        model_dir: str
        max_length: int = 256
        threads: int = 2
        _session: object = PrivateAttr()
        _tokenizer: object = PrivateAttr()
        _seconds: float = PrivateAttr(default=0.0)
        _texts: int = PrivateAttr(default=0)

        def __init__(self, model_dir: str, threads: int = 2, max_length: int = 256, embed_batch_size: int = 64):
            super().__init__(model_name="all-MiniLM-L6-v2 (ragfunnel's bundled ONNX)", model_dir=model_dir,
                             threads=threads, max_length=max_length, embed_batch_size=embed_batch_size)
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            self._session = ort.InferenceSession(str(Path(model_dir) / "onnx" / "model.onnx"), options,
                                                 providers=["CPUExecutionProvider"])
            tokenizer = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
            tokenizer.no_padding()
            tokenizer.enable_truncation(max_length)
            self._tokenizer = tokenizer

        @classmethod
        def class_name(cls) -> str:
            return "MiniLMOnnxEmbedding"

        def _encode(self, texts: list[str]) -> list[list[float]]:
            t0 = time.perf_counter()
            encodings = self._tokenizer.encode_batch(list(texts))
            width = max(len(e.ids) for e in encodings)
            ids = np.zeros((len(texts), width), dtype=np.int64)
            mask = np.zeros((len(texts), width), dtype=np.int64)
            for row, enc in enumerate(encodings):
                ids[row, : len(enc.ids)] = enc.ids
                mask[row, : len(enc.ids)] = 1
            (hidden,) = self._session.run(None, {"input_ids": ids, "attention_mask": mask,
                                                 "token_type_ids": np.zeros_like(ids)})
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
            self._seconds += time.perf_counter() - t0
            self._texts += len(texts)
            return pooled.astype(np.float32).tolist()

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return self._encode(texts)

        def _get_text_embedding(self, text: str) -> list[float]:
            return self._encode([text])[0]

        def _get_query_embedding(self, query: str) -> list[float]:
            return self._encode([query])[0]

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

    return MiniLMOnnxEmbedding


def li_side(args) -> None:
    launch = float(os.environ.get("BENCH_LAUNCH") or time.time())  # when the parent started this process
    t_start = time.time()
    cpu0 = time.process_time()
    stamps: dict[str, float] = {}

    def mark(name: str, since: float) -> float:
        now = time.perf_counter()
        stamps[name] = now - since
        print(f"[li] {name}: {stamps[name]:.1f} s", file=sys.stderr, flush=True)
        return now

    t = time.perf_counter()
    from llama_index.core import Settings, SimpleDirectoryReader, VectorStoreIndex
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.core.retrievers import QueryFusionRetriever
    from llama_index.retrievers.bm25 import BM25Retriever

    MiniLMOnnxEmbedding = embedding_class()
    t = mark("import", t)

    docs_dir = Path(args.docs).resolve()
    Settings.llm = None  # MockLLM: nothing generates queries or answers
    embed = MiniLMOnnxEmbedding(args.model_dir, threads=args.threads, embed_batch_size=args.batch)
    Settings.embed_model = embed
    t = mark("load model", t)

    extractors = {}
    if args.readers == "per-format":
        from llama_index.readers.file import HTMLTagReader, MarkdownReader
        from llama_index.readers.json import JSONReader

        extractors = {".md": MarkdownReader(), ".html": HTMLTagReader(tag="main"), ".jsonl": JSONReader(is_jsonl=True)}
    reader = SimpleDirectoryReader(input_dir=str(docs_dir), recursive=True, file_extractor=extractors or None,
                                   raise_on_error=False)
    listed = [Path(p) for p in reader.input_files]
    documents = reader.load_data()
    t = mark("read", t)

    splitter = SentenceSplitter()  # the documented defaults: chunk_size 1024, chunk_overlap 200
    nodes = splitter.get_nodes_from_documents(documents)
    t = mark("split", t)

    index = VectorStoreIndex(nodes)  # embeds every node (embed_model.embed_batch_size = 64), SimpleVectorStore
    t = mark("vector index", t)
    bm25 = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=DEPTH)
    t = mark("bm25 index", t)
    built_wall = time.time() - launch
    built_cpu = time.process_time() - cpu0
    built_in_process = time.time() - t_start
    embed_seconds, texts_embedded = embed._seconds, embed._texts  # the queries' embeddings come after

    # bookkeeping for scoring (not timed): document -> the ids ragfunnel's judgments use
    doc_ids, read_files, files_docs = _document_ids(documents, docs_dir)
    vector = index.as_retriever(similarity_top_k=DEPTH)
    hybrid = QueryFusionRetriever([vector, bm25], similarity_top_k=DEPTH, num_queries=1, mode="reciprocal_rerank",
                                  use_async=False)
    retrievers = {"bm25": bm25, "vector": vector, "hybrid": hybrid}
    questions = [json.loads(line) for line in Path(args.questions).open(encoding="utf-8") if line.strip()]
    rankings = {m: {"ranked": [], "seconds": [], "nodes_returned": []} for m in MODES_LI}
    for q in questions:
        for mode in MODES_LI:
            t0 = time.perf_counter()
            hits = retrievers[mode].retrieve(q["question"])
            seconds = time.perf_counter() - t0
            rankings[mode]["ranked"].append(_ranking(hits, doc_ids))
            rankings[mode]["seconds"].append(seconds)
            rankings[mode]["nodes_returned"].append(len(hits))
    t = mark("retrieve", t)

    failed = sorted(str(p.relative_to(docs_dir)) for p in listed if str(p) not in read_files)
    result = {
        "system": "llamaindex",
        "readers": args.readers,
        "versions": _versions(),
        "questions": [q["id"] for q in questions],
        "modes": rankings,
        "index": {"wall_s": built_wall, "wall_in_process_s": built_in_process, "cpu_s": built_cpu,
                  "phases_s": stamps, "embed_s": embed_seconds, "texts_embedded": texts_embedded,
                  "files_listed": len(listed), "files_read": len(read_files), "files_skipped": failed,
                  "documents": len(documents), "documents_by_file_type": files_docs, "nodes": len(nodes),
                  "threads": args.threads, "batch": args.batch},
    }
    Path(args.out).write_text(json.dumps(result))
    print(json.dumps({k: v for k, v in result["index"].items() if k != "files_skipped"}), file=sys.stderr)


def _document_ids(documents, docs_dir: Path):
    """Each LlamaIndex Document's id -> how to name what its nodes hold: a path relative to the folder, or, for
    JSONL, `RELPATH#<id>` by record (JSONReader: one Document per line, in line order; a JSONL file read as text:
    the records' character spans in the Document's text)."""
    by_file: dict[str, list] = {}
    for doc in documents:
        by_file.setdefault(doc.metadata.get("file_path", ""), []).append(doc)
    doc_ids: dict[str, object] = {}
    read_files: set[str] = set()
    types: dict[str, int] = {}
    for file_path, docs in by_file.items():
        if any(d.text.strip() for d in docs):
            read_files.add(file_path)
        rel = Path(file_path).resolve().relative_to(docs_dir).as_posix() if file_path else "?"
        types[Path(rel).suffix] = types.get(Path(rel).suffix, 0) + len(docs)
        if not rel.endswith(".jsonl"):
            for d in docs:
                doc_ids[d.id_] = rel
            continue
        lines = Path(file_path).read_text(encoding="utf-8", errors="ignore").splitlines()
        record_ids = []
        for line in lines:
            try:
                record_ids.append(f"{rel}#{json.loads(line)['id']}")
            except (ValueError, KeyError, TypeError):
                record_ids.append(None)
        if len(docs) == len(lines):  # JSONReader(is_jsonl=True): line i -> Document i
            for d, rid in zip(docs, record_ids):
                doc_ids[d.id_] = rid or rel
                if rid and f'"id": "{rid.split("#", 1)[1]}"' not in d.text:
                    raise SystemExit(f"{rel}: a Document's text is not the record {rid}")
        else:  # the file as one text: records by their character spans
            for d in docs:
                spans, pos = [], 0
                for line in d.text.splitlines(keepends=True):
                    m = re.match(r'\s*\{\s*"id"\s*:\s*"([^"]+)"', line)
                    if m:
                        spans.append((pos, pos + len(line), f"{rel}#{m.group(1)}"))
                    pos += len(line)
                doc_ids[d.id_] = spans or rel
    return doc_ids, read_files, types


def _ranking(hits, doc_ids) -> list[str]:
    """Document ids in the order of their first node."""
    out: dict[str, None] = {}
    for hit in hits:
        node = hit.node
        named = doc_ids.get(node.ref_doc_id, "?")
        if isinstance(named, str):
            out.setdefault(named, None)
            continue
        start, end = node.start_char_idx, node.end_char_idx
        if start is None or end is None:  # a span the splitter could not place: the ids written in it
            ids = [f"{named[0][2].split('#')[0]}#{m}" for m in re.findall(r'"id"\s*:\s*"([^"]+)"', node.text)]
        else:
            ids = [rid for s, e, rid in named if s < end and e > start]
        for rid in ids:
            out.setdefault(rid, None)
    return list(out)


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("llama-index-core", "llama-index-readers-file", "llama-index-readers-json",
                "llama-index-retrievers-bm25", "bm25s", "onnxruntime", "tokenizers", "pypdf", "docx2txt"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "-"
    return out


# ---------------------------------------------------------------------------------------------------------------
# the ragfunnel side and the driver: run under the project's venv


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGFUNNEL_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    env.update(extra)
    return env


def prepare(args) -> tuple[Path, Path]:
    """The folder and questions both systems get: the whole folder, or with --limit-files a copy of N of its files
    (the hostile ones always among them; judgments cut to the documents kept, questions without one left out)."""
    mixed = Path(args.mixed)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    docs = mixed / "docs"
    if args.limit_files:
        files = sorted(p for p in docs.rglob("*") if p.is_file())
        hostile = [p for p in files if p.relative_to(docs).parts[0] == "hostile"]
        rest = [p for p in files if p not in hostile]
        by_format: dict[str, list[Path]] = {}
        for p in rest:
            by_format.setdefault(p.relative_to(docs).parts[0], []).append(p)
        want = max(0, args.limit_files - len(hostile))
        rng = random.Random(0)
        keep = list(hostile)
        for fmt, group in sorted(by_format.items()):  # each format its share, at least one file
            keep += rng.sample(group, min(len(group), max(1, round(want * len(group) / len(rest)))))
        sub = work / "docs"
        if sub.exists():
            shutil.rmtree(sub)
        kept_ids: set[str] = set()
        for p in keep:
            rel = p.relative_to(docs)
            (sub / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, sub / rel)
            if p.suffix == ".jsonl":
                for line in p.read_text(encoding="utf-8").splitlines():
                    try:
                        kept_ids.add(f"{rel.as_posix()}#{json.loads(line)['id']}")
                    except (ValueError, KeyError, TypeError):
                        pass
            else:
                kept_ids.add(rel.as_posix())
        docs = sub
    questions = []
    for line in (mixed / "questions-mixed.jsonl").open(encoding="utf-8"):
        q = json.loads(line)
        if args.limit_files:
            q["relevant"] = {d: g for d, g in q["relevant"].items() if d in kept_ids}
            if not any(g > 0 for g in q["relevant"].values()):
                continue
        questions.append(q)
    if args.limit_questions:
        questions = questions[: args.limit_questions]
    qpath = work / "questions.jsonl"
    qpath.write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    (work / "setup.json").write_text(json.dumps({
        "docs": str(docs), "questions": str(qpath), "limit_files": args.limit_files,
        "limit_questions": args.limit_questions, "n_questions": len(questions),
        "n_files": sum(1 for p in docs.rglob("*") if p.is_file()), "command": _command_line()}))
    return docs, qpath


def _command_line() -> str:
    from ragfunnel.evaluate.report import command_line

    return command_line()


def run_llamaindex(args, docs: Path, qpath: Path) -> None:
    from ragfunnel.embedding import bundled_minilm_dir

    work = Path(args.work)
    cmd = [args.li_python, str(HERE), "li-side", "--docs", str(docs), "--questions", str(qpath),
           "--model-dir", str(bundled_minilm_dir()), "--out", str(work / "llamaindex.json"),
           "--threads", str(args.threads), "--batch", "64", "--readers", args.readers]
    if args.no_network:
        cmd = ["unshare", "-n", *cmd]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["BENCH_LAUNCH"] = repr(time.time())
    load = os.getloadavg()[0]
    with (work / "llamaindex.log").open("w") as log:
        done = subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        raise SystemExit(f"the LlamaIndex side failed (rc {done.returncode}): see {work / 'llamaindex.log'}")
    result = json.loads((work / "llamaindex.json").read_text())
    text = (work / "llamaindex.log").read_text(errors="replace")
    result["index"]["failed_messages"] = len(re.findall(r"^Failed to load file", text, flags=re.M))
    result["index"]["load_avg_before"] = load
    result["index"]["load_avg_after"] = os.getloadavg()[0]
    result["index"]["downloads"] = _download_hints(text)
    (work / "llamaindex.json").write_text(json.dumps(result))
    print(json.dumps({"llamaindex": {k: v for k, v in result["index"].items() if k != "files_skipped"}}))


def _download_hints(log: str) -> list[str]:
    """Lines of the LlamaIndex side's output that look like a download (there should be none)."""
    pattern = re.compile(r"download|huggingface|hf_hub|urlopen|Connection", re.I)
    return [line for line in log.splitlines() if pattern.search(line)][:10]


def run_ragfunnel(args, docs: Path, qpath: Path) -> None:
    import resource

    work = Path(args.work)
    home = work / "rf-home"
    if home.exists():
        shutil.rmtree(home)  # an empty home: no embedding cache, no index
    home.mkdir(parents=True)
    env = _clean_env(RAGFUNNEL_HOME=str(home), RAGFUNNEL_ENCODER_THREADS=str(args.threads),
                     RAGFUNNEL_ONNX_DEVICE="cpu")
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "ragfunnel.cli", "index", str(docs), "--collection", COLLECTION,
                           "--json", "-q"], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"ragfunnel index failed:\n{done.stderr[-3000:]}")
    sync = json.loads(done.stdout)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    load_after = os.getloadavg()[0]
    rank = subprocess.run([sys.executable, str(HERE), "rf-rank", "--questions", str(qpath), "--out",
                           str(work / "ragfunnel.json")], env=env, capture_output=True, text=True)
    if rank.returncode != 0:
        raise SystemExit(f"ragfunnel ranking failed:\n{rank.stderr[-3000:]}")
    result = json.loads((work / "ragfunnel.json").read_text())
    result["index"] = {"wall_s": wall, "cpu_s": cpu, "sync": sync,
                       "files_read": sync.get("parsed", 0) - len(sync.get("skipped", {})),
                       "files_skipped": sorted(sync.get("skipped", {})), "problems": sync.get("problems", {}),
                       "threads": args.threads, "load_avg_before": load, "load_avg_after": load_after}
    (work / "ragfunnel.json").write_text(json.dumps(result))
    print(json.dumps({"ragfunnel": {k: v for k, v in result["index"].items() if k != "sync"}}))


def rf_rank(args) -> None:
    """ragfunnel's rankings (100 documents a question) in each mode, as `ragfunnel eval questions` makes them."""
    from ragfunnel.config import load_settings
    from ragfunnel.evaluate.judged import check_judgments, run_judged
    from ragfunnel.pipeline import Pipeline
    from ragfunnel.questions import load_questions

    questions = load_questions(args.questions)
    settings = load_settings(collection=COLLECTION)
    pipeline = Pipeline(settings)
    try:
        missing = check_judgments(pipeline, questions, COLLECTION)
        modes = {}
        for mode in MODES_RF:
            run = run_judged(pipeline, questions, mode)
            modes[mode] = {"ranked": run.ranked, "seconds": run.seconds}
        encoder = pipeline.store.settings.encoder
    finally:
        pipeline.close()
    Path(args.out).write_text(json.dumps({"system": "ragfunnel", "questions": [q.qid for q in questions],
                                          "modes": modes, "relevant_not_in_index": missing,
                                          "encoder": encoder}))


def run(args) -> None:
    docs, qpath = prepare(args)
    setup = json.loads((Path(args.work) / "setup.json").read_text())
    print(json.dumps({"setup": setup}))
    for system in args.systems.split(","):
        {"llamaindex": run_llamaindex, "ragfunnel": run_ragfunnel}[system](args, docs, qpath)


# ---------------------------------------------------------------------------------------------------------------
# scoring and the table


def score(ranked: list[list[str]], seconds: list[float], questions) -> dict:
    """The one scoring function for both systems: ragfunnel.evaluate.judged.judged_metrics."""
    from ragfunnel.evaluate.judged import JudgedRun, judged_metrics

    if len(ranked) != len(questions):
        raise SystemExit(f"{len(ranked)} rankings for {len(questions)} questions")
    return judged_metrics(JudgedRun(list(questions), [list(r[:DEPTH]) for r in ranked], list(seconds)))


def _load(work: Path, name: str):
    path = work / f"{name}.json"
    return json.loads(path.read_text()) if path.is_file() else None


def _questions(work: Path):
    from ragfunnel.questions import load_questions

    return load_questions(work / "questions.jsonl")


def report(args) -> None:
    from ragfunnel.evaluate.report import header, markdown_table, write_report

    work = Path(args.work)
    setup = json.loads((work / "setup.json").read_text())
    questions = _questions(work)
    rows, notes = [], []
    for name, label in (("ragfunnel", "ragfunnel"), ("llamaindex", "LlamaIndex")):
        result = _load(work, name)
        if result is None:
            continue
        if result["questions"] != [q.qid for q in questions]:
            raise SystemExit(f"{name}.json ranks other questions than {work / 'questions.jsonl'}")
        ix = result["index"]
        skipped = len(ix["files_skipped"])
        for mode in (MODES_RF if name == "ragfunnel" else MODES_LI):
            m = score(result["modes"][mode]["ranked"], result["modes"][mode]["seconds"], questions)
            rows.append([label, mode, f"{ix['wall_s']:.0f}", f"{ix['cpu_s']:.0f}", f"{ix['files_read']} / {skipped}",
                         m["ndcg@10"], m["recall@10"], m["recall@100"], m["mrr@10"], f"{m['search_p50_ms']:.0f}",
                         m["n"]])
        if name == "ragfunnel":
            t = ix["sync"].get("timings", {})
            notes.append(f"- ragfunnel: `ragfunnel index {setup['docs']} --collection {COLLECTION}` in an empty "
                         f"RAGFUNNEL_HOME (no embedding cache), {ix['threads']} encoder threads, encoder "
                         f"`{result.get('encoder', 'minilm-l6-onnx')}` (its default for a new folder): {ix['wall_s']:.1f} s "
                         f"wall, {ix['cpu_s']:.1f} s CPU (scan {t.get('scan', 0):.1f} s, write {t.get('write', 0):.1f} "
                         f"s); {ix['files_read']} files read of {ix['sync'].get('parsed')} parsed; skipped: {json.dumps(ix['sync'].get('skipped', {}))}; "
                         f"problems: {json.dumps(ix['problems'])}; load average {ix['load_avg_before']:.1f} before, "
                         f"{ix['load_avg_after']:.1f} after\n")
        else:
            ph = ix["phases_s"]
            notes.append(f"- LlamaIndex ({result['readers']} readers; "
                         + ", ".join(f"{k} {v}" for k, v in result["versions"].items()) + "): "
                         f"{ix['wall_s']:.1f} s wall from the process's launch to both indexes built, {ix['cpu_s']:.1f} s "
                         f"CPU: " + ", ".join(f"{k} {v:.1f} s" for k, v in ph.items() if k != "retrieve") +
                         f" (of which embedding {ix['embed_s']:.1f} s for {ix['texts_embedded']} nodes); "
                         f"{ix['files_listed']} files listed, {ix['files_read']} read into {ix['documents']} Documents, "
                         f"{ix['nodes']} nodes; documents per ranking (100 nodes, a document's first node "
                         "counted), mean: " + ", ".join(
                             f"{m} {sum(map(len, result['modes'][m]['ranked'])) / max(1, len(questions)):.1f}"
                             for m in MODES_LI) +
                         f"; not read: {json.dumps(ix['files_skipped'])}; load average "
                         f"{ix['load_avg_before']:.1f} before, {ix['load_avg_after']:.1f} after\n")
    subset = setup["limit_files"] or setup["limit_questions"]
    title = "The mixed-format folder: ragfunnel against a textbook LlamaIndex pipeline, cold index and nDCG@10"
    text = header(title + (" (SUBSET: not for the table)" if subset else ""))
    text += (f"bench/ingest/mixed_folder.py's folder ({setup['n_files']} files: Markdown with front matter, HTML with "
             "boilerplate, Latin-1 text, PDF, DOCX, JSONL records, five hostile files), NFCorpus **dev** judgments "
             f"({setup['n_questions']} questions), both systems' rankings (100 documents) scored by "
             "ragfunnel.evaluate.judged.judged_metrics. Cold index: from an empty state to both indexes built "
             "(ragfunnel: the `index` command; LlamaIndex: its process from launch, imports included, through "
             "reading, splitting, embedding into VectorStoreIndex and BM25Retriever), one after the other on the "
             "same machine, the same bundled MiniLM ONNX model with 2 threads on each side (ragfunnel with the encoder "
             "a new folder collection gets, named in its note: since issue 35 the int8 copy of that model). Files "
             "read / skipped: "
             "files that gave text / files left out (unreadable, empty, no reader).\n\n")
    text += markdown_table(["system", "mode", "cold index s", "CPU s", "files read / skipped", "nDCG@10", "recall@10",
                            "recall@100", "MRR@10", "search p50 ms", "n"], rows)
    text += f"\n- the run: `{setup.get('command', '?')}`\n" + "".join(notes)
    write_report(args.out, text)


def selfcheck(args) -> None:
    """Scoring parity: (1) a hand-made ranking scores as computed by hand; (2) ragfunnel's rankings scored here
    equal `ragfunnel eval questions --json` on the same collection; (3) the same rankings written as the
    LlamaIndex side writes them and read back through the report's path score the same."""
    import math

    from ragfunnel.questions import Question

    q = Question("q", "toy", ("a", "b"), grades={"a": 2.0, "b": 1.0, "c": 0.0})
    m = score([["x", "a", "c", "b"]], [0.0], [q])
    dcg = 2 / math.log2(3) + 1 / math.log2(5)
    idcg = 2 / math.log2(2) + 1 / math.log2(3)
    assert abs(m["ndcg@10"] - dcg / idcg) < 1e-12 and m["recall@10"] == 1.0 and m["mrr@10"] == 0.5, m
    print("toy ranking: ok")

    work = Path(args.work)
    questions = _questions(work)
    rf = _load(work, "ragfunnel")
    if rf is None:
        raise SystemExit("no ragfunnel.json: run `run --systems ragfunnel` first")
    env = _clean_env(RAGFUNNEL_HOME=str(work / "rf-home"), RAGFUNNEL_ONNX_DEVICE="cpu")
    failures = 0
    for mode in MODES_RF:
        ours = score(rf["modes"][mode]["ranked"], rf["modes"][mode]["seconds"], questions)
        done = subprocess.run([sys.executable, "-m", "ragfunnel.cli", "eval", "questions", str(work / "questions.jsonl"),
                               "-c", COLLECTION, "--mode", mode, "--json"], env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(done.stderr[-2000:])
        cli = json.loads(done.stdout)
        same = all(ours[k] == cli[k] for k in ("ndcg@10", "recall@10", "recall@100", "mrr@10", "n"))
        failures += not same
        print(f"{mode}: here {ours['ndcg@10']:.6f} / cli {cli['ndcg@10']:.6f} nDCG@10 -> {'same' if same else 'DIFFERENT'}")
        as_li = json.loads(json.dumps({"modes": {mode: {"ranked": rf["modes"][mode]["ranked"],
                                                        "seconds": rf["modes"][mode]["seconds"]}}}))
        again = score(as_li["modes"][mode]["ranked"], as_li["modes"][mode]["seconds"], questions)
        assert again == ours, (again, ours)
    print("round trip through the LlamaIndex file format: ok")
    if failures:
        raise SystemExit(f"{failures} mode(s) score differently here and in `ragfunnel eval questions`")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)

    r = sub.add_parser("run", help="index the folder from cold with each system and rank the dev questions")
    r.add_argument("--mixed", default="/tmp/nf-mixed", help="mixed_folder.py's --out (docs/, questions-mixed.jsonl)")
    r.add_argument("--work", default="/tmp/li-bench", help="where rankings, logs and ragfunnel's home go")
    r.add_argument("--li-python", default="/work/li-venv/bin/python", help="the LlamaIndex venv's python")
    r.add_argument("--systems", default="llamaindex,ragfunnel", help="which, in this order")
    r.add_argument("--readers", choices=("per-format", "default"), default="per-format")
    r.add_argument("--threads", type=int, default=2, help="onnxruntime threads on both sides")
    r.add_argument("--limit-files", type=int, help="a copy of N files of the folder (hostile ones included)")
    r.add_argument("--limit-questions", type=int, help="only the first N questions")
    r.add_argument("--no-network", action="store_true", help="run the LlamaIndex side under `unshare -n` (root)")
    r.set_defaults(func=run)

    li = sub.add_parser("li-side", help="(internal, under the LlamaIndex venv) the LlamaIndex pipeline")
    li.add_argument("--docs", required=True)
    li.add_argument("--questions", required=True)
    li.add_argument("--model-dir", required=True)
    li.add_argument("--out", required=True)
    li.add_argument("--threads", type=int, default=2)
    li.add_argument("--batch", type=int, default=64)
    li.add_argument("--readers", choices=("per-format", "default"), default="per-format")
    li.set_defaults(func=li_side)

    rr = sub.add_parser("rf-rank", help="(internal) ragfunnel's rankings of the questions in each mode")
    rr.add_argument("--questions", required=True)
    rr.add_argument("--out", required=True)
    rr.set_defaults(func=rf_rank)

    rep = sub.add_parser("report", help="the table")
    rep.add_argument("--work", default="/tmp/li-bench")
    rep.add_argument("--out", help="the Markdown file (e.g. docs/results/first_stage/mixed_folder_llamaindex.md)")
    rep.set_defaults(func=report)

    sc = sub.add_parser("selfcheck", help="both systems' rankings are scored alike, as `ragfunnel eval` scores")
    sc.add_argument("--work", default="/tmp/li-bench")
    sc.set_defaults(func=selfcheck)

    args = ap.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
