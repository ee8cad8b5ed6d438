"""`ragfunnel serve`: the web page and HTTP API on one port. Added to the main app by `register(app)`; also runs
on its own as `python -m ragfunnel.serve`.

It binds to 127.0.0.1 by default and warns when told to listen elsewhere without `RAGFUNNEL_API_TOKEN`. The
index and models load once at startup; FastAPI and uvicorn are imported only when the command runs.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Annotated, Optional

import typer

from ragfunnel.cli_options import CollectionOpt, ConfigOpt, IndexOpt, DsnOpt
from ragfunnel.registry import require_modules

LLMOpt = Annotated[
    Optional[str],
    typer.Option("--llm", help="LLM for /ask: local (default), local:<file.gguf>, fake, anthropic[:<model>], openai:<base_url>|<model>; env RAGFUNNEL_LLM"),
]


def serve_cmd(
    host: Annotated[str, typer.Option(help="address to listen on (127.0.0.1: this machine only)")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="port to listen on")] = 8000,
    index: IndexOpt = None,
    dsn: DsnOpt = None,
    collection: CollectionOpt = None,
    llm: LLMOpt = None,
    config: ConfigOpt = None,
    log_level: Annotated[str, typer.Option("--log-level", help="uvicorn log level: critical, error, warning, info, debug")] = "info",
    log_format: Annotated[str, typer.Option("--log-format", help="text, or json: one JSON object a line (ts, level, logger, message, request_id, and per request: method, path, route, status, ms; per search / answer: mode and per-stage ms)")] = "text",
    workers: Annotated[int, typer.Option(min=1, max=16, help="server processes; each loads the index (~0.8 GB) and has its own GIL")] = 1,
    api_key: Annotated[
        Optional[str],
        typer.Option("--api-key", help="require this key on the API routes (Authorization: Bearer KEY, or X-API-Key); "
                                       "env RAGFUNNEL_API_TOKEN / RAGFUNNEL_API_KEY. Needed to listen beyond this "
                                       "machine, unless --insecure"),
    ] = None,
    allow_host: Annotated[
        Optional[list[str]],
        typer.Option("--allow-host", help="a Host name this server answers to besides localhost, 127.0.0.1 and ::1 "
                                          "(repeatable; '*' for any; env RAGFUNNEL_ALLOW_HOSTS, comma-separated)"),
    ] = None,
    insecure: Annotated[bool, typer.Option("--insecure", help="listen beyond this machine without an API key")] = False,
    rate_limit: Annotated[
        Optional[float], typer.Option("--rate-limit", min=0, help="API requests per client address a minute (0: none; default from [limits], 240)")
    ] = None,
    max_answers: Annotated[
        Optional[int], typer.Option("--max-concurrent-answers", min=1, help="LLM answers at once; more get 503 + Retry-After (default from [limits], 2)")
    ] = None,
    max_body: Annotated[
        Optional[int], typer.Option("--max-body-bytes", min=1024, help="largest request body (413 beyond; default from [limits], 65536)")
    ] = None,
    results_dir: Annotated[
        Optional[Path],
        typer.Option("--results-dir", help="folder of the committed evaluation results the page plots (first_stage.json); "
                                           "env RAGFUNNEL_RESULTS_DIR; default: docs/results/first_stage under the current "
                                           "directory, if there is one"),
    ] = None,
):
    """Serve the web page and the HTTP API (search, streamed answers, scenes; OpenAPI docs at /docs).

    Listens on 127.0.0.1 and answers only to local host names unless told otherwise (--host, --allow-host); beyond
    this machine it needs an API key (--api-key, RAGFUNNEL_API_TOKEN) or --insecure. Limits: [limits] of the
    settings and the flags here (docs/operations.md)."""
    require_modules(["fastapi", "uvicorn", "fastapi_offline", "prometheus_client"], "serve", "ragfunnel serve")
    import uvicorn

    from ragfunnel.config import settings_from_options
    from ragfunnel.serve.app import create_app
    from ragfunnel.errors import ConfigError
    from ragfunnel.serve.auth import TOKEN_ENV, binding_problem, is_loopback, token_from_env
    from ragfunnel.serve.security import ALLOW_HOSTS_ENV

    if log_format not in ("text", "json"):
        raise ConfigError(f"--log-format {log_format!r}: choose text or json")
    from ragfunnel.serve.observe import log_config

    logging_setup = {"log_config": log_config(log_format, log_level), "access_log": False}
    settings = settings_from_options(config, index, collection=collection)
    changes = {k: v for k, v in (("rate_per_minute", rate_limit), ("max_concurrent_answers", max_answers),
                                 ("max_body_bytes", max_body)) if v is not None}
    if changes:
        settings.limits = settings.limits.model_validate({**settings.limits.model_dump(), **changes})
    token = (api_key or "").strip() or token_from_env()
    problem = binding_problem(host, token, insecure)
    if problem and problem[1]:
        raise ConfigError(problem[0])
    if problem:
        typer.secho(problem[0], err=True, fg=typer.colors.YELLOW)
    hosts = list(allow_host or [])
    if not is_loopback(host) and host not in ("0.0.0.0", "::", ""):
        hosts.append(host)  # the address it listens on is a name it is reached by
    shown = f"[{host}]" if ":" in host else host
    if workers > 1:
        from ragfunnel.embedding import ENCODER_THREADS_ENV

        # worker processes build their own app from the environment (see serve.app.app_from_env)
        os.environ["RAGFUNNEL_INDEX"] = str(settings.index_dir)
        os.environ["RAGFUNNEL_COLLECTION"] = settings.collection
        os.environ.setdefault(ENCODER_THREADS_ENV, "1")  # N processes share the cores: one encoder thread each
        if config:
            os.environ["RAGFUNNEL_CONFIG"] = str(config)
        if llm:
            os.environ["RAGFUNNEL_LLM"] = llm
        if results_dir:
            os.environ["RAGFUNNEL_RESULTS_DIR"] = str(results_dir.expanduser().resolve())
        if token:
            os.environ[TOKEN_ENV] = token
        if hosts:
            os.environ[ALLOW_HOSTS_ENV] = ",".join([*hosts, *filter(None, os.environ.get(ALLOW_HOSTS_ENV, "").split(","))])
        if changes:
            os.environ["RAGFUNNEL_LIMITS"] = settings.limits.model_dump_json()
        metrics_dir = _shared_metrics_dir()
        typer.echo(f"ragfunnel: index {_where(settings)}; {workers} workers; open http://{shown}:{port}/", err=True)
        try:
            uvicorn.run("ragfunnel.serve.app:app_from_env", factory=True, workers=workers, host=host, port=port,
                        log_level=log_level, timeout_graceful_shutdown=5, **logging_setup)
        finally:
            if metrics_dir is not None:
                shutil.rmtree(metrics_dir, ignore_errors=True)
        return
    app = create_app(settings, llm_name=llm, token=token or "", results_dir=results_dir, allow_hosts=hosts)
    typer.echo(f"ragfunnel: index {_where(settings)}; open http://{shown}:{port}/ (API docs at /docs)", err=True)
    uvicorn.run(app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=5, **logging_setup)


def _shared_metrics_dir() -> Path | None:
    """The workers' shared metrics directory (observe.MULTIPROCESS_ENV): a fresh one of ours, removed at exit (None
    returned), or the one the environment names, emptied of an earlier run's files, which would count again."""
    from ragfunnel.serve.observe import MULTIPROCESS_ENV

    given = os.environ.get(MULTIPROCESS_ENV)
    if given:
        folder = Path(given)
        folder.mkdir(parents=True, exist_ok=True)
        for stale in folder.glob("*.db"):
            stale.unlink(missing_ok=True)
        return None
    made = Path(tempfile.mkdtemp(prefix="ragfunnel-metrics-"))
    os.environ[MULTIPROCESS_ENV] = str(made)
    return made


def _where(settings) -> str:
    """The index's location as shown: its directory, or (postgres) the server and schema without a password."""
    import re

    return re.sub(r"://([^:@/]+):[^@/]*@", r"://\1:***@", str(settings.index_location))


def register(app: typer.Typer) -> None:
    """Add `serve` to `app`."""
    app.command("serve")(serve_cmd)


def main() -> None:
    from ragfunnel.errors import RagfunnelError

    standalone = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    standalone.command()(serve_cmd)
    try:
        standalone()
    except RagfunnelError as exc:
        typer.secho(f"error: {exc}", err=True, fg=typer.colors.RED)
        raise SystemExit(2) from None
