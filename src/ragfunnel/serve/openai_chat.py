"""An OpenAI-compatible chat endpoint, so chat front ends and OpenAI client libraries can talk to a collection:

- `GET /v1/models`: one model per mode (`ragfunnel-hybrid`, `ragfunnel-accurate`, ...; `ragfunnel-fast` too);
- `POST /v1/chat/completions` (`stream` true or false): the last user message is answered by ragfunnel's `ask`
  over the conversation (a follow-up that refers back is searched with the names the earlier turns carry,
  api/conversation.py), from the collection the server serves. The reply's text is the answer with its [n] marks
  and a "Sources:" list of the checked quotes; the same citations come as structured extension fields:
  `citations` (the `Citation`s of the result schema) and `ragfunnel` (the whole `AnswerResponse`, without trace).
  Streamed, they ride on the last chunk, the one with `finish_reason`. Extension request fields: `k` (documents
  retrieved, 1-20), `filter` (as POST /search takes it) and `reader` (llm | evidence).

Errors are OpenAI's error objects, `{"error": {"message", "type", "param", "code"}}`: 400 for a bad request, 401
without the API token (when the server has one), 404 for an unknown model, 503 when the index or the LLM is not
available; the message is the one line the CLI and the rest of the HTTP API give. `create_app` includes the router.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ragfunnel.api.conversation import Turn, standalone_question
from ragfunnel.errors import QueryError, RagfunnelError
from ragfunnel.generate.citations import is_refusal
from ragfunnel.generate.stream import CitationLineFilter
from ragfunnel.pipeline import check_question
from ragfunnel.schema import AnswerResponse
from ragfunnel.serve import auth
from ragfunnel.serve.streaming import stream as stream_frames
from ragfunnel.store.filters import Filter

log = logging.getLogger("ragfunnel.serve.openai")
MODEL_PREFIX = "ragfunnel-"
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "invalid_request_error",
               422: "invalid_request_error", 503: "server_error"}


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[dict[str, Any]] | None = None

    @property
    def text(self) -> str:
        """The message's text (the text parts of a multi-part message, joined)."""
        if isinstance(self.content, list):
            return "\n".join(str(p.get("text", "")) for p in self.content if p.get("type") == "text")
        return self.content or ""


class ChatBody(BaseModel):
    """OpenAI's chat request; fields it has that ragfunnel does not use (temperature, max_tokens...) are ignored."""

    model_config = ConfigDict(extra="allow")

    model: str
    messages: list[ChatMessage] = Field(..., min_length=1)
    stream: bool = False
    k: int = Field(5, ge=1, le=20, description="ragfunnel: documents retrieved to answer from")
    filter: dict[str, Any] | None = Field(None, description="ragfunnel: only documents whose metadata matches")
    reader: Literal["llm", "evidence"] | None = Field(None, description="ragfunnel: llm (default) or evidence")


class OpenAIError(Exception):
    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None):
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code


def error_response(status: int, message: str, param: str | None = None, code: str | None = None,
                   headers: dict[str, str] | None = None) -> JSONResponse:
    body = {"error": {"message": message, "type": ERROR_TYPES.get(status, "server_error"), "param": param,
                      "code": code}}
    return JSONResponse(body, status_code=status, headers=headers)


class OpenAIRoute(APIRoute):
    """Every failure of these routes, auth included, as an OpenAI error object (the rest of the API keeps its own)."""

    def get_route_handler(self) -> Callable[[Request], Any]:
        handler = super().get_route_handler()

        async def run(request: Request) -> Response:
            try:
                return await handler(request)
            except OpenAIError as exc:
                return error_response(exc.status, exc.message, exc.param, exc.code)
            except HTTPException as exc:
                return error_response(exc.status_code, str(exc.detail), headers=getattr(exc, "headers", None))
            except RequestValidationError as exc:
                return error_response(400, _one_line(exc.errors()))
            except QueryError as exc:
                return error_response(400, str(exc))
            except RagfunnelError as exc:
                return error_response(503, str(exc))

        return run


async def _require_auth(request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(auth.bearer)) -> None:
    auth.check(request, credentials)


async def _rate_limit(request: Request) -> None:
    state = request.app.state.rf
    state.rate.check_request(request, state.limits.rate_limit_loopback)


def _one_line(errors: Any) -> str:
    parts = []
    for e in errors:
        where = ".".join(str(x) for x in e.get("loc", ()) if x != "body")
        parts.append(f"{where}: {str(e.get('msg', 'invalid value')).removeprefix('Value error, ')}" if where
                     else str(e.get("msg", "invalid value")))
    return "; ".join(parts) or "invalid request"


def model_ids(settings: Any) -> list[str]:
    return [MODEL_PREFIX + name for name in settings.mode_names]


def mode_of(model: str, settings: Any) -> str:
    """The mode a model id names (`ragfunnel-hybrid` or plain `hybrid`)."""
    name = model.removeprefix(MODEL_PREFIX)
    if name not in settings.mode_names:
        raise OpenAIError(404, f"the model {model!r} does not exist: choose one of {', '.join(model_ids(settings))} "
                               f"(GET /v1/models)", "model", "model_not_found")
    return name


def sources_text(result: AnswerResponse) -> str:
    """The checked citations as text under the answer: `[n] label: "quote"`."""
    if not result.citations:
        return ""
    lines = [f'[{c.source_id}] {c.label}{f" — {c.title}" if c.title else ""}: "{c.quote}"' for c in result.citations]
    return "\n\nSources:\n" + "\n".join(lines)


def extension(result: AnswerResponse) -> dict[str, Any]:
    return {"citations": [c.model_dump(mode="json") for c in result.citations],
            "ragfunnel": result.model_dump(mode="json", exclude={"trace", "drafts"})}


@dataclass(frozen=True)
class Conversation:
    question: str  # the last user message
    searched: str  # the question as answered: with the names a follow-up carries from the history
    mode: str
    where: Filter | None


def read_conversation(body: ChatBody, settings: Any) -> Conversation:
    mode = mode_of(body.model, settings)
    last = body.messages[-1]
    if last.role != "user":
        raise OpenAIError(400, f"the last message must be the user's question, not a {last.role!r} message", "messages")
    question = check_question(last.text)
    history = [Turn(role=m.role, content=m.text) for m in body.messages[:-1] if m.role in ("user", "assistant")]
    try:
        where = Filter.from_json(body.filter)
    except RagfunnelError as exc:
        raise OpenAIError(400, str(exc), "filter") from None
    return Conversation(question, standalone_question(question, history), mode, where)


def _completion_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex[:24]}"


def _chunk(cid: str, created: int, model: str, delta: dict[str, Any], finish: str | None = None,
           extra: dict[str, Any] | None = None) -> str:
    data = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **(extra or {})}
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"


def stream_chunks(cid: str, created: int, model: str, first: dict[str, Any] | None, events: Iterator[dict[str, Any]],
                  note: str | None) -> Iterator[str]:
    """The answer as chat.completion.chunk events: its text as `ask` prints it (citation lines held back), a line
    saying so when a reply is asked again or withdrawn, then the Sources and the extension fields, then [DONE]."""
    shown = CitationLineFilter()

    def all_events() -> Iterator[dict[str, Any]]:
        if first is not None:
            yield first
        yield from events

    yield _chunk(cid, created, model, {"role": "assistant", "content": ""})
    try:
        for e in all_events():
            kind = e.get("type")
            if kind == "token":
                text = shown.feed(e["text"])
                if text:
                    yield _chunk(cid, created, model, {"content": text})
                continue
            rest = shown.flush()
            if rest:
                yield _chunk(cid, created, model, {"content": rest})
            if kind == "retry":
                shown = CitationLineFilter()
                yield _chunk(cid, created, model, {"content": f"\n\n(not verifiable against the sources: "
                                                              f"{e.get('reason', '')}; asking again)\n\n"})
            elif kind == "done":
                result = AnswerResponse.model_validate(e["result"])
                if note:
                    result.notes.insert(0, note)
                if not result.drafts:  # no LLM text was streamed (the evidence reader, a refusal before the LLM)
                    tail = result.answer + sources_text(result)
                elif result.refused and not is_refusal(result.drafts[-1]):  # what streamed was withdrawn: say so
                    tail = f"\n\n{result.answer} (the reply above could not be verified against the sources, so it " \
                           f"was withdrawn)"
                else:
                    tail = sources_text(result)
                if tail:
                    yield _chunk(cid, created, model, {"content": tail})
                yield _chunk(cid, created, model, {}, "stop", extension(result))
    except Exception as exc:  # noqa: BLE001 - the status line is sent: end the stream with an error object
        message = str(exc) if isinstance(exc, RagfunnelError) else f"the answer failed ({type(exc).__name__})"
        if not isinstance(exc, RagfunnelError):
            log.exception("chat completion stream failed")
        yield f"data: {json.dumps({'error': {'message': message, 'type': 'server_error', 'param': None, 'code': None}})}\n\n"
    finally:
        close = getattr(events, "close", None)
        if close is not None:
            close()
    yield "data: [DONE]\n\n"


def make_router() -> APIRouter:
    router = APIRouter(prefix="/v1", tags=["openai"], route_class=OpenAIRoute, dependencies=[Depends(_require_auth), Depends(_rate_limit)])

    @router.get("/models")
    async def models(request: Request) -> dict[str, Any]:
        """One model per mode: `ragfunnel-<mode>`."""
        settings = request.app.state.rf.settings
        return {"object": "list", "data": [
            {"id": model, "object": "model", "created": 0, "owned_by": "ragfunnel"} for model in model_ids(settings)]}

    @router.post("/chat/completions")
    async def chat_completions(request: Request) -> Response:
        """Answer the conversation's last user message from the collection (OpenAI's chat completion shape, with
        `citations` and `ragfunnel` extension fields)."""
        state = request.app.state.rf
        try:
            body = ChatBody.model_validate(await request.json())
        except ValueError as exc:  # JSONDecodeError is one
            message = _one_line(exc.errors()) if isinstance(exc, ValidationError) else "the request body is not valid JSON"
            raise OpenAIError(400, message) from None
        chat = read_conversation(body, state.settings)
        if not state.loaded:
            raise OpenAIError(503, state.index_error or "the index is not loaded")
        if body.reader != "evidence" and state.llm is None:
            raise OpenAIError(503, state.llm_error or "no LLM is configured; ask with \"reader\": \"evidence\"")
        # an LLM slot (503 + Retry-After when busy) and the index generation this answer reads, to its end
        gen, release = state.lease(needs_llm=body.reader != "evidence")
        try:
            return await _complete(state.answerer(body.reader, gen), body, chat, release)
        except BaseException:
            release()
            raise

    return router


async def _complete(answerer: Any, body: ChatBody, chat: Conversation, release: Callable[[], None]) -> Response:
    """The completion of `chat`; `release` (the generation slot, the index generation) runs when the answer is
    complete or abandoned."""
    note = f"a follow-up: read with the conversation as {chat.searched!r}" if chat.searched != chat.question else None
    cid, created = _completion_id(), int(time.time())
    if body.stream:
        events = answerer.ask_stream(chat.searched, mode=chat.mode, k=body.k, where=chat.where)
        first = await run_in_threadpool(next, events, None)  # retrieval + first token: errors still get a status
        return StreamingResponse(stream_frames(stream_chunks(cid, created, body.model, first, events, note),
                                               on_close=release),
                                 media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
    try:
        result = (await run_in_threadpool(answerer.ask, chat.searched, chat.mode, body.k, chat.where)).to_schema()
    finally:
        release()
    if note:
        result.notes.insert(0, note)
    return JSONResponse({
        "id": cid, "object": "chat.completion", "created": created, "model": body.model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": result.answer + sources_text(result)},
                     "finish_reason": "stop"}],
        **extension(result),
    })
