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
import time
from collections.abc import Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline
from starlette.exceptions import HTTPException as StarletteHTTPException

from ragfunnel import __version__
from ragfunnel.api.conversation import rewrite
from ragfunnel.config import Settings, load_settings
from ragfunnel.errors import ConfigError, QueryError, RagfunnelError
from ragfunnel.generate.answer import Answerer
from ragfunnel.generate.llm import LLM, make_llm
from ragfunnel.generate.stream import CitationLineFilter
from ragfunnel.pipeline import Pipeline
from ragfunnel.present import match_spans
from ragfunnel.schema import QuestionRewrite
from ragfunnel.present import search as present_search
from ragfunnel.serve import auth
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


class ServerState:
    """What the app shares across requests: settings, the pipeline (index + models), the LLM."""

    def __init__(
        self,
        settings: Settings,
        pipeline: Pipeline | None,
        llm: LLM | None,
        llm_name: str | None,
        token: str | None,
        results_dir: Path | None,
    ):
        self.settings = settings
        self.owns_pipeline = pipeline is None
        self.pipeline = pipeline if pipeline is not None else Pipeline(settings)
        self.llm = llm
        self.llm_name = llm_name
        self.token = token
        self.results_dir = results_dir
        self.index_error: str | None = None
        self.llm_error: str | None = None
        self._evidence_answerer: Answerer | None = None
        self._llm_answerer: Answerer | None = None
        self.loaded = False

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

    def close(self) -> None:
        if self.owns_pipeline:
            self.pipeline.close()

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

    def search(self, question: str, mode: str, k: int, where: Filter | None = None) -> SearchResponse:
        return present_search(self.pipeline, question, mode, k=k, where=where)

    def scene(self, scene_id: str, q: str | None) -> dict[str, Any] | None:
        store = self.pipeline.store
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

    def answerer(self, reader: str | None = None) -> Answerer:
        """The answerer of `reader` (default: llm)."""
        if reader == "evidence":
            if self._evidence_answerer is None:
                self._evidence_answerer = Answerer(self.pipeline, None, reader="evidence")
            return self._evidence_answerer
        if self.llm is None:
            raise MissingResource(self.llm_error or "no LLM is configured")
        if self._llm_answerer is None or self._llm_answerer.llm is not self.llm:
            self._llm_answerer = Answerer(self.pipeline, self.llm)
        return self._llm_answerer

    def health(self) -> dict[str, Any]:
        documents, chunks = 0, {}
        if self.loaded:
            info = self.pipeline.store.info()
            documents, chunks = info.documents, info.chunks
        degraded = not self.loaded or self.llm is None
        return {
            "status": "degraded" if degraded else "ok", "version": __version__, "index_loaded": self.loaded,
            "index_error": self.index_error, "documents": documents, "chunks": chunks,
            "modes": self.settings.mode_names, "default_mode": self.settings.default_mode,
            "llm": getattr(self.llm, "name", None), "llm_error": self.llm_error, "auth_required": self.token is not None,
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


def answer_events(first: dict[str, Any] | None, events: Iterator[dict[str, Any]]) -> Iterator[str]:
    """SSE frames for the Answerer's events. Token text goes through the citation-line filter that `ask` prints
    through, so a client shows the answer as `ask` prints it; the raw replies are in the done event's `drafts`."""
    shown = CitationLineFilter()

    def frames(event: dict[str, Any]) -> Iterator[str]:
        nonlocal shown
        kind = event.get("type")
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
        elif kind == "evidence":
            yield sse("evidence", event["result"])
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
        yield sse("error", {"error": message})
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
    return create_app(load_settings(os.environ.get("RAGFUNNEL_CONFIG") or None), llm_name=os.environ.get("RAGFUNNEL_LLM"))


def create_app(
    settings: Settings,
    pipeline: Pipeline | None = None,
    llm: LLM | None = None,
    *,
    llm_name: str | None = None,
    token: str | None = None,
    results_dir: str | Path | None = None,
) -> FastAPI:
    """The app. `pipeline` (default: one built from `settings`) and `llm` (default: `make_llm(llm_name)`) are
    shared by all requests. `token` defaults to env RAGFUNNEL_API_TOKEN ("" turns auth off); `results_dir` (the
    folder of the committed results that /results/{name} serves) to `default_results_dir()`.
    A pipeline passed in is not closed at shutdown."""
    token = (token if token is not None else auth.token_from_env()) or None  # "" = no auth, whatever the env says
    results = Path(results_dir).expanduser() if results_dir is not None else default_results_dir()
    state = ServerState(settings, pipeline, llm, llm_name, token, results)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        await run_in_threadpool(state.load)
        try:
            yield
        finally:
            state.close()

    app = FastAPIOffline(  # FastAPI whose /docs and /redoc load Swagger UI / ReDoc from this server, not a CDN
        static_url="/docs-assets",
        title="ragfunnel",
        version=__version__,
        description="Retrieve the scenes that answer a question (BM25 + vectors + fusion, optionally reranked), "
        "and answer it with verified quotes. The web page is at /.",
        lifespan=lifespan,
    )
    app.state.rf = state

    async def require_auth(
        request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(auth.bearer)
    ) -> None:
        auth.check(request, credentials)

    protected = [Depends(require_auth)]

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = _readable(list(exc.errors()))
        text = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
        return JSONResponse({"error": text, "errors": errors}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse({"error": str(exc.detail)}, status_code=exc.status_code, headers=getattr(exc, "headers", None))

    @app.exception_handler(QueryError)
    async def _query(request: Request, exc: QueryError) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=422)

    @app.exception_handler(RagfunnelError)
    async def _unavailable(request: Request, exc: RagfunnelError) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=503)

    @app.exception_handler(MissingResource)
    async def _missing(request: Request, exc: MissingResource) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=503)

    @app.post("/search", response_model=SearchResponse, dependencies=protected, responses=ERRORS, tags=["api"])
    async def search(body: QueryBody) -> SearchResponse:
        """Rank scenes for a question: each with its label, title, score, rank and score in every retriever, the
        best-matching lines with the query terms' spans, and the trace of every stage."""
        state.require_index()
        state.resolve_mode(body.mode)
        return await run_in_threadpool(state.search, body.question, body.mode, body.k, body.where)

    @app.post(
        "/ask", dependencies=protected, tags=["api"], response_class=StreamingResponse,
        responses={200: {"content": {"text/event-stream": {}}, "description": "token* [retry token*] done | evidence done (reader: evidence) | error"}, **ERRORS},
    )
    async def ask(body: AskBody) -> StreamingResponse:
        """Answer from the retrieved scenes, streamed as Server-Sent Events: `token` {text}..., optionally
        `retry` {reason} and more tokens, then `done` with the AnswerResponse (answer, refused, citations, scenes,
        timings, trace; the schema `AnswerResponse`, as `ragfunnel ask --json` prints it). Errors before the first event are plain JSON with a 4xx/5xx status."""
        state.require_index()
        state.resolve_mode(body.mode)
        answerer = state.answerer(body.reader)
        question, rewritten = body.question, None
        if body.history:
            found = await run_in_threadpool(rewrite, body.question, body.history, answerer.llm)
            question = found.standalone
            rewritten = QuestionRewrite(asked=body.question, searched=found.standalone, by=found.method)
        events = answerer.ask_stream(question, mode=body.mode, k=body.k, where=body.where, rewrite=rewritten)
        first = await run_in_threadpool(next, events, None)  # retrieval + first token: errors still get a status
        return StreamingResponse(
            answer_events(first, events), media_type="text/event-stream",
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
        """Index loaded, document and chunk counts, modes, version, LLM; open even when a token is required."""
        return await run_in_threadpool(state.health)

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html", headers={"Cache-Control": "no-cache"})

    app.include_router(openai_chat_router())  # /v1/models, /v1/chat/completions (serve/openai_chat.py)
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
