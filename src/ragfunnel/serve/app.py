"""The HTTP API and web page: `create_app(settings, pipeline=None, llm=None) -> FastAPI`.

Routes (API routes need `Authorization: Bearer <token>` when `RAGFUNNEL_API_TOKEN` is set):

- `POST /search` {question, mode, k, filter}: a `SearchResponse` (`ragfunnel.schema`, as `ragfunnel search --json` prints
  it): ranked scenes with labels, titles, scores, matched lines (+ highlight spans) and the Trace of every stage;
- `POST /ask` (same body, plus `reader` and `history`: earlier turns; a follow-up is rewritten into a standalone
  question, shown in the result's `rewrite` and the trace's `rewrite` stage): Server-Sent Events: `token` events (the answer's text with the `CITATION` lines held
  back), a `retry` event when the first reply had no valid citation, then one `done` event holding the
  `AnswerResponse` (`ragfunnel.schema`, as `ragfunnel ask --json` prints it: answer, citations, refused, retrieved
  scenes, timings, trace); an `error` event if the stream fails after it started;
- `GET /scenes/{scene_id}[?q=question]`: the full scene (lines with speakers; `q` adds highlight spans);
- `GET /results/first_stage`: the committed evaluation results, `first_stage.json` of the results directory
  (`ragfunnel serve --results-dir`, env RAGFUNNEL_RESULTS_DIR; default: docs/results/first_stage under the current
  directory, when there is one); 404 with a message saying so when there is none;
- `POST /mcp`: the MCP tools of `ragfunnel mcp` (search, ask, get_passage, list_collections) over streamable HTTP
  (stateless, JSON replies), with the `mcp` extra installed;
- `GET /health` (open): index loaded, document count, modes, version; `/docs`, `/redoc`: the OpenAPI docs (their
  assets served locally by fastapi-offline, no CDN); `/`: the web page.

The index, the retrievers of the main modes and the encoder load once, at startup (lifespan), and are shared
by every request: the pipeline is thread-safe for reads, and all blocking work runs in the threadpool so the event
loop stays free. Errors a user can fix map to readable JSON bodies `{"error": ...}`: 422 for a bad request, 404 for
an unknown scene, 401 without the token, 503 when a mode, the index or the LLM is not available (e.g. `accurate`
without a trained reranker), while the other modes keep working.
"""

from __future__ import annotations

import asyncio.base_events
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline
from starlette.exceptions import HTTPException as StarletteHTTPException

from ragfunnel import __version__
from ragfunnel.api.conversation import rewrite
from ragfunnel.config import Limits, Settings, load_settings
from ragfunnel.errors import ConfigError, QueryError, RagfunnelError
from ragfunnel.generate.answer import Answerer, AnswerSettings
from ragfunnel.generate.llm import LLM, make_llm
from ragfunnel.generate.reader import usable_reader
from ragfunnel.generate.stream import CitationLineFilter
from ragfunnel.pipeline import Pipeline
from ragfunnel.present import match_spans
from ragfunnel.schema import QuestionRewrite
from ragfunnel.present import search as present_search
from ragfunnel.serve import auth, mcp_http
from ragfunnel.serve.observe import Metrics, RequestMiddleware
from ragfunnel.serve.security import SecurityMiddleware, allowed_hosts
from ragfunnel.serve.limits import BodyLimit, RateLimiter, Slots, busy, filter_terms
from ragfunnel.serve.streaming import stream as stream_frames
from ragfunnel.serve.redact import public_text
from ragfunnel.serve.openai_chat import make_router as openai_chat_router
from ragfunnel.store.filters import Filter
from ragfunnel.serve.schemas import (
    AnswerResponse,
    ErrorBody,
    HealthResponse,
    AskBody,
    QueryBody,
    SceneResponse,
    SearchResponse,
)

log = logging.getLogger("ragfunnel.serve")

STATIC_DIR = Path(__file__).resolve().parent / "static"
RESULTS_DIR_ENV = "RAGFUNNEL_RESULTS_DIR"
DEFAULT_RESULTS_DIR = Path("docs") / "results" / "first_stage"  # under the current directory (a checkout of the repo)
WARM_MODES = ("bm25", "vector")  # besides the default mode, whose first search also loads the encoder


class MissingResource(Exception):
    """Something the request needs (the index, the LLM) could not be loaded at startup."""


CHECK_GENERATION_EVERY_S = 0.5  # how often a request looks at the index's manifest (one stat)
RETIRED_GRACE_S = 30.0  # an old generation is closed once unused, and at least this long after it was replaced


class Generation:
    """One complete build of the index as the server opened it: its pipeline, the manifest it was opened at, and
    how many requests use it (a replaced generation is closed when the last one is done)."""

    def __init__(self, pipeline: Pipeline, key: tuple[int, int, int] | None, manifest: dict[str, Any], owned: bool):
        self.pipeline, self.key, self.manifest, self.owned = pipeline, key, manifest, owned
        self.users = 0
        self.retired_at: float | None = None
        self.closed = False
        self.answerers: dict[str, Answerer] = {}

    @property
    def label(self) -> str | None:
        value = self.manifest.get("generation") or self.manifest.get("built_at")
        return str(value) if value is not None else None


def _return_freed_memory() -> None:
    """After a generation is closed: collect it (its retrievers and pipeline refer to each other), and ask glibc to
    hand the freed pages back (a switch on the Friends index: 662 MB after it without, 620 MB with; 598 before)."""
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to ask
        pass


def manifest_key(index_dir: Path) -> tuple[int, int, int] | None:
    """What identifies the index's current manifest file (a rebuild swaps the folder, a sync rewrites the file)."""
    try:
        st = (index_dir / "manifest.json").stat()
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def read_manifest(index_dir: Path) -> dict[str, Any]:
    try:
        data = json.loads((index_dir / "manifest.json").read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


class ServerState:
    """What the app shares across requests: settings, the pipeline (index + models) of the current index
    generation, the LLM."""

    def __init__(
        self,
        settings: Settings,
        pipeline: Pipeline | None,
        llm: LLM | None,
        llm_name: str | None,
        token: str | None,
        results_dir: Path | None,
        llm_input: str | None = None,
    ):
        self.settings = settings
        self.llm_input = llm_input  # what the LLM reads; None: the scenes
        self.owns_pipeline = pipeline is None
        self.pipeline = pipeline if pipeline is not None else Pipeline(settings, llm=self.transform_llm)
        self.pipeline.provide_llm(self.transform_llm)
        index_dir = settings.index_dir
        self.generation = Generation(self.pipeline, manifest_key(index_dir), read_manifest(index_dir), self.owns_pipeline)
        self._generation_lock = threading.Lock()
        self._retired: list[Generation] = []
        self._checked_at = 0.0
        self._reloading = False
        self.reloads = 0
        self.llm = llm
        self.llm_name = llm_name
        self.token = token
        self.results_dir = results_dir
        self.index_error: str | None = None
        self.llm_error: str | None = None
        self.loaded = False
        limits = settings.limits
        self.rate = RateLimiter(limits.rate_per_minute, limits.rate_burst)
        self.answer_slots = Slots(limits.max_concurrent_answers)

    # ---- limits ---------------------------------------------------------------------------------------------------

    @property
    def limits(self) -> Limits:
        return self.settings.limits

    def check_query(self, body: QueryBody) -> None:
        """The limits of `[limits]` on one question (the schema holds the absolute ones): 422 beyond."""
        limits, problems = self.limits, []
        if len(body.question) > limits.max_question_chars:
            problems.append(("question", f"the question is {len(body.question)} characters long; the limit is "
                                         f"{limits.max_question_chars}"))
        if body.k > limits.max_k:
            problems.append(("k", f"k is {body.k}; this server returns at most {limits.max_k} results"))
        if body.filter is not None and filter_terms(body.filter) > limits.max_filter_terms:
            problems.append(("filter", f"the filter has {filter_terms(body.filter)} fields, operators and values; "
                                       f"the limit is {limits.max_filter_terms}"))
        if problems:
            raise RequestValidationError([{"loc": ("body", field), "msg": msg, "type": "value_error"}
                                          for field, msg in problems])

    def generation_slot(self) -> Callable[[], None]:
        """Take one of the `max_concurrent_answers` slots for an LLM answer (503 + Retry-After when all are taken,
        never a queue); returns its release, to be called exactly once."""
        if not self.answer_slots.acquire():
            raise busy(self.answer_slots.size)
        released = threading.Event()

        def release() -> None:
            if not released.is_set():
                released.set()
                self.answer_slots.release()

        return release

    # ---- startup / shutdown ---------------------------------------------------------------------------------------

    def load(self) -> None:
        """Open the index and warm the main modes' retrievers and the encoder; make the LLM. Failures are kept as
        messages: /health reports them, and the routes that need what failed answer 503."""
        t0 = time.perf_counter()
        try:
            self.pipeline.store  # noqa: B018 - opens the index
            self.loaded = True
        except RagfunnelError as exc:
            self.index_error = str(exc)
            log.error("index not loaded: %s", exc)
        except Exception as exc:  # noqa: BLE001 - a damaged index the store did not foresee: serve the 503, not a crash
            self.index_error = f"the index could not be opened ({type(exc).__name__}: {exc})"
            log.exception("index not loaded")
        if self.loaded:
            for mode in dict.fromkeys([self.settings.default_mode, *WARM_MODES]):
                if mode not in self.settings.modes:
                    continue
                try:  # loads the retrievers' engines and the encoder (and a default mode's reranker)
                    self.pipeline.warm_up([mode])
                except RagfunnelError as exc:  # that mode answers 503 with the message; the others work
                    log.warning("mode %s is not available: %s", mode, exc)
        if self.llm is None:
            try:
                self.llm = make_llm(self.llm_name, self.settings.home)
            except ConfigError as exc:
                self.llm_error = str(exc)
                log.warning("no LLM: /ask answers 503 (%s)", exc)
        warm_up = getattr(self.llm, "warm_up", None)  # an LLM that can load its model now does so
        if callable(warm_up):
            try:
                warm_up()
            except ConfigError as exc:
                self.llm, self.llm_error = None, str(exc)
                log.warning("no LLM: /ask answers 503 (%s)", exc)
        log.info("ready in %.1fs", time.perf_counter() - t0)

    def transform_llm(self) -> LLM:
        """The server's LLM, for modes that transform the question (deep); none configured is a 503 there."""
        if self.llm is None:
            raise MissingResource(self.llm_error or "no LLM is configured")
        return self.llm

    def close(self) -> None:
        with self._generation_lock:
            for gen in [self.generation, *self._retired]:
                if gen.owned and not gen.closed:
                    gen.closed = True
                    gen.pipeline.close()

    # ---- index generations ------------------------------------------------------------------------------------------

    def lease(self, needs_llm: bool) -> tuple[Generation, Callable[[], None]]:
        """For one answer: a generation slot when it needs the LLM (503 + Retry-After when none is free) and the
        current index generation; returns (generation, release), release to be called once (more is harmless)."""
        slot = self.generation_slot() if needs_llm else None
        gen = self.acquire()
        done = threading.Event()

        def release() -> None:
            if not done.is_set():
                done.set()
                self.release(gen)
                if slot is not None:
                    slot()

        return gen, release

    def acquire(self) -> Generation:
        """The current generation, counted as in use until `release`."""
        with self._generation_lock:
            gen = self.generation
            gen.users += 1
            return gen

    def release(self, gen: Generation) -> None:
        with self._generation_lock:
            gen.users -= 1
        self._close_retired()

    def _close_retired(self, force: bool = False) -> None:
        now = time.monotonic()
        with self._generation_lock:
            done = [g for g in self._retired if g.users <= 0 and (force or now - (g.retired_at or now) >= RETIRED_GRACE_S)]
            self._retired = [g for g in self._retired if g not in done]
        for gen in done:
            if gen.owned and not gen.closed:
                gen.closed = True
                gen.pipeline.close()  # its files (of a folder a rebuild has deleted) are let go
                log.info("index generation %s closed", gen.label)
        if done:
            del gen
            done.clear()
            _return_freed_memory()

    def check_generation(self) -> bool:
        """Cheap (one stat, at most every CHECK_GENERATION_EVERY_S): has a new complete generation of the index
        appeared? Then open it (`reload`, in the caller's thread) and return True. Requests keep the generation they
        started with; the next ones get the new one."""
        now = time.monotonic()
        if now - self._checked_at < CHECK_GENERATION_EVERY_S or self._reloading:
            return False
        self._checked_at = now
        self._close_retired()
        key = manifest_key(self.settings.index_dir)
        if key is None or key == self.generation.key:
            return False
        manifest = read_manifest(self.settings.index_dir)
        if not manifest.get("complete") or manifest.get("dirty"):
            return False  # a write is under way: wait for its last manifest
        with self._generation_lock:
            if self._reloading:
                return False
            self._reloading = True
        try:
            return self.reload(key, manifest)
        finally:
            self._reloading = False

    def reload(self, key: tuple[int, int, int], manifest: dict[str, Any]) -> bool:
        """Open the index anew and switch to it once it is ready (warm); the old generation serves until then."""
        t0 = time.perf_counter()
        pipeline = Pipeline(self.settings, llm=self.transform_llm)
        try:
            pipeline.store  # noqa: B018 - opens the index
            for mode in dict.fromkeys([self.settings.default_mode, *WARM_MODES]):
                if mode in self.settings.modes:
                    try:
                        pipeline.warm_up([mode])
                    except RagfunnelError as exc:
                        log.warning("mode %s is not available: %s", mode, exc)
        except Exception as exc:  # noqa: BLE001 - keep serving the old generation; try again when the manifest changes
            log.warning("index generation not loaded, the old one serves on: %s", exc)
            self.generation.key = key  # not again until it changes
            pipeline.close()
            return False
        new = Generation(pipeline, key, manifest, owned=True)
        with self._generation_lock:
            old, self.generation, self.pipeline = self.generation, new, pipeline
            old.retired_at = time.monotonic()
            self._retired.append(old)
            self.loaded, self.index_error = True, None
            self.reloads += 1
        log.info("index generation %s (%s documents) serving, loaded in %.1fs; %s retired", new.label,
                 manifest.get("documents"), time.perf_counter() - t0, old.label)
        self._close_retired()
        return True

    # ---- work (runs in the threadpool) ----------------------------------------------------------------------------

    def require_index(self) -> None:
        if not self.loaded:
            raise MissingResource(self.index_error or "the index is not loaded")

    def resolve_mode(self, mode: str) -> str:
        try:
            return self.settings.resolve_mode(mode)[0]
        except ConfigError as exc:
            raise RequestValidationError(
                [{"loc": ("body", "mode"), "msg": str(exc), "type": "value_error", "input": mode}]
            ) from None

    def search(self, question: str, mode: str, k: int, where: Filter | None = None, route: str | None = None) -> SearchResponse:
        # a mode that transforms the question uses the LLM: it takes an answer slot (503 + Retry-After when none is free)
        _, spec = self.settings.resolve_mode(mode)
        gen, release = self.lease(needs_llm=bool(spec.transforms))
        try:
            return present_search(gen.pipeline, question, mode, k=k, where=where, route=route)
        finally:
            release()

    def scene(self, scene_id: str, q: str | None) -> dict[str, Any] | None:
        gen = self.acquire()
        try:
            return self._scene(gen.pipeline.store, scene_id, q)
        finally:
            self.release(gen)

    def _scene(self, store: Any, scene_id: str, q: str | None) -> dict[str, Any] | None:
        doc = store.document(scene_id)
        if doc is None:
            return None
        terms = set(store.analyze(q)) if q and q.strip() else set()
        lines = []
        for u in doc.units:
            rendered = u.render()
            lines.append({
                "id": u.unit_id, "speakers": list(u.speakers), "text": u.text, "direction": u.is_direction,
                "rendered": rendered, "spans": match_spans(store, rendered, terms) if terms else [],
            })
        metadata = {k: v for k, v in doc.metadata.items() if isinstance(v, (str, int, float, bool)) or v is None}
        return {"id": doc.doc_id, "label": doc.label, "title": doc.title, "metadata": metadata, "lines": lines}

    def has_reader(self, gen: Generation | None = None) -> bool:
        """The collection has an extractive reader (its own, or one its corpus ships)."""
        gen = gen or self.generation
        return usable_reader(self.settings.models_dir, gen.pipeline.corpus) is not None

    def reader_for(self, asked: str | None, path: str) -> str:
        """The reader of a question: as asked; by default the LLM when the server has one, else the evidence lines
        (the extractive reader only when asked: not yet as good as the evidence lines). A question that needs no LLM
        (a list, out of scope) never waits for one."""
        if asked == "llm" and path != "lookup" and self.llm is None:
            return "evidence"
        if asked is not None and asked != "auto":
            return asked
        if self.llm is not None:
            return "llm"
        return "evidence"

    def answerer(self, reader: str | None = None, gen: Generation | None = None) -> Answerer:
        """The answerer of `reader` (default: llm) over `gen` (default: the current generation)."""
        gen = gen or self.generation
        if reader in ("evidence", "extractive"):
            if reader not in gen.answerers:
                gen.answerers[reader] = Answerer(gen.pipeline, None, settings=AnswerSettings(reader=reader))
            return gen.answerers[reader]
        if self.llm is None:
            raise MissingResource(self.llm_error or "no LLM is configured")
        answerer = gen.answerers.get("llm")
        if answerer is None or answerer.llm is not self.llm:
            # the LLM reads the scenes unless the server was started to phrase the extractive reader's candidates
            llm_input = self.llm_input or "scenes"
            answerer = gen.answerers["llm"] = Answerer(gen.pipeline, self.llm,
                                                            settings=AnswerSettings(llm_input=llm_input))
        return answerer

    def health(self) -> dict[str, Any]:
        documents, chunks = 0, {}
        gen = self.generation
        if self.loaded:
            info = gen.pipeline.store.info()
            documents, chunks = info.documents, info.chunks
        degraded = not self.loaded or self.llm is None
        return {
            "status": "degraded" if degraded else "ok", "version": __version__, "index_loaded": self.loaded,
            "index_error": public_text(self.index_error), "documents": documents, "chunks": chunks,
            "modes": self.settings.mode_names, "default_mode": self.settings.default_mode,
            "llm": getattr(self.llm, "name", None), "llm_error": public_text(self.llm_error), "auth_required": self.token is not None,
            "generation": gen.label if self.loaded else None, "built_at": gen.manifest.get("built_at") if self.loaded else None,
            "reloads": self.reloads,
        }

    def results(self, name: str) -> Any:
        if self.results_dir is None:
            raise HTTPException(404, f"no committed results named {name!r}: the server has no results directory (start "
                                     f"it with `ragfunnel serve --results-dir DIR`, DIR holding {name}.json, or from a "
                                     f"checkout of the repository, which has {DEFAULT_RESULTS_DIR.as_posix()})")
        file = self.results_dir / f"{name}.json"
        if not file.is_file():
            raise HTTPException(404, f"no committed results named {name!r}: the results directory has no {name}.json")
        try:
            return json.loads(file.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise HTTPException(503, f"{file.name} could not be read ({type(exc).__name__})") from None


def default_results_dir() -> Path | None:
    """Where the committed evaluation results are when no directory is given: env RAGFUNNEL_RESULTS_DIR, else
    docs/results/first_stage under the current directory if it exists, else None (/results answers 404)."""
    env = os.environ.get(RESULTS_DIR_ENV)
    if env:
        return Path(env).expanduser()
    local = Path.cwd() / DEFAULT_RESULTS_DIR
    return local if local.is_dir() else None


# ---- Server-Sent Events ---------------------------------------------------------------------------------------------


def sse(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def answer_events(first: dict[str, Any] | None, events: Iterator[dict[str, Any]],
                  observe: Callable[[dict[str, Any]], None] | None = None, validated: bool = False) -> Iterator[str]:
    """SSE frames for the Answerer's events. Token text goes through the citation-line filter that `ask` prints
    through, so a client shows the answer as `ask` prints it; the raw replies are in the done event's `drafts`.
    `observe` sees every event (metrics). `validated`: no draft tokens or retries; the checked answer as one token
    event just before done."""
    shown = CitationLineFilter()

    def frames(event: dict[str, Any]) -> Iterator[str]:
        nonlocal shown
        if observe is not None:
            observe(event)
        kind = event.get("type")
        if validated:
            if kind in ("evidence", "extractive"):
                yield sse(kind, event["result"])
            elif kind == "done":
                if event["result"].get("answer"):
                    yield sse("token", {"text": event["result"]["answer"]})
                yield sse("done", event["result"])
            return
        if kind == "token":
            text = shown.feed(event["text"])
            if text:
                yield sse("token", {"text": text})
            return
        rest = shown.flush()
        if rest:
            yield sse("token", {"text": rest})
        if kind == "retry":
            shown = CitationLineFilter()
            yield sse("retry", {"reason": event.get("reason", "")})
        elif kind in ("evidence", "extractive"):
            yield sse(kind, event["result"])
        elif kind == "done":
            yield sse("done", event["result"])

    try:
        if first is not None:
            yield from frames(first)
        for event in events:
            yield from frames(event)
    except Exception as exc:  # noqa: BLE001 - the status line is sent: report the failure in the stream
        if isinstance(exc, RagfunnelError):
            message = str(exc)
        else:
            message = f"the answer failed ({type(exc).__name__})"
            log.exception("answer stream failed")
        code = "unavailable" if isinstance(exc, RagfunnelError) else "internal"
        yield sse("error", {"error": {"code": code, "message": public_text(message)}})
    finally:
        close = getattr(events, "close", None)
        if close is not None:
            close()


# ---- the app ----------------------------------------------------------------------------------------------------


def _readable(errors: list[dict[str, Any]]) -> list[dict[str, str]]:
    out = []
    for e in errors:
        loc = [str(x) for x in e.get("loc", ()) if x not in ("body", "query", "path")]
        message = str(e.get("msg", "invalid value")).removeprefix("Value error, ")
        if e.get("type") == "json_invalid":
            message = "the request body is not valid JSON"
        elif e.get("type") == "missing" and not loc:
            message = 'a JSON body is required, e.g. {"question": "Who did Rachel dump at the altar?"}'
        out.append({"field": ".".join(loc) or "body", "message": message})
    return out


ERROR_CODES = {
    400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed",
    413: "too_large", 422: "invalid_request", 429: "rate_limited", 500: "internal", 503: "unavailable",
}


def error_response(status: int, message: str, headers: dict[str, str] | None = None, code: str | None = None,
                   **extra: Any) -> JSONResponse:
    """The one error body of the API: `{"error": {"code", "message", ...}}` (`fields` for a 422), with no
    absolute filesystem path in the message."""
    code = code or ERROR_CODES.get(status, "error" if status < 500 else "internal")
    if status == 503 and headers and "Retry-After" in headers:
        code = "busy"
    body = {"code": code, "message": public_text(message)}
    return JSONResponse({"error": {**body, **extra}}, status_code=status, headers=headers)


ERRORS = {
    401: {"model": ErrorBody, "description": "an API token is required (RAGFUNNEL_API_TOKEN is set)"},
    422: {"model": ErrorBody, "description": "an invalid request: empty or too long question, unknown mode, k out of range, a filter that cannot be read"},
    503: {"model": ErrorBody, "description": "the mode, the index or the LLM is not available (the message says why)"},
}


def _nodelay_for_shared_sockets() -> None:
    """With several workers, uvicorn binds the listening socket itself as `socket.socket(family)` (proto 0), and
    asyncio only sets TCP_NODELAY on accepted sockets whose proto is IPPROTO_TCP. Without it, Nagle's algorithm
    and delayed ACKs add ~40 ms to every keep-alive response (measured: 64 ms against 23 ms with one worker)."""

    def set_nodelay(sock: socket.socket) -> None:
        if sock.family in (socket.AF_INET, socket.AF_INET6) and sock.type == socket.SOCK_STREAM:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    asyncio.base_events._set_nodelay = set_nodelay


def app_from_env() -> FastAPI:
    """App factory for multi-process serving: settings from the environment (RAGFUNNEL_HOME, RAGFUNNEL_INDEX,
    RAGFUNNEL_CONFIG, RAGFUNNEL_LLM, RAGFUNNEL_API_TOKEN, RAGFUNNEL_RESULTS_DIR), as `ragfunnel serve --workers N`
    sets them."""
    _nodelay_for_shared_sockets()
    settings = load_settings(os.environ.get("RAGFUNNEL_CONFIG") or None)
    if os.environ.get("RAGFUNNEL_LIMITS"):  # limits given as flags to `ragfunnel serve --workers N`
        settings.limits = Limits.model_validate_json(os.environ["RAGFUNNEL_LIMITS"])
    return create_app(settings, llm_name=os.environ.get("RAGFUNNEL_LLM"))


def create_app(
    settings: Settings,
    pipeline: Pipeline | None = None,
    llm: LLM | None = None,
    *,
    llm_name: str | None = None,
    token: str | None = None,
    results_dir: str | Path | None = None,
    allow_hosts: Sequence[str] = (),
    llm_input: str | None = None,
) -> FastAPI:
    """The app. `pipeline` (default: one built from `settings`) and `llm` (default: `make_llm(llm_name)`) are
    shared by all requests. `token` defaults to env RAGFUNNEL_API_TOKEN ("" turns auth off); `results_dir` (the
    folder of the committed results that /results/{name} serves) to `default_results_dir()`.
    `allow_hosts`: Host names served besides the local ones (and env RAGFUNNEL_ALLOW_HOSTS; `*`: any).
    `llm_input`: what the LLM reads (`Answerer`'s: candidates, the extractive reader's best answers to phrase; scenes;
    evidence); None: the scenes. A pipeline passed in is not closed at shutdown."""
    token = (token if token is not None else auth.token_from_env()) or None  # "" = no auth, whatever the env says
    results = Path(results_dir).expanduser() if results_dir is not None else default_results_dir()
    state = ServerState(settings, pipeline, llm, llm_name, token, results, llm_input)

    mcp_manager = None  # set below when the `mcp` extra is installed

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        await run_in_threadpool(state.load)
        try:
            async with AsyncExitStack() as stack:
                if mcp_manager is not None:
                    await stack.enter_async_context(mcp_manager.run())
                yield
        finally:
            state.close()
            metrics.close()

    app = FastAPIOffline(  # FastAPI whose /docs and /redoc load Swagger UI / ReDoc from this server, not a CDN
        static_url="/docs-assets",
        title="ragfunnel",
        version=__version__,
        description="Retrieve the scenes that answer a question (BM25 + vectors + fusion, optionally reranked), "
        "and answer it with verified quotes. The web page is at /.",
        lifespan=lifespan,
    )
    app.state.rf = state
    app.add_middleware(BodyLimit, limit=lambda: state.limits.max_body_bytes)
    hosts = allowed_hosts(allow_hosts)
    app.add_middleware(SecurityMiddleware, hosts=lambda: hosts)  # a foreign Host is refused before anything is read
    metrics = Metrics(state)
    app.state.metrics = metrics
    app.add_middleware(RequestMiddleware, metrics=lambda: metrics)  # outermost: every response has its request id

    async def require_auth(
        request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(auth.bearer)
    ) -> None:
        auth.check(request, credentials)

    async def rate_limit(request: Request) -> None:
        state.rate.check_request(request, state.limits.rate_limit_loopback)

    async def follow_index() -> None:
        if state.owns_pipeline or state.reloads:  # a pipeline passed in (tests, embedding) is the caller's to change
            await run_in_threadpool(state.check_generation)

    # mcp_guard (below) runs these three for the mounted /mcp endpoint, which FastAPI dependencies do not reach:
    # a dependency added here goes there too
    protected = [Depends(require_auth), Depends(rate_limit), Depends(follow_index)]

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = _readable(list(exc.errors()))
        text = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
        return error_response(422, text, fields=errors)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return error_response(exc.status_code, str(exc.detail), headers=getattr(exc, "headers", None))

    @app.exception_handler(QueryError)
    async def _query(request: Request, exc: QueryError) -> JSONResponse:
        return error_response(422, str(exc))

    @app.exception_handler(RagfunnelError)
    async def _unavailable(request: Request, exc: RagfunnelError) -> JSONResponse:
        return error_response(503, str(exc))

    @app.exception_handler(MissingResource)
    async def _missing(request: Request, exc: MissingResource) -> JSONResponse:
        return error_response(503, str(exc))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:  # logged with its traceback by the server
        return error_response(500, f"the request failed ({type(exc).__name__}); the server log has the details")

    @app.post("/search", response_model=SearchResponse, dependencies=protected, responses=ERRORS, tags=["api"])
    async def search(body: QueryBody) -> SearchResponse:
        """Rank scenes for a question: each with its label, title, score, rank and score in every retriever, the
        best-matching lines with the query terms' spans, and the trace of every stage."""
        state.require_index()
        state.check_query(body)
        state.resolve_mode(body.mode)
        result = await run_in_threadpool(state.search, body.question, body.mode, body.k, body.where, body.route)
        stages = metrics.observe_trace(result.mode, result.trace.stages)
        log.info("search", extra={"mode": result.mode, "k": body.k, "results": len(result.results),
                                  "ms": result.took_ms, "stages": stages})
        data = result.model_dump_json()
        if len(data) > state.limits.max_response_bytes:
            return error_response(422, f"the results are {len(data):,} bytes, over this server's limit of "
                                       f"{state.limits.max_response_bytes:,}: ask for fewer (a smaller k)",
                                  code="response_too_large")
        return Response(data, media_type="application/json")

    @app.post(
        "/ask", dependencies=protected, tags=["api"], response_class=StreamingResponse,
        responses={200: {"content": {"text/event-stream": {}}, "description": "token* [retry token*] done (llm over scenes, the default with an LLM) | evidence done (the default without one) | extractive done (reader extractive) | extractive token* done (an LLM phrasing the extractive answer) | error"}, **ERRORS},
    )
    async def ask(body: AskBody) -> StreamingResponse:
        """Answer from the retrieved scenes, streamed as Server-Sent Events. With `reader: extractive` the reader's
        answer comes first (`extractive` {result}: the answer copied from a cited line, the retrieved scenes), then,
        when the server phrases its candidates with an LLM, the phrasing (`token` {text}...); the default is the LLM
        over the scenes, or the evidence lines without an LLM. Last comes `done` with the AnswerResponse (answer,
        refused, citations, scenes, candidates, timings, trace; the schema `AnswerResponse`, as `ragfunnel ask
        --json` prints it). The LLM over whole scenes streams `token`s, maybe a `retry` {reason} and more tokens.
        Errors before the first event are plain JSON with a 4xx/5xx status."""
        state.require_index()
        state.check_query(body)
        state.resolve_mode(body.mode)
        routed = await run_in_threadpool(state.pipeline.route, body.question, body.route)
        reader = state.reader_for(body.reader, routed.path)
        gen, release = state.lease(needs_llm=reader == "llm")
        try:
            answerer = state.answerer(reader, gen)
            question, rewritten = body.question, None
            if body.history:
                found = await run_in_threadpool(rewrite, body.question, body.history, answerer.llm)
                question = found.standalone
                rewritten = QuestionRewrite(asked=body.question, searched=found.standalone, by=found.method)
            events = answerer.ask_stream(question, mode=body.mode, k=body.k, where=body.where, rewrite=rewritten,
                                         route=body.route)
            first = await run_in_threadpool(next, events, None)  # retrieval + first token: errors still get a status
        except BaseException:
            release()
            raise
        observe = metrics.answer_observer(state.resolve_mode(body.mode))
        return StreamingResponse(
            stream_frames(answer_events(first, events, observe, validated=body.stream == "validated"), on_close=release),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    @app.get(
        "/scenes/{scene_id}", response_model=SceneResponse, dependencies=protected, tags=["api"],
        responses={404: {"model": ErrorBody, "description": "no scene with this id"}, **ERRORS},
    )
    async def scene(
        scene_id: str,
        q: str | None = Query(None, max_length=2000, description="a question: its terms' matches get spans"),
    ) -> dict[str, Any]:
        """The full scene: label, title, metadata and every line with its speakers."""
        state.require_index()
        found = await run_in_threadpool(state.scene, scene_id, q)
        if found is None:
            raise HTTPException(404, f"no scene with id {scene_id!r}")
        return found

    @app.get("/results/{name}", dependencies=protected, tags=["api"], responses={404: {"model": ErrorBody}})
    async def results(name: str) -> Any:
        """Committed evaluation results (e.g. `first_stage`: recall@k of every mode on every question set)."""
        if not name.replace("_", "").isalnum():
            raise HTTPException(404, f"no committed results named {name!r}")
        return await run_in_threadpool(state.results, name)

    @app.get("/health", response_model=HealthResponse, tags=["meta"])
    async def health() -> dict[str, Any]:
        """Index loaded, its generation, build time, document and chunk counts, modes, version, LLM; open even when
        a token is required."""
        await follow_index()
        return await run_in_threadpool(state.health)

    @app.get("/metrics", dependencies=[Depends(require_auth)], tags=["meta"], response_class=Response,
             responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text format"}})
    async def prometheus_metrics() -> Response:
        """Prometheus metrics (requests, latency per route, mode and stage, LLM tokens and time to first token, the
        index generation and its documents) of the server: with several workers, of all of them; needs the API key
        when one is set."""
        from prometheus_client import CONTENT_TYPE_LATEST

        return Response(await run_in_threadpool(metrics.exposition), media_type=CONTENT_TYPE_LATEST)

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html", headers={"Cache-Control": "no-cache"})

    app.include_router(openai_chat_router())  # /v1/models, /v1/chat/completions (serve/openai_chat.py)
    if mcp_http.mcp_available():  # POST /mcp: the MCP tools over streamable HTTP (serve/mcp_http.py)

        async def mcp_guard(request: Request) -> JSONResponse | None:
            """The API routes' dependencies (token, rate, index generation), for the mounted MCP endpoint."""
            try:
                auth.check(request, await auth.bearer(request))
                await rate_limit(request)
                await follow_index()
            except StarletteHTTPException as exc:
                return error_response(exc.status_code, str(exc.detail), headers=getattr(exc, "headers", None))
            return None

        mcp_manager = mcp_http.mount(app, state, mcp_guard, unavailable=(MissingResource, StarletteHTTPException))
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    _document_answer_events(app)
    return app


def _document_answer_events(app: FastAPI) -> None:
    """Add `AnswerResponse` (the data of /ask's `done` event) to the OpenAPI schemas, and point the event stream's
    schema at it: FastAPI cannot see it, since /ask returns a stream."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        spec = generate()
        answer = AnswerResponse.model_json_schema(ref_template="#/components/schemas/{model}", mode="serialization")
        schemas = spec.setdefault("components", {}).setdefault("schemas", {})
        for name, definition in answer.pop("$defs", {}).items():
            schemas.setdefault(name, definition)
        schemas["AnswerResponse"] = answer
        stream = spec["paths"]["/ask"]["post"]["responses"]["200"]["content"]["text/event-stream"]
        stream["schema"] = {"type": "string", "description": "Server-Sent Events; the data of the `done` event is an "
                            "AnswerResponse (#/components/schemas/AnswerResponse)"}
        return spec

    app.openapi = openapi
