"""The MCP server: a collection as tools an agent can call (`ragfunnel mcp` over stdio; `ragfunnel serve` at /mcp
over streamable HTTP).

Tools (structured content, so an agent can cite what it read):

- `search(question, mode, k, filter)`: the ranked documents (Friends: scenes) with ids, labels, scores, every
  retriever's rank and score, the best-matching lines (with their ids) and passage (chunk id, character offsets,
  section, page) - the `SearchResponse` of `ragfunnel search --json` without its trace, and without what only a
  page draws (highlight spans, the passage's list of unit ids): an agent's context is the scarce thing, and a client
  validates every result against the tool's output schema (measured: that validation took half of a call);
- `ask(question, history, mode, k, reader)`: a grounded answer with checked citations (quote, cited line ids and
  lines), or the refusal - the `AnswerResponse` of `ragfunnel ask --json` without trace and drafts;
- `get_passage(id)`: the full text of a document, chunk or line id from a result, with its offsets and parent;
- `list_collections()`: the collections under the home.

A request a user could fix (an empty question, an unknown mode, a bad filter, an unknown id) is an MCP tool error
(`isError`) with the one-line message the CLI prints; anything else is a tool error naming the exception's type,
never a traceback on the wire. Built on the official SDK (`mcp`, extra `mcp`), imported only when the server is.

Over HTTP the transport is stateless with JSON replies: each POST is a whole exchange, so any of `serve --workers N`
can answer it and no session outlives a request; the route sits behind the server's own token check.
"""

# No `from __future__ import annotations`: the SDK reads the tools' annotations, which name local values.

import json
import logging
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from ragfunnel import __version__
from ragfunnel.api import Client, Turn
from ragfunnel.errors import RagfunnelError
from ragfunnel.schema import Citation, CollectionSummary, PassageResponse, SearchHit, SourceScore

log = logging.getLogger("ragfunnel.mcp")
MAX_K = 50
INSTRUCTIONS = (
    "Search the collection '{collection}' with `search` and cite what you use by its ids: a result's `id`, a line's "
    "`id`, a passage's `chunk_id`; `get_passage` returns the full text behind any of them. `ask` answers from the "
    "collection with checked quotes, or says it does not know."
)


class FoundLine(BaseModel):
    id: str = Field(..., description="the line (unit) id, to cite or to pass to get_passage")
    text: str


class FoundPassage(BaseModel):
    chunk_id: str = Field(..., description="the chunk that matched: <document id>#<view>/<n>")
    text: str
    char_start: int = Field(..., description="offsets of text in the document's text")
    char_end: int
    section: list[str] = Field(default_factory=list)
    page: int | None = None


class FoundDocument(BaseModel):
    """One ranked document (a `SearchHit` of `search --json`, less highlight spans and unit id lists)."""

    id: str
    label: str
    title: str
    rank: int
    score: float
    sources: dict[str, SourceScore] = Field(default_factory=dict, description="retriever -> rank and score there")
    lines: list[FoundLine] = Field(default_factory=list, description="the best-matching lines, in document order")
    passage: FoundPassage | None = None
    metadata: dict[str, Any] = Field(default_factory=dict, description="the document's metadata (scalars)")

    @classmethod
    def of(cls, hit: SearchHit) -> "FoundDocument":
        p = hit.passage
        return cls(id=hit.id, label=hit.label, title=hit.title, rank=hit.rank, score=hit.score, sources=hit.sources,
                   lines=[FoundLine(id=line.id, text=line.text) for line in hit.lines], metadata=hit.metadata,
                   passage=None if p is None else FoundPassage(chunk_id=p.chunk_id, text=p.text, char_start=p.char_start,
                                                               char_end=p.char_end, section=p.section, page=p.page))


class SearchToolResult(BaseModel):
    """The ranked documents for a question (the `SearchResponse` of `ragfunnel search --json`, without its trace)."""

    question: str
    mode: str
    k: int
    results: list[FoundDocument]
    notes: list[str] = Field(default_factory=list)


class AskResult(BaseModel):
    """A grounded answer (the `AnswerResponse` of `ragfunnel ask --json`, without trace and raw drafts)."""

    question: str
    mode: str
    reader: str
    answer: str = Field(..., description="the answer, its [n] marks naming the citations; the refusal when refused")
    refused: bool
    citations: list[Citation]
    scenes: list[SearchHit] = Field(..., description="the retrieved documents; source_id is their [n]")
    notes: list[str] = Field(default_factory=list)


class Collections(BaseModel):
    collections: list[CollectionSummary]


def _reply(result: BaseModel) -> CallToolResult:
    """The result as structured content, and as compact JSON text for clients that read text only (the SDK's own
    text block is indented: a third more bytes to send, parse and put in an agent's context)."""
    data = result.model_dump(mode="json")
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def _tool(fn: Any) -> Any:
    """Run a tool body; a user's error becomes a tool error with its message, anything else one naming its type.
    The result goes out as `_reply` makes it, checked by the SDK against the body's return type."""

    def run(*args: Any, **kw: Any) -> Any:
        try:
            return _reply(fn(*args, **kw))
        except RagfunnelError as exc:
            raise ToolError(str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - an agent gets one line; the log keeps the details
            log.exception("tool %s failed", fn.__name__)
            raise ToolError(f"the {fn.__name__} tool failed ({type(exc).__name__}); see the server's log") from None

    annotations = dict(fn.__annotations__)
    annotations["return"] = Annotated[CallToolResult, annotations["return"]]
    run.__name__, run.__doc__, run.__annotations__ = fn.__name__, fn.__doc__, annotations
    run.__wrapped__ = fn
    return run


def build_server(client: Client, reader: str | None = None) -> MCPServer:
    """The MCP server over `client`'s collection; `reader`: the `ask` tool's default reader (llm or evidence)."""
    server = MCPServer(name="ragfunnel", version=__version__, log_level="WARNING",
                       instructions=INSTRUCTIONS.format(collection=client.collection))
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    modes = ", ".join(client.modes())

    @_tool
    def search(
        question: Annotated[str, Field(description="what to look for, in plain words")],
        mode: Annotated[str, Field(description=f"retrieval mode: {modes}")] = "fast",
        k: Annotated[int, Field(ge=1, le=MAX_K, description="how many documents to return")] = 5,
        filter: Annotated[dict[str, Any] | None, Field(
            description="only documents whose metadata matches: field -> value, list (one of) or {op: value} with "
                        "op in eq, ne, in, nin, gt, gte, lt, lte, glob; e.g. {\"season\": [8, 9]}")] = None,
    ) -> SearchToolResult:
        """Find the documents (Friends: scenes) that answer a question, best first, each with its id, label, score,
        best-matching lines (with line ids) and passage (chunk id, character offsets), to cite."""
        found = client.search(question, mode=mode, k=k, filter=filter)
        return SearchToolResult(question=found.question, mode=found.mode, k=found.k,
                            results=[FoundDocument.of(hit) for hit in found.results], notes=found.notes)

    @_tool
    def ask(
        question: Annotated[str, Field(description="the question")],
        history: Annotated[list[Turn] | None, Field(
            description="the conversation so far ({role: user|assistant, content}); a follow-up that refers back "
                        "is searched with the names it carries")] = None,
        mode: Annotated[str, Field(description=f"retrieval mode: {modes}")] = "fast",
        k: Annotated[int, Field(ge=1, le=20, description="documents retrieved to answer from")] = 5,
        reader: Annotated[Literal["llm", "evidence"] | None, Field(
            description="llm: an LLM's answer with checked quotes; evidence: the best lines themselves, no LLM")] = None,
    ) -> AskResult:
        """Answer a question from the collection with checked quotes (each citation's quote is in the cited lines),
        or say it does not know."""
        a = client.ask(question, history=history, mode=mode, k=k, reader=reader or default_reader)
        return AskResult(question=a.question, mode=a.mode, reader=a.reader, answer=a.answer, refused=a.refused,
                         citations=a.citations, scenes=a.scenes, notes=a.notes)

    @_tool
    def get_passage(
        id: Annotated[str, Field(description="a document id, chunk id (<doc>#<view>/<n>) or line id from a result")],
    ) -> PassageResponse:
        """The full text behind an id from a search result or citation, with its character offsets in its document
        and its parent document's id, label, title and metadata."""
        return client.passage(id)

    @_tool
    def list_collections() -> Collections:
        """The collections under this server's home (name, documents, chunks, sources); this server searches one."""
        return Collections(collections=client.collections())

    default_reader = reader
    for fn in (search, ask, get_passage, list_collections):
        server.add_tool(fn, annotations=read_only, structured_output=True)
    return server


def http_transport(server: MCPServer, allowed_hosts: list[str] | None = None) -> StreamableHTTPSessionManager:
    """`server` over streamable HTTP, stateless, JSON replies. `allowed_hosts` ("host:port", "host:*"): the Host
    headers accepted (DNS-rebinding protection); None leaves that check to the app around it."""
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=allowed_hosts is not None, allowed_hosts=list(allowed_hosts or []),
        allowed_origins=[f"http://{h}" for h in allowed_hosts or []] + [f"https://{h}" for h in allowed_hosts or []],
    )
    server.streamable_http_app(stateless_http=True, json_response=True, transport_security=security)
    return server.session_manager


def http_endpoint(manager: StreamableHTTPSessionManager) -> Any:
    """The ASGI endpoint that hands a request to `manager` (mount it at a route of the app)."""
    return StreamableHTTPASGIApp(manager)
