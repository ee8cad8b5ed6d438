"""`serve --workers N` on one PostgreSQL while a sync writes to it: N worker processes, C clients, 0 errors?

    python bench/serving/pg_sync_load.py --dsn DSN [--scenes 300] [--workers 4] [--clients 20] [--seconds 90]
        [--work /tmp/pg-sync] [--out docs/results/serving/postgres_sync_load.md]

Writes `--scenes` Friends scenes (the first ones of the corpus) as Markdown files to `<work>/folder`, indexes the
folder as the collection `pgsync` on the PostgreSQL at DSN (`ragfunnel index FOLDER --collection pgsync --dsn DSN`;
a rerun syncs), starts `ragfunnel serve --workers N --dsn DSN --collection pgsync` and runs C clients (one keep-alive
connection each) posting the Direct questions to /search (mode `hybrid`, k=10) for `--seconds`. A third of the way
in, a tenth of the files change (a line added), a twentieth are deleted and as many new scenes added, and the sync
runs while the clients go on. Reports QPS, p50/p99, errors (any non-200 or an empty result), and what the sync did
and how long it took, as Markdown with command, date, machine and commit.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load_search import free_port, pct, questions, run_clients, start_server, stop_server  # noqa: E402

from ragfunnel.evaluate.report import header, markdown_table, write_report  # noqa: E402

COLLECTION = "pgsync"


def scene_markdown(record: dict) -> str:
    lines = [f"# {record.get('episode_title') or record['scene_id']}", ""]
    for u in record.get("utterances") or []:
        speakers = " & ".join(u.get("speakers") or []) or "Scene"
        lines.append(f"{speakers}: {u.get('transcript') or u.get('text') or ''}")
        lines.append("")
    return "\n".join(lines)


def scenes(corpus: Path, n: int) -> list[dict]:
    out = []
    with gzip.open(corpus, "rt", encoding="utf-8") as fh:
        for line in fh:
            out.append(json.loads(line))
            if len(out) >= n:
                break
    return out


def ragfunnel(*args: str) -> tuple[float, str]:
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "ragfunnel.cli", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"ragfunnel {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return time.perf_counter() - t0, done.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dsn", required=True)
    ap.add_argument("--corpus", type=Path, default=Path("../shared/data/friends/friends_corpus.jsonl.gz"))
    ap.add_argument("--scenes", type=int, default=300)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=90.0)
    ap.add_argument("--work", type=Path, default=Path("/tmp/pg-sync"))
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    records = scenes(args.corpus, args.scenes + args.scenes // 20)
    first, extra = records[: args.scenes], records[args.scenes:]
    folder = args.work / "folder"
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.md"):
        old.unlink()
    for r in first:
        (folder / f"{r['scene_id']}.md").write_text(scene_markdown(r), encoding="utf-8")
    built_s, _ = ragfunnel("index", str(folder), "--collection", COLLECTION, "--dsn", args.dsn, "--quiet", "--rebuild")
    qs = questions(None)
    port = free_port()
    proc = start_server(port, None, args.workers, ["--dsn", args.dsn, "--collection", COLLECTION])
    url = f"http://127.0.0.1:{port}"
    sync: dict = {}

    def writer() -> None:
        time.sleep(args.seconds / 3)
        changed = first[:: 10]
        deleted = first[5:: 20][: len(extra)]
        for r in changed:
            path = folder / f"{r['scene_id']}.md"
            path.write_text(path.read_text(encoding="utf-8") + "\nScene: (a line added for the sync)\n", encoding="utf-8")
        for r in deleted:
            (folder / f"{r['scene_id']}.md").unlink()
        for r in extra:
            (folder / f"{r['scene_id']}.md").write_text(scene_markdown(r), encoding="utf-8")
        sync["started"] = time.perf_counter() - t0
        seconds, out = ragfunnel("index", str(folder), "--collection", COLLECTION, "--dsn", args.dsn, "--json")
        sync["seconds"] = seconds
        sync["report"] = json.loads(out[out.index("{"):])

    for q in qs[:10]:  # warm-up
        httpx.post(f"{url}/search", json={"question": q, "k": 10}, timeout=60)
    t0 = time.perf_counter()  # the writer's clock; run_clients starts its own once every client has connected
    sync_thread = threading.Thread(target=writer)
    sync_thread.start()
    run, elapsed = run_clients(url, qs, args.clients, args.seconds, 10**9, "hybrid", 10)
    sync_thread.join()
    stop_server(proc)
    counts = sync["report"].get("counts", {})
    text = header("`serve --workers N` on one PostgreSQL while a folder collection syncs")
    text += (f"Collection `{COLLECTION}`: {args.scenes} Friends scenes as Markdown files (indexed in {built_s:.0f} s). "
             f"`ragfunnel serve --workers {args.workers} --dsn … --collection {COLLECTION}`; {args.clients} clients "
             f"(keep-alive) post the Direct questions to /search (hybrid, k=10) for {elapsed:.0f} s on the same 2-core "
             f"machine as the server and PostgreSQL. At {sync['started']:.0f} s the sync starts: "
             f"{counts.get('updated', 0)} files changed, {counts.get('deleted', 0)} deleted, {counts.get('added', 0)} "
             f"added; it took {sync['seconds']:.1f} s (the CLI process, start to end). Load average (1 min) at the end: "
             f"{os.getloadavg()[0]:.2f}.\n\n")
    lat = run.latency
    text += markdown_table(["workers", "clients", "requests", "errors", "QPS", "p50 ms", "p99 ms"], [[
        args.workers, args.clients, len(lat) + len(run.errors), len(run.errors), round(len(lat) / elapsed, 1),
        round(pct(lat, 50), 1), round(pct(lat, 99), 1)]])
    if run.errors:
        text += f"\nerrors: {sorted(set(run.errors))[:10]}\n"
    write_report(args.out, text)


if __name__ == "__main__":
    main()
