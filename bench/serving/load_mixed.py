"""Load and soak test of a server that follows its index: N concurrent clients mixing POST /search and POST /ask
(the fake LLM, streamed) for a bounded time while the index is rebuilt under it (issue 21, load and soak).

    .venv/bin/python bench/serving/load_mixed.py --index DIR [--clients 50] [--seconds 600] [--ask-share 0.2]
        [--workers 1] [--rebuild-corpus FILE] [--out docs/results/serving/load_mixed.md]

Starts `ragfunnel serve --llm fake` on a free loopback port in its own process (limits: the defaults, but answers
at once = clients, so the test measures the server and not its 503s; loopback clients are not rate limited), warms
it up, then runs the clients (one keep-alive connection each) over the Direct questions. With --rebuild-corpus,
`ragfunnel index --rebuild --corpus FILE --index DIR` runs a third of the way in; the table notes when the server
switched to the new generation (/health `reloads`). Every --sample-every seconds it records the server processes'
RSS (from /proc) and the load average. Reports QPS, p50/p99 per kind, errors (any non-200, any stream that did not
end with `done`), RSS over time (and its growth after warm-up), as Markdown with command, date, machine, commit and
an SVG plot of RSS and QPS over time beside it.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load_search import free_port, pct, questions, start_server, stop_server  # noqa: E402

from ragfunnel.evaluate.report import header, markdown_table  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def start_mixed_server(port: int, index: Path, workers: int, clients: int) -> subprocess.Popen:
    """load_search's server, allowed as many LLM answers at once as there are clients (no 503 busy)."""
    config = Path(tempfile.mkdtemp()) / "config.toml"
    config.write_text(f"[limits]\nmax_concurrent_answers = {clients}\n")
    return start_server(port, index, workers, ["--config", str(config)], timeout=300)


def tree_rss_mb(pid: int) -> float:
    """RSS of `pid` and its children (the uvicorn workers), MB."""
    pids, total = [pid], 0.0
    try:
        for line in subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout.split():
            pids.append(int(line))
    except (OSError, ValueError):
        pass
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) / 1024
        except OSError:
            pass
    return total


class Stats:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latency: dict[str, list[float]] = {"search": [], "ask": []}
        self.errors: dict[str, list[str]] = {"search": [], "ask": []}
        self.done_at: list[float] = []

    def ok(self, kind: str, ms: float) -> None:
        with self.lock:
            self.latency[kind].append(ms)
            self.done_at.append(time.perf_counter())

    def error(self, kind: str, what: str) -> None:
        with self.lock:
            self.errors[kind].append(what)


def one(http: httpx.Client, stats: Stats, kind: str, question: str) -> None:
    t0 = time.perf_counter()
    try:
        if kind == "search":
            r = http.post("/search", json={"question": question, "k": 10})
            if r.status_code != 200 or not r.json().get("results"):
                stats.error(kind, f"HTTP {r.status_code}")
                return
        else:
            with http.stream("POST", "/ask", json={"question": question}) as r:
                if r.status_code != 200:
                    r.read()
                    stats.error(kind, f"HTTP {r.status_code}")
                    return
                events = [line for line in r.iter_lines() if line.startswith("event: ")]
            if not events or events[-1] != "event: done":
                stats.error(kind, f"stream ended with {events[-1] if events else 'nothing'}")
                return
        stats.ok(kind, (time.perf_counter() - t0) * 1000)
    except httpx.HTTPError as exc:
        stats.error(kind, type(exc).__name__)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=600.0)
    parser.add_argument("--ask-share", type=float, default=0.2, help="share of requests that are /ask")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--rebuild-corpus", type=Path, default=None, help="rebuild the index from this corpus a third of the way in")
    parser.add_argument("--sample-every", type=float, default=10.0)
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "results" / "serving" / "load_mixed.md")
    args = parser.parse_args()
    qs = questions(args.index)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    load_before = os.getloadavg()[0]
    server = start_mixed_server(port, args.index, args.workers, args.clients)
    stats, samples, notes = Stats(), [], []
    stop = threading.Event()
    try:
        with httpx.Client(base_url=url, timeout=120) as http:
            for q in qs[:20]:
                one(http, Stats(), "search", q)
                one(http, Stats(), "ask", q)
        rng = random.Random(7)

        def client(n: int) -> None:
            mine = random.Random(n)
            with httpx.Client(base_url=url, timeout=120) as http:
                i = n
                while not stop.is_set():
                    one(http, stats, "ask" if mine.random() < args.ask_share else "search", qs[i % len(qs)])
                    i += args.clients

        threads = [threading.Thread(target=client, args=(c,), daemon=True) for c in range(args.clients)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        rebuild: subprocess.Popen | None = None
        rebuilt_at = switched_at = None
        next_sample = 0.0
        while (now := time.perf_counter() - t0) < args.seconds:
            if args.rebuild_corpus and rebuild is None and now >= args.seconds / 3:
                cmd = [sys.executable, "-m", "ragfunnel.cli", "index", "--rebuild", "--quiet", "--corpus",
                       str(args.rebuild_corpus), "--index", str(args.index)]
                rebuild = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                notes.append(f"rebuild started at {now:.0f} s")
            if rebuild is not None and rebuilt_at is None and rebuild.poll() is not None:
                rebuilt_at = now
                notes.append(f"rebuild finished at {now:.0f} s (exit {rebuild.returncode})")
            if now >= next_sample:
                with stats.lock:
                    recent = sum(1 for t in stats.done_at if t >= t0 + now - args.sample_every)
                try:
                    health = httpx.get(f"{url}/health", timeout=10).json()
                    if health.get("reloads") and switched_at is None:
                        switched_at = now
                        notes.append(f"server on the new generation at {now:.0f} s ({health['documents']} documents)")
                except (httpx.HTTPError, ValueError):
                    pass
                samples.append((now, tree_rss_mb(server.pid), recent / args.sample_every, os.getloadavg()[0]))
                next_sample += args.sample_every
            time.sleep(0.5)
        stop.set()
        for t in threads:
            t.join(timeout=130)
        elapsed = time.perf_counter() - t0
        if rebuild is not None and rebuild.poll() is None:
            rebuild.wait()
        _ = rng
    finally:
        stop.set()
        stop_server(server)

    rows = []
    for kind in ("search", "ask"):
        lat, errs = stats.latency[kind], stats.errors[kind]
        rows.append([kind, len(lat) + len(errs), len(errs), f"{len(lat) / elapsed:.1f}",
                     f"{statistics.median(lat):.1f}" if lat else "-", f"{pct(lat, 99):.1f}" if lat else "-"])
    total_ok = sum(len(v) for v in stats.latency.values())
    rows.append(["all", total_ok + sum(len(v) for v in stats.errors.values()), sum(len(v) for v in stats.errors.values()),
                 f"{total_ok / elapsed:.1f}", "", ""])
    warm = [rss for t, rss, _, _ in samples if t >= min(60.0, args.seconds / 4)]
    growth = (warm[-1] - warm[0]) if len(warm) >= 2 else float("nan")
    doc = header("Load and soak: /search and /ask while the index is rebuilt")
    doc += (f"`ragfunnel serve --llm fake --workers {args.workers}` on 127.0.0.1 over `{args.index.name}`; {args.clients} client "
            f"threads (keep-alive), {args.ask_share:.0%} of requests /ask (streamed, must end with `done`), the rest "
            f"/search k=10, the Direct questions, for {elapsed:.0f} s. Clients share the machine's cores with the "
            f"server. Load average (1 min) before: {load_before:.2f}, during: "
            f"{statistics.mean(s[3] for s in samples):.2f} (mean of the samples).\n\n")
    doc += markdown_table(["kind", "requests", "errors", "QPS", "p50 ms", "p99 ms"], rows)
    doc += "\n" + "".join(f"- {n}\n" for n in notes)
    doc += (f"- RSS of the server processes: {samples[0][1]:.0f} MB at the start, {samples[-1][1]:.0f} MB at the end; "
            f"growth after warm-up ({min(60.0, args.seconds / 4):.0f} s): {growth:+.0f} MB\n")
    errors = [e for v in stats.errors.values() for e in v]
    if errors:
        doc += f"- errors: {', '.join(f'{e} x{errors.count(e)}' for e in sorted(set(errors)))}\n"
    doc += "\nOver time (every {:.0f} s):\n\n".format(args.sample_every)
    doc += markdown_table(["s", "RSS MB", "QPS", "load"], [[f"{t:.0f}", f"{r:.0f}", f"{q:.1f}", f"{la:.2f}"] for t, r, q, la in samples])
    plot = args.out.with_suffix(".svg")
    doc += f"\n![RSS and QPS over time]({plot.name})\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(doc)
    plot.write_text(svg(samples))
    print(doc)


def svg(samples: list[tuple[float, float, float, float]]) -> str:
    """RSS (MB, blue) and QPS (orange) over time, as a small standalone SVG."""
    w, h, pad = 640, 240, 40
    if len(samples) < 2:
        return f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}"></svg>'
    t_max = max(s[0] for s in samples) or 1
    def line(values: list[float], color: str) -> str:
        top = max(values) * 1.1 or 1
        pts = " ".join(f"{pad + (t / t_max) * (w - 2 * pad):.1f},{h - pad - (v / top) * (h - 2 * pad):.1f}"
                       for t, v in zip([s[0] for s in samples], values))
        return (f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{pts}"/>'
                f'<text x="{w - pad + 2}" y="{pad}" fill="{color}" font-size="11">max {max(values):.0f}</text>')
    rss, qps = [s[1] for s in samples], [s[2] for s in samples]
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif">'
            f'<rect width="{w}" height="{h}" fill="white"/>'
            f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" stroke="#888"/>'
            f'<text x="{pad}" y="{h - 10}" font-size="11">0 s</text><text x="{w - pad - 30}" y="{h - 10}" font-size="11">{t_max:.0f} s</text>'
            f'<text x="{pad}" y="20" font-size="12" fill="#1f77b4">RSS MB</text>'
            f'<text x="{pad + 70}" y="20" font-size="12" fill="#ff7f0e">QPS</text>'
            f'{line(rss, "#1f77b4")}{line(qps, "#ff7f0e")}</svg>\n')


if __name__ == "__main__":
    main()
