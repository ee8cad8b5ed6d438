"""`ragfunnel serve` (serve.cli.register): options, localhost by default, the warning for an open bind without a
token. uvicorn.run is replaced, so nothing listens."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from ragfunnel.serve import cli as serve_cli
from ragfunnel.serve.auth import binding_problem


@pytest.fixture
def app() -> typer.Typer:
    root = typer.Typer()
    root.command("noop")(lambda: None)  # two commands, so `serve` is a subcommand as in the real CLI
    serve_cli.register(root)
    return root


@pytest.fixture
def runs(monkeypatch):
    import uvicorn

    calls = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.append((app, kw)))
    monkeypatch.delenv("RAGFUNNEL_API_TOKEN", raising=False)
    return calls


def test_help_lists_the_options(app):
    out = CliRunner().invoke(app, ["serve", "--help"], terminal_width=200)
    assert out.exit_code == 0
    for option in ("--host", "--port", "--index", "--llm", "--config", "--results-dir"):
        assert option in out.output
    assert "127.0.0.1" in out.output and "8000" in out.output


def test_defaults_bind_to_localhost_port_8000(app, runs, tmp_path):
    out = CliRunner().invoke(app, ["serve", "--index", str(tmp_path / "idx"), "--llm", "fake"])
    assert out.exit_code == 0, out.output
    ((fastapi_app, kw),) = runs
    assert (kw["host"], kw["port"]) == ("127.0.0.1", 8000)
    state = fastapi_app.state.rf
    assert state.settings.index_dir == tmp_path / "idx" and state.llm_name == "fake" and state.token is None
    assert "warning" not in out.output and "http://127.0.0.1:8000/" in out.output


def test_results_dir_option(app, runs, tmp_path, monkeypatch):
    monkeypatch.delenv("RAGFUNNEL_RESULTS_DIR", raising=False)
    monkeypatch.chdir(tmp_path)  # no docs/results/first_stage here: no results directory unless given
    out = CliRunner().invoke(app, ["serve", "--index", str(tmp_path / "idx")])
    assert out.exit_code == 0, out.output
    assert runs[-1][0].state.rf.results_dir is None
    out = CliRunner().invoke(app, ["serve", "--index", str(tmp_path / "idx"), "--results-dir", str(tmp_path / "res")])
    assert out.exit_code == 0, out.output
    assert runs[-1][0].state.rf.results_dir == tmp_path / "res"


def test_open_bind_without_a_key_is_refused_unless_insecure(app, runs, tmp_path):
    out = CliRunner().invoke(app, ["serve", "--host", "0.0.0.0", "--port", "8123", "--index", str(tmp_path)])
    assert out.exit_code != 0 and not runs
    assert "needs an API key" in str(out.exception) and "--insecure" in str(out.exception)
    out = CliRunner().invoke(app, ["serve", "--host", "0.0.0.0", "--port", "8123", "--index", str(tmp_path), "--insecure"])
    assert out.exit_code == 0, out.output
    assert "warning: listening on 0.0.0.0 without an API key" in out.output
    assert runs[0][1]["host"] == "0.0.0.0" and runs[0][1]["port"] == 8123


def test_api_key_allow_host_and_limit_flags(app, runs, tmp_path):
    out = CliRunner().invoke(app, ["serve", "--host", "192.168.1.5", "--index", str(tmp_path), "--api-key", "k3y",
                                   "--allow-host", "rag.example.org", "--rate-limit", "30", "--max-concurrent-answers",
                                   "1", "--max-body-bytes", "4096"])
    assert out.exit_code == 0, out.output
    state = runs[0][0].state.rf
    assert state.token == "k3y"
    assert (state.limits.rate_per_minute, state.limits.max_concurrent_answers, state.limits.max_body_bytes) == (30, 1, 4096)


def test_open_bind_with_token_is_quiet_and_guarded(app, runs, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGFUNNEL_API_TOKEN", "s3cret")
    out = CliRunner().invoke(app, ["serve", "--host", "0.0.0.0", "--index", str(tmp_path)])
    assert out.exit_code == 0 and "warning" not in out.output
    assert runs[0][0].state.rf.token == "s3cret"


def test_bad_port_is_rejected(app, runs):
    out = CliRunner().invoke(app, ["serve", "--port", "70000"])
    assert out.exit_code != 0 and not runs


@pytest.mark.parametrize("host, warns", [("127.0.0.1", False), ("localhost", False), ("::1", False),
                                         ("0.0.0.0", True), ("192.168.1.5", True), ("::", True)])
def test_binding_problem(host, warns):
    assert (binding_problem(host, None, False) is not None) is warns
    assert binding_problem(host, "token", False) is None
    if warns:
        assert binding_problem(host, None, False)[1] and not binding_problem(host, None, True)[1]


def test_cli_module_does_not_import_fastapi():
    import subprocess
    import sys

    code = "import sys, ragfunnel.serve.cli; print('fastapi' in sys.modules, 'uvicorn' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_log_format_json_configures_uvicorn(app, runs, tmp_path):
    out = CliRunner().invoke(app, ["serve", "--index", str(tmp_path), "--log-format", "json"])
    assert out.exit_code == 0, out.output
    kw = runs[0][1]
    assert kw["log_config"]["formatters"]["main"]["()"].endswith("JsonFormatter") and kw["access_log"] is False
    out = CliRunner().invoke(app, ["serve", "--index", str(tmp_path), "--log-format", "xml"])
    assert out.exit_code != 0 and "choose text or json" in str(out.exception)
