"""Load test of POST /search (fast mode) on the real index: N concurrent clients for a bounded time.

    .venv/bin/python bench/serving/load_search.py [--clients 20] [--seconds 60] [--max-requests 20000] [--index DIR]
                                          [--out docs/results/serving/load_search.md]

Starts `python -m ragfunnel.serve` (= `ragfunnel serve`) on a free loopback port in its own process, warms it up,
measures one client alone (sequential requests; at most --single-seconds / --single-requests), then --clients
threads, each with its own HTTP connection, posting the Direct question set's questions round-robin until
--seconds pass or --max-requests are done. Reports QPS, client-side p50/p99 latency, the server-side p50 (the
response's took_ms: the search alone, without queueing) and the error count, as Markdown with the command, date and
machine. Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from ragfunnel.config import load_settings
from ragfunnel.corpus.friends_questions import load_friends_set
from ragfunnel.evaluate.report import header, markdown_table, write_report

REPO = Path(__file__).resolve().parents[2]
FALLBACK_QUESTIONS = [
    "Who did Rachel dump at the altar?", "What is the name of Ross's pet monkey?",
    "What was the name of Joey's stuffed penguin?", "What song does Phoebe sing about a cat?",
    "Why did Chandler spend Thanksgiving in a box?", "Where does Monica work as a chef?",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def questions(index: Path | None) -> list[str]:
    try:
        return [q.text for q in load_friends_set("direct", load_settings(index=index).friends_dir)] or FALLBACK_QUESTIONS
    except Exception as exc:  # noqa: BLE001 - any question works for a load test
        print(f"(Direct questions not found: {exc}; using {len(FALLBACK_QUESTIONS)} built-in ones)", file=sys.stderr)
        return FALLBACK_QUESTIONS


def start_server(port: int, index: Path | None, workers: int = 1, extra_args: Sequence[str] = (),
                 timeout: float = 180.0) -> subprocess.Popen:
    """`ragfunnel serve` (fake LLM, no API key) in its own process, returned once /health says the index loaded."""
    cmd = [sys.executable, "-m", "ragfunnel.serve", "--host", "127.0.0.1", "--port", str(port), "--llm", "fake",
           "--log-level", "warning", "--workers", str(workers), *extra_args]
    if index:
        cmd += ["--index", str(index)]
    env = {k: v for k, v in os.environ.items() if k not in ("RAGFUNNEL_API_TOKEN", "RAGFUNNEL_API_KEY")}
    proc = subprocess.Popen(cmd, env=env)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited with {proc.returncode}")
        try:
            health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).json()
            if not health["index_loaded"]:
                proc.terminate()
                raise SystemExit(f"the index did not load: {health['index_error']}")
            return proc
        except httpx.HTTPError:
            time.sleep(0.3)
    proc.terminate()
    raise SystemExit(f"the server did not start within {timeout:.0f} s")


def stop_server(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


def pct(values: list[float], q: int) -> float:
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


class Run:
    """Latencies (ms) of successful requests, server took_ms, and errors, from any number of threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latency: list[float] = []
        self.server: list[float] = []
        self.errors: list[str] = []
        self.started = 0

    def take(self, limit: int) -> bool:
        with self.lock:
            if self.started >= limit:
                return False
            self.started += 1
            return True

    def one(self, http: httpx.Client, question: str, mode: str, k: int) -> None:
        t0 = time.perf_counter()
        try:
            r = http.post("/search", json={"question": question, "mode": mode, "k": k})
            ms = (time.perf_counter() - t0) * 1000
            if r.status_code == 200 and r.json()["results"]:
                with self.lock:
                    self.latency.append(ms)
                    self.server.append(r.json()["took_ms"])
            else:
                with self.lock:
                    self.errors.append(f"HTTP {r.status_code}")
        except httpx.HTTPError as exc:
            with self.lock:
                self.errors.append(type(exc).__name__)


def run_clients(url: str, qs: list[str], clients: int, seconds: float, limit: int, mode: str, k: int) -> tuple[Run, float]:
    run = Run()
    ready = threading.Barrier(clients + 1)
    go = threading.Event()
    deadline = [0.0]

    def client(offset: int) -> None:
        with httpx.Client(base_url=url, timeout=60) as http:
            http.get("/health")  # connect before the clock starts
            ready.wait()
            go.wait()
            i = offset
            while time.perf_counter() < deadline[0] and run.take(limit):
                run.one(http, qs[i % len(qs)], mode, k)
                i += clients

    threads = [threading.Thread(target=client, args=(c,), daemon=True) for c in range(clients)]
    for t in threads:
        t.start()
    ready.wait()
    t0 = time.perf_counter()
    deadline[0] = t0 + seconds
    go.set()
    for t in threads:
        t.join()
    return run, time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=60.0, help="bound of the concurrent phase")
    parser.add_argument("--max-requests", type=int, default=20000, help="bound of the concurrent phase")
    parser.add_argument("--single-seconds", type=float, default=15.0, help="bound of the one-client phase")
    parser.add_argument("--single-requests", type=int, default=200, help="bound of the one-client phase")
    parser.add_argument("--mode", default="fast")
    parser.add_argument("--workers", type=int, default=1, help="server processes (ragfunnel serve --workers)")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--index", type=Path, default=None, help="index directory (default: $RAGFUNNEL_HOME/index)")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "results" / "serving" / "load_search.md")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]  # other work on the machine shows in the numbers
    qs = questions(args.index)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = start_server(port, args.index, args.workers)
    try:
        with httpx.Client(base_url=url, timeout=60) as http:
            warm = Run()
            for q in qs[:20]:
                warm.one(http, q, args.mode, args.k)
            if warm.errors:
                raise SystemExit(f"warm-up failed: {warm.errors[:3]}")
            single = Run()
            t0 = time.perf_counter()
            i = 0
            while time.perf_counter() - t0 < args.single_seconds and single.take(args.single_requests):
                single.one(http, qs[(20 + i) % len(qs)], args.mode, args.k)
                i += 1
            single_s = time.perf_counter() - t0
        print(f"1 client: {len(single.latency)} requests, p50 {statistics.median(single.latency):.1f} ms", file=sys.stderr)
        load, load_s = run_clients(url, qs, args.clients, args.seconds, args.max_requests, args.mode, args.k)
    finally:
        stop_server(server)

    rows = []
    for name, run, secs in (("1 client", single, single_s), (f"{args.clients} clients", load, load_s)):
        done = len(run.latency)
        rows.append([
            name, done + len(run.errors), len(run.errors), f"{secs:.1f}", f"{done / secs:.1f}",
            f"{statistics.median(run.latency):.1f}", f"{pct(run.latency, 99):.1f}", f"{statistics.median(run.server):.1f}",
        ])
    doc = header("Load: POST /search")
    doc += (
        f"`ragfunnel serve` (uvicorn, {args.workers} process(es), blocking search in the threadpool) on 127.0.0.1 over the full index, "
        f"mode `{args.mode}`, k={args.k}; the {len(qs)} Direct questions round-robin. The concurrent phase runs "
        f"{args.clients} client threads (one keep-alive connection each) for at most {args.seconds:g} s or "
        f"{args.max_requests} requests; the single client runs at most {args.single_seconds:g} s or "
        f"{args.single_requests} requests, after a 20-request warm-up. Latency is measured by the client (queueing "
        "included); server p50 is the response's `took_ms`, the time inside the search and the scene views (under load it "
        "includes waiting for a core, not the HTTP queue). The clients run on the same machine as the server and share "
        f"its cores; load average (1 min) just before the run: {load_before:.2f}.\n\n"
    )
    doc += markdown_table(
        ["clients", "requests", "errors", "seconds", "QPS", "p50 ms", "p99 ms", "server p50 ms"], rows
    )
    if load.errors:
        doc += f"\nErrors seen: {sorted(set(load.errors))}\n"
    write_report(args.out, doc)
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
