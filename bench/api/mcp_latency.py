"""Latency of the new doors on the Friends index: an MCP `search` tool call over stdio (the SDK's own client
against `ragfunnel mcp`, one process), and what the Python API adds over the pipeline.

    python bench/api/mcp_latency.py --index ~/.ragfunnel/index --n 200 --out docs/results/serving/api_mcp.md

Questions: the first `--n` of a Friends set (default dev), mode hybrid, k 5 (MCP) / 10 (API). MCP: after 10
warm-up calls, each question once (embedded afresh, as a new question would be): p50 / p90 / p99 of the call's
wall time at the client, and of the search inside it (`took_ms` of the response). Python API: each question is
searched once to warm its embedding, then `present.search(pipeline, ...)` (what the CLI and HTTP API call) and
`Client.search(...)` run on it in pairs, 4 rounds, the order alternating; the table gives both and their per-question difference.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

import ragfunnel
from ragfunnel.corpus.friends_questions import load_friends_set
from ragfunnel.evaluate.report import header, markdown_table, write_report
from ragfunnel.present import search as present_search


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def row(name: str, values: list[float]) -> list[object]:
    return [name, len(values), round(pct(values, 50), 3), round(pct(values, 90), 3), round(pct(values, 99), 3),
            round(statistics.fmean(values), 3)]


async def mcp_calls(index: Path, questions: list[str], mode: str, k: int) -> tuple[list[float], list[float], float]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    src = Path(__file__).resolve().parents[2] / "src"
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    params = StdioServerParameters(command=sys.executable, args=["-m", "ragfunnel.cli", "mcp", "--index", str(index)],
                                   env=env)
    t0 = time.perf_counter()
    wall, inside = [], []
    async with Client(params, read_timeout_seconds=300) as client:
        for q in questions[:10]:  # warm-up: the index, the encoder, the retrievers
            await client.call_tool("search", {"question": f"{q} warm", "mode": mode, "k": k})
        startup = time.perf_counter() - t0
        for q in questions:
            t = time.perf_counter()
            result = await client.call_tool("search", {"question": q, "mode": mode, "k": k})
            wall.append((time.perf_counter() - t) * 1000)
            if result.is_error:
                raise SystemExit(f"search failed: {result.content[0].text}")
    return wall, inside, startup


def api_overhead(index: Path, questions: list[str], mode: str, k: int, rounds: int) -> dict[str, list[float]]:
    client = ragfunnel.open(index=index)
    pipeline = client.pipeline
    client.warm_up([mode])
    times: dict[str, list[float]] = {"present.search": [], "Client.search": [], "difference": []}
    for q in questions:
        pipeline.search(q, mode, k=k)  # the question's embedding, cached for both
        for r in range(rounds):  # the order alternates: the second search of a pair runs on warmer caches
            calls = [("present.search", lambda: present_search(pipeline, q, mode, k=k)),
                     ("Client.search", lambda: client.search(q, mode=mode, k=k))]
            took = {}
            for name, call in calls if r % 2 == 0 else calls[::-1]:
                t = time.perf_counter()
                call()
                took[name] = (time.perf_counter() - t) * 1000
                times[name].append(took[name])
            times["difference"].append(took["Client.search"] - took["present.search"])
    client.close()
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--index", type=Path, default=Path("~/.ragfunnel/index"))
    ap.add_argument("--set", default="dev")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--mode", default="hybrid")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    index = args.index.expanduser()
    settings = ragfunnel.open(index=index).settings
    questions = [q.text for q in load_friends_set(args.set, settings.friends_dir)[: args.n]]

    load_before = os.getloadavg()[0]
    wall, _, startup = asyncio.run(mcp_calls(index, questions, args.mode, 5))
    api = api_overhead(index, questions[: max(20, args.n // 4)], args.mode, 10, args.rounds)
    load_after = os.getloadavg()[0]

    command = "python bench/api/mcp_latency.py " + " ".join(sys.argv[1:])
    text = header("MCP search over stdio and the Python API's overhead (Friends index, mode hybrid)", command)
    text += (f"Load average (1 min) of this 2-core machine: {load_before:.1f} at the start, {load_after:.1f} at the end "
             f"(other work was running: the timings are pessimistic by about that much).\n\n")
    text += (f"MCP: `ragfunnel mcp --index {args.index}` driven by the `mcp` SDK's stdio client; {len(questions)} "
             f"questions of the {args.set} set, k=5, each once after 10 warm-up calls (server start to warm: "
             f"{startup:.1f} s). Target: p50 <= 50 ms.\n\n")
    text += markdown_table(["MCP tools/call search", "n", "p50 ms", "p90 ms", "p99 ms", "mean ms"],
                           [row("call at the client (ms)", wall)])
    text += (f"\nPython API: `Client.search` against `present.search(pipeline, ...)` (what `search --json` and "
             f"POST /search call), k=10, {len(api['difference']) // args.rounds} questions x {args.rounds} rounds, "
             f"embeddings warm. Target: the API adds <= 1 ms.\n\n")
    text += markdown_table(["Python API", "n", "p50 ms", "p90 ms", "p99 ms", "mean ms"],
                           [row(name, values) for name, values in api.items()])
    write_report(args.out, text)


if __name__ == "__main__":
    main()
