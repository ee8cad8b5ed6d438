"""`ragfunnel serve --workers 2`: /metrics counts the requests of every worker, whichever worker the scrape reaches
(prometheus-client's multiprocess mode), shows each live worker's index gauges, and the shared directory the server
made is gone after it stops."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.serve.test_observe import metric

pytestmark = pytest.mark.integration


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_workers_share_their_metrics(small_index, tmp_path):
    port = free_port()
    env = {k: v for k, v in os.environ.items()
           if k not in ("RAGFUNNEL_API_TOKEN", "RAGFUNNEL_API_KEY", "PROMETHEUS_MULTIPROC_DIR")}
    env["TMPDIR"] = str(tmp_path)  # where serve makes its metrics directory
    proc = subprocess.Popen([sys.executable, "-m", "ragfunnel.serve", "--index", str(small_index.path), "--host",
                             "127.0.0.1", "--port", str(port), "--workers", "2", "--llm", "fake", "--log-level",
                             "warning"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=2).json()["index_loaded"]:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.3)
        shared = [p for p in Path(tmp_path).iterdir() if p.name.startswith("ragfunnel-metrics-")]
        assert len(shared) == 1
        for _ in range(12):  # a new connection each: the kernel hands them to either worker
            assert httpx.post(f"{url}/search", json={"question": "pizza", "k": 2},
                              headers={"Connection": "close"}, timeout=30).status_code == 200
        pids, counts = set(), set()
        deadline = time.monotonic() + 60
        while len(pids) < 2 and time.monotonic() < deadline:  # until both workers have answered something
            httpx.get(f"{url}/health", headers={"Connection": "close"}, timeout=10)
            text = httpx.get(f"{url}/metrics", headers={"Connection": "close"}, timeout=10).text
            counts.add(metric(text, "ragfunnel_http_requests_total", route="/search", method="POST", status="200"))
            pids |= set(re.findall(r'^ragfunnel_index_loaded\{pid="(\d+)"\} 1\.0$', text, re.M))
        assert counts == {12.0}  # every scrape, from whichever worker, counts all twelve
        assert len(pids) == 2, text
        assert metric(text, "ragfunnel_index_documents", pid=sorted(pids)[0]) == len(small_index.docs)
        assert metric(text, "ragfunnel_answers_in_progress") == 0
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
    assert not any(p.name.startswith("ragfunnel-metrics-") for p in Path(tmp_path).iterdir())
