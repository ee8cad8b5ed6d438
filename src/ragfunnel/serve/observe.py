"""Observability: a request id per request (X-Request-ID, taken from the client when it sends a sane one), one
access log line per request (JSON with `ragfunnel serve --log-format json`), per-stage timings from the Trace, and
Prometheus metrics at /metrics (prometheus-client). One process: a registry per app. `serve --workers N`: the
workers write their metrics to files in one directory (prometheus-client's multiprocess mode,
`PROMETHEUS_MULTIPROC_DIR`, which `serve` makes and removes), and a scrape that reaches any worker reads them all:
counters and histograms summed over the workers, the index gauges one series per worker (`pid` label), answers in
progress summed.

Metrics (prefix `ragfunnel_`): `http_requests_total{route,method,status}`, `http_request_seconds{route}`,
`search_seconds{mode}`, `stage_seconds{mode,stage}`, `answer_first_token_seconds{mode}`, `answer_seconds{mode}`,
`llm_tokens_total{mode}`, `answers_in_progress`, `index_documents`, `index_reloads_total`, `index_generation_info
{generation,built_at}`. docs/grafana/ragfunnel.json is a dashboard of them."""

from __future__ import annotations

import contextvars
import json
import logging
import os
import re
import time
import uuid
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily

MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"

request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("ragfunnel_request_id", default=None)
access_log = logging.getLogger("ragfunnel.access")
_SANE_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
STAGE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


def _install_record_factory() -> None:
    """Every log record made while a request is handled carries its id (`record.request_id`), whichever logger
    makes it and whenever it is formatted."""
    previous = logging.getLogRecordFactory()
    if getattr(previous, "_ragfunnel_request_id", False):
        return

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        rid = request_id.get()
        if rid is not None and not hasattr(record, "request_id"):
            record.request_id = rid
        return record

    factory._ragfunnel_request_id = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)


_install_record_factory()


# The index and server gauges, read from the server state: one definition for the collector a single process
# registers and for the shared gauges the workers of `--workers N` set.
_STATE_GAUGES = {
    "documents": ("ragfunnel_index_documents", "documents in the index generation served"),
    "reloads": ("ragfunnel_index_reloads", "new index generations switched to since start"),
    "busy": ("ragfunnel_answers_in_progress", "LLM answers being generated"),
    "loaded": ("ragfunnel_index_loaded", "1 when the index is loaded"),
}
_GENERATION_INFO = ("ragfunnel_index_generation_info", "the index generation served (value 1)")


def _state_values(state: Any) -> tuple[dict[str, float], tuple[str, str] | None]:
    """The gauges' values (keys of `_STATE_GAUGES`) and the (generation, built_at) served, None when no index is."""
    gen = state.generation if state.loaded else None
    values = {
        "documents": float(gen.manifest.get("documents") or 0) if gen is not None else 0.0,
        "reloads": float(state.reloads),
        "busy": float(state.answer_slots.used),
        "loaded": 1.0 if state.loaded else 0.0,
    }
    served = (str(gen.label or ""), str(gen.manifest.get("built_at") or "")) if gen is not None else None
    return values, served


def multiprocess_dir() -> str | None:
    """The directory the worker processes share their metrics in, when `serve --workers N` made one."""
    return os.environ.get(MULTIPROCESS_ENV) or None


class Metrics:
    """The app's metrics, in a registry of its own (several apps in one process, as the tests make, do not clash)."""

    def __init__(self, state: Any):
        self.registry = CollectorRegistry(auto_describe=True)
        self.shared = multiprocess_dir() is not None
        r = self.registry
        self.requests = Counter("ragfunnel_http_requests", "HTTP requests by route, method and status",
                                ["route", "method", "status"], registry=r)
        self.latency = Histogram("ragfunnel_http_request_seconds", "HTTP request time (to the end of the body)",
                                 ["route"], buckets=LATENCY_BUCKETS, registry=r)
        self.search = Histogram("ragfunnel_search_seconds", "search time by mode (the Trace's stages summed)", ["mode"],
                                buckets=LATENCY_BUCKETS, registry=r)
        self.stage = Histogram("ragfunnel_stage_seconds", "time of each stage of the funnel", ["mode", "stage"],
                               buckets=STAGE_BUCKETS, registry=r)
        self.first_token = Histogram("ragfunnel_answer_first_token_seconds", "time to the first LLM token", ["mode"],
                                     buckets=LATENCY_BUCKETS, registry=r)
        self.answer = Histogram("ragfunnel_answer_seconds", "time of a whole answer", ["mode"], buckets=LATENCY_BUCKETS,
                                registry=r)
        self.tokens = Counter("ragfunnel_llm_tokens", "LLM tokens (text pieces) streamed", ["mode"], registry=r)
        self.state = state
        if self.shared:  # the state's gauges live in the shared files: set from each worker's state as it changes
            self.gauges = {key: Gauge(name, doc, registry=r, multiprocess_mode="livesum" if key == "busy" else "liveall")
                           for key, (name, doc) in _STATE_GAUGES.items()}
            self.generation_info = Gauge(*_GENERATION_INFO, ["generation", "built_at"], registry=r,
                                         multiprocess_mode="liveall")
            self._served: tuple[str, str] | None = None
        else:
            r.register(_StateCollector(state))

    def refresh(self) -> None:
        """Copy this worker's state into the shared gauges (multiprocess mode; cheap: a few stores to a mapped file)."""
        if not self.shared:
            return
        values, served = _state_values(self.state)
        for key, value in values.items():
            self.gauges[key].set(value)
        if served != self._served:
            if self._served is not None:
                self.generation_info.labels(*self._served).set(0.0)  # a file keeps every series: the old one says 0
            if served is not None:
                self.generation_info.labels(*served).set(1.0)
            self._served = served

    def exposition(self) -> bytes:
        """The Prometheus text of /metrics: this app's registry, or every worker's files in multiprocess mode."""
        if not self.shared:
            return generate_latest(self.registry)
        from prometheus_client import multiprocess

        self.refresh()
        merged = CollectorRegistry()
        multiprocess.MultiProcessCollector(merged)
        return generate_latest(merged)

    def close(self) -> None:
        """At a worker's exit: its live gauges leave the shared files."""
        if self.shared:
            from prometheus_client import multiprocess

            multiprocess.mark_process_dead(os.getpid())

    def observe_trace(self, mode: str, stages: list[Any]) -> dict[str, float]:
        """Per-stage times of one question (StageTrace models or dicts) into the histograms; returned for the log."""
        out: dict[str, float] = {}
        for st in stages:
            name, ms = (st.get("name"), st.get("ms")) if isinstance(st, dict) else (st.name, st.ms)
            if name is None or ms is None:
                continue
            self.stage.labels(mode, name).observe(ms / 1000)
            out[name] = round(float(ms), 2)
        if out:
            self.search.labels(mode).observe(sum(v for k, v in out.items() if not k.startswith("llm")) / 1000)
        return out


    def answer_observer(self, mode: str) -> Callable[[dict[str, Any]], None]:
        """A callback for the Answerer's events of one answer: time to first token, tokens, the whole answer, and
        its retrieval stages; logs one line when it is done."""
        t0 = time.perf_counter()
        seen = {"tokens": 0}

        def observe(event: dict[str, Any]) -> None:
            kind = event.get("type")
            if kind == "token":
                if seen["tokens"] == 0:
                    self.first_token.labels(mode).observe(time.perf_counter() - t0)
                seen["tokens"] += 1
                self.tokens.labels(mode).inc()
            elif kind == "done":
                seconds = time.perf_counter() - t0
                self.answer.labels(mode).observe(seconds)
                result = event.get("result") or {}
                stages = self.observe_trace(mode, (result.get("trace") or {}).get("stages") or [])
                logging.getLogger("ragfunnel.serve").info(
                    "answer", extra={"mode": mode, "ms": round(seconds * 1000, 2), "tokens": seen["tokens"],
                                     "refused": result.get("refused"), "timings": result.get("timings"), "stages": stages})

        return observe


class _StateCollector:
    """Index and server gauges, read when /metrics is scraped."""

    def __init__(self, state: Any):
        self.state = state

    def collect(self):  # noqa: ANN201 - prometheus_client's collector protocol
        values, served = _state_values(self.state)
        families = []
        for key, (name, doc) in _STATE_GAUGES.items():
            family = GaugeMetricFamily(name, doc)
            family.add_metric([], values[key])
            families.append(family)
        info = GaugeMetricFamily(*_GENERATION_INFO, labels=["generation", "built_at"])
        if served is not None:
            info.add_metric(list(served), 1.0)
        return [*families, info]


class RequestMiddleware:
    """ASGI: the request id (X-Request-ID in and out), one access log line, the request metrics."""

    def __init__(self, app: Any, metrics: Callable[[], Metrics]):
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers") or ()).get(b"x-request-id", b"").decode("latin-1")
        rid = given if _SANE_ID.match(given) else uuid.uuid4().hex
        token = request_id.set(rid)
        t0 = time.perf_counter()
        status = 500

        async def send_with_id(message: dict) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message = {**message, "headers": [*message.get("headers", []), (b"x-request-id", rid.encode())]}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            seconds = time.perf_counter() - t0
            route = _route_of(scope)
            metrics = self.metrics()
            metrics.requests.labels(route, scope.get("method", ""), str(status)).inc()
            metrics.latency.labels(route).observe(seconds)
            metrics.refresh()
            access_log.info("%s %s %s %.1f ms", scope.get("method"), scope.get("path"), status, seconds * 1000,
                            extra={"method": scope.get("method"), "path": scope.get("path"),
                                   "route": route, "status": status, "ms": round(seconds * 1000, 2),
                                   "client": (scope.get("client") or ("",))[0]})
            request_id.reset(token)


def _route_of(scope: dict) -> str:
    route = scope.get("route")
    path = getattr(route, "path", None)
    if path:
        return path
    raw = scope.get("path", "")
    return "/static" if raw.startswith("/static/") else ("/docs-assets" if raw.startswith("/docs-assets/") else "other")


# ---- logs -------------------------------------------------------------------------------------------------------

_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime", "color_message"}


class JsonFormatter(logging.Formatter):
    """One JSON object a line: ts, level, logger, message, request_id, and the record's extra fields."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(), "logger": record.name, "message": record.getMessage(),
        }
        rid = getattr(record, "request_id", None) or request_id.get()
        if rid:
            out["request_id"] = rid
        for key, value in vars(record).items():
            if key not in _STANDARD and key not in out and not key.startswith("_"):
                out[key] = value
        if record.exc_info:
            out["error"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        rid = getattr(record, "request_id", None) or request_id.get()
        line = super().format(record)
        return f"{line} [{rid}]" if rid else line


def log_config(fmt: str, level: str) -> dict[str, Any]:
    """uvicorn's `log_config` for `--log-format text|json`: uvicorn's and ragfunnel's loggers through one handler;
    the access lines are ragfunnel's (with the request id), not uvicorn's."""
    formatter = {"()": f"{__name__}.JsonFormatter"} if fmt == "json" else {
        "()": f"{__name__}.TextFormatter", "format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}
    level = level.upper()
    return {
        "version": 1, "disable_existing_loggers": False,
        "formatters": {"main": formatter},
        "handlers": {"main": {"class": "logging.StreamHandler", "formatter": "main", "stream": "ext://sys.stderr"}},
        "loggers": {
            "uvicorn": {"handlers": ["main"], "level": level, "propagate": False},
            "uvicorn.error": {"handlers": ["main"], "level": level, "propagate": False},
            "uvicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
            "ragfunnel": {"handlers": ["main"], "level": level, "propagate": False},
        },
    }
