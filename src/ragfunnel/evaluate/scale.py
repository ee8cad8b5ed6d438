"""`ragfunnel bench scale`: how a store backend holds up as the corpus grows (build time, peak memory, disk,
latency of BM25 / vector / hybrid / hybrid with a 1% filter, ANN recall@10 against an exact scan).

The corpus is generated so that nothing needs embedding: each chunk is one document whose text recombines 2 to
6 real utterances of Friends (real term statistics: common and rare words as in the corpus), and whose vector is
a real MiniLM vector of the Friends index (from an embedding cache) plus Gaussian noise, renormalised (the real
distribution, each vector distinct). The vectors are put in a private embedding cache under the texts' hashes,
so the backend's own build path runs (chunking, analysis, BM25 and HNSW) and finds every vector there. Every
document has `group` = its number modulo 100: `group=7` is a 1% filter. Queries: real questions (the 800-question
sample) with query vectors made the same way from other real vectors.

Each (backend, size) runs in a fresh process, so its peak RSS is its own; for PostgreSQL the peak is that of
the client plus the server's processes (sampled every 0.2 s).
"""

from __future__ import annotations

import json
import os
import random
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragfunnel.embedding import EmbeddingCache, shared_encoder, text_hash
from ragfunnel.retrieve.fusion import make_fuser
from ragfunnel.store import StoreSettings, build_index
from ragfunnel.store.filters import Filter
from ragfunnel.types import Candidate, Document, Unit

NOISE = 0.03  # per-dimension standard deviation of the noise added to a unit vector (|noise| ~ 0.6: cosine ~ 0.86)
K = 10
DEPTH = 100
EF = 100
GROUPS = 100


def _real_vectors(cache_path: Path, model: str, limit: int, seed: int) -> np.ndarray:
    db = sqlite3.connect(f"file:{cache_path}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT vector FROM embeddings WHERE model = ? LIMIT ?", (model, limit)).fetchall()
    finally:
        db.close()
    if not rows:
        raise RuntimeError(f"no vectors of {model} in {cache_path}: index Friends first (ragfunnel index)")
    matrix = np.stack([np.frombuffer(r[0], dtype=np.float32) for r in rows])
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def _noisy(base: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    picks = base[rng.integers(0, len(base), count)]
    out = picks + rng.normal(0, NOISE, picks.shape).astype(np.float32)
    return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)


def generate(n: int, lines: Sequence[str], base: np.ndarray, cache: EmbeddingCache, model: str,
             seed: int = 7) -> list[Document]:
    """`n` one-chunk documents of recombined lines, their vectors put in `cache`."""
    rng = np.random.default_rng(seed)
    docs = generate_docs_only(n, lines, seed)
    for start in range(0, n, 20_000):
        part = docs[start:start + 20_000]
        vectors = _noisy(base, len(part), rng)
        cache.put_many(model, [(text_hash(d.units[0].text), v) for d, v in zip(part, vectors)])
    return docs


def _rss_of(pids: set[int]) -> int:
    """The proportional set size (PSS) of these processes together: memory they share (PostgreSQL's shared
    buffers, mapped in every backend) counted once, not once a process as summed RSS would."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as fh:
                for line in fh:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


def _postgres_pids() -> set[int]:
    out = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/comm") as fh:
                    if fh.read().strip() == "postgres":
                        out.add(int(entry))
            except OSError:
                pass
    return out


class PeakSampler:
    """The peak of (this process's RSS + the PostgreSQL server's) while it runs."""

    def __init__(self, with_server: bool):
        self.with_server, self.peak, self._stop = with_server, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            pids = {os.getpid()} | (_postgres_pids() if self.with_server else set())
            self.peak = max(self.peak, _rss_of(pids))
            self._stop.wait(0.2)

    def __enter__(self) -> PeakSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _disk(location: str | Path, backend: str) -> int:
    if backend == "postgres":
        import psycopg

        dsn, _, schema = str(location).partition("#")
        with psycopg.connect(dsn) as conn:
            return int(conn.execute(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c JOIN pg_namespace n "
                "ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind IN ('r', 'm')", (schema,)).fetchone()[0])
    return sum(f.stat().st_size for f in Path(location).rglob("*") if f.is_file())


def ensure_generated(n: int, work: Path, friends_cache: Path, friends_corpus: Path, model: str, seed: int = 7
                     ) -> tuple[list[str], np.ndarray, EmbeddingCache]:
    """The Friends lines and real vectors the corpus is made of, and the private cache holding its `n` vectors
    (generated on first use)."""
    from ragfunnel.corpus import load_friends

    lines = [u.text for d in load_friends(friends_corpus) for u in d.units if len(u.text.split()) >= 3]
    base = _real_vectors(friends_cache, model, 60_000, seed)
    work.mkdir(parents=True, exist_ok=True)
    cache = EmbeddingCache(work / f"cache-{n}.sqlite")
    if cache.count(model) < n:
        generate(n, lines, base, cache, model, seed)
    return lines, base, cache


def run_one(backend: str, n: int, work: Path, dsn: str | None, friends_cache: Path, friends_corpus: Path,
            questions: Sequence[str], seed: int = 7) -> dict[str, Any]:
    """Build an index of `n` generated chunks on `backend` and measure it (in this process)."""
    settings = StoreSettings(sparse_views=["utt"], dense_views=["utt"], late_chunked_views=[], corpus="friends")
    encoder = shared_encoder(settings.encoder, settings.max_length)
    lines, base, cache = ensure_generated(n, work, friends_cache, friends_corpus, encoder.model_id, seed)
    docs = GeneratedDocs(n, lines, seed)
    location: str | Path = f"{dsn}#scale_{n}" if backend == "postgres" else work / f"index-{backend}-{n}"
    if backend != "postgres" and Path(location).exists():
        shutil.rmtree(location)
    baseline = _rss_of({os.getpid()})
    with PeakSampler(backend == "postgres") as sampler:
        t0 = time.perf_counter()
        store = build_index(docs, location, settings, cache, backend_name=backend)
        build_s = time.perf_counter() - t0
    del docs
    rng = np.random.default_rng(seed + 1)
    qvecs = _noisy(base, len(questions), rng)
    where = Filter.parse("group=7")
    fuser = make_fuser("rrf", {"k": 60, "weights": {}})

    def hybrid(q: str, v: np.ndarray, flt: Filter | None) -> list[Candidate]:
        lists = {
            "bm25": [Candidate(c, s, r + 1) for r, (c, s) in enumerate(store.search_sparse("utt", q, DEPTH, where=flt))],
            "dense": [Candidate(c, s, r + 1) for r, (c, s) in
                      enumerate(store.search_dense("utt", v, DEPTH, ef=EF, where=flt))],
        }
        return fuser.fuse(lists, {"bm25": "sparse", "dense": "dense"}, None)[:K]

    for q, v in list(zip(questions, qvecs))[:10]:  # warm-up
        hybrid(q, v, None)
    times: dict[str, list[float]] = {"bm25": [], "vector": [], "hybrid": [], "hybrid 1% filter": []}
    fewest = K
    recall = []
    for q, v in zip(questions, qvecs):
        t = time.perf_counter()
        store.search_sparse("utt", q, DEPTH)
        times["bm25"].append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        ann = store.search_dense("utt", v, K, ef=EF)
        times["vector"].append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        hybrid(q, v, None)
        times["hybrid"].append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        filtered = hybrid(q, v, where)
        times["hybrid 1% filter"].append((time.perf_counter() - t) * 1000)
        fewest = min(fewest, len(filtered))
        exact = store.search_dense("utt", v, K, exact=True)
        recall.append(len({c for c, _ in ann} & {c for c, _ in exact}) / K)
    disk = _disk(location, backend)
    store.close()
    result = {
        "backend": backend, "chunks": n, "build_s": round(build_s, 1),
        "peak_rss_mb": round((sampler.peak if backend == "postgres" else max(
            sampler.peak, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)) / 2**20),
        "baseline_rss_mb": round(baseline / 2**20), "disk_mb": round(disk / 2**20), "queries": len(questions),
        "ann_recall@10": round(statistics.mean(recall), 4), "ef": EF, "fewest_filtered": fewest,
    }
    for name, values in times.items():
        result[f"{name} p50"] = round(statistics.median(values), 2)
        result[f"{name} p99"] = round(_percentile(values, 0.99), 2)
    return result


class GeneratedDocs:
    """The documents of `generate` without their vectors, made as they are read (the same texts for the same
    seed, on every pass): the build reads them as it would read files, and the measured process does not hold a
    million documents the way no real corpus on disk would be held."""

    def __init__(self, n: int, lines: Sequence[str], seed: int = 7):
        self.n, self.lines, self.seed = n, lines, seed

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[Document]:
        rnd = random.Random(self.seed)
        for i in range(self.n):
            text = " ".join(rnd.choice(self.lines) for _ in range(rnd.randint(2, 6)))
            # "#i": every text distinct, so every chunk has a vector of its own
            yield Document(f"g{i:07d}", "", (Unit(f"g{i:07d}:1", f"{text} #{i}"),), {"group": i % GROUPS})


def generate_docs_only(n: int, lines: Sequence[str], seed: int = 7) -> list[Document]:
    """The documents of `generate` without their vectors (the same texts for the same seed)."""
    return list(GeneratedDocs(n, lines, seed))


def run_in_subprocess(backend: str, n: int, work: Path, dsn: str | None, friends_cache: Path, friends_corpus: Path,
                      questions_file: Path, n_questions: int) -> dict[str, Any]:
    args = {"backend": backend, "n": n, "work": str(work), "dsn": dsn, "friends_cache": str(friends_cache),
            "friends_corpus": str(friends_corpus), "questions_file": str(questions_file), "n_questions": n_questions}
    # the corpus is generated in a process of its own: the measured process's peak RSS is the build's alone
    for step in ("generate", "measure"):
        out = subprocess.run([sys.executable, "-m", "ragfunnel.evaluate.scale", step, json.dumps(args)],
                             capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"scale run {backend} {n} ({step}) failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def read_questions(path: Path, n: int) -> list[str]:
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r["question"] for r in records][:n]


if __name__ == "__main__":
    step, a = sys.argv[1], json.loads(sys.argv[2])
    if step == "generate":
        defaults = StoreSettings()
        ensure_generated(a["n"], Path(a["work"]), Path(a["friends_cache"]), Path(a["friends_corpus"]),
                         shared_encoder(defaults.encoder, defaults.max_length).model_id)
        sys.exit(0)
    qs = read_questions(Path(a["questions_file"]), a["n_questions"])
    print(json.dumps(run_one(a["backend"], a["n"], Path(a["work"]), a["dsn"], Path(a["friends_cache"]),
                             Path(a["friends_corpus"]), qs)))
