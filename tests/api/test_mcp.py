"""The MCP server (`ragfunnel mcp`) driven by the official SDK's own client over stdio, against the session's small
Friends index: the four tools, structured content an agent can cite, and tool errors (never a traceback)."""

from __future__ import annotations

import asyncio
import json
import os
import sys

import pytest

from tests.conftest import REPO

pytest.importorskip("mcp")
pytestmark = pytest.mark.integration

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

QUESTION = "Who did Rachel dump at the altar?"


def server_params(index, home) -> StdioServerParameters:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "RAGFUNNEL_HOME": str(home)}
    return StdioServerParameters(command=sys.executable, env=env, cwd=str(REPO),
                                 args=["-m", "ragfunnel.cli", "mcp", "--index", str(index), "--llm", "fake"])


def test_mcp_tools_over_stdio(small_index, ragfunnel_home):
    async def session() -> dict:
        out: dict = {}
        async with Client(server_params(small_index.path, ragfunnel_home), read_timeout_seconds=120) as client:
            out["tools"] = {t.name: t for t in (await client.list_tools()).tools}
            out["search"] = await client.call_tool("search", {"question": QUESTION, "k": 3})
            hit = out["search"].structured_content["results"][0]
            out["line"] = await client.call_tool("get_passage", {"id": hit["lines"][0]["id"]})
            out["chunk"] = await client.call_tool("get_passage", {"id": hit["passage"]["chunk_id"]})
            out["ask"] = await client.call_tool("ask", {"question": QUESTION, "k": 3})
            out["evidence"] = await client.call_tool("ask", {"question": QUESTION, "k": 3, "reader": "evidence"})
            out["collections"] = await client.call_tool("list_collections", {})
            out["empty"] = await client.call_tool("search", {"question": "   "})
            out["mode"] = await client.call_tool("search", {"question": QUESTION, "mode": "psychic"})
            out["k"] = await client.call_tool("search", {"question": QUESTION, "k": 0})
            out["filter"] = await client.call_tool("search", {"question": QUESTION, "filter": {"season": {"near": 1}}})
            out["id"] = await client.call_tool("get_passage", {"id": "s99_e99_c99"})
        return out

    out = asyncio.run(session())
    assert set(out["tools"]) == {"search", "ask", "get_passage", "list_collections"}
    assert out["tools"]["search"].output_schema and out["tools"]["search"].input_schema["properties"]["k"]["maximum"] == 50

    found = out["search"]
    assert not found.is_error
    results = found.structured_content["results"]
    assert [r["rank"] for r in results] == [1, 2, 3] and results[0]["id"] == "s01_e04_c04"
    assert {"id", "label", "score", "sources", "lines", "passage", "metadata"} <= set(results[0])
    assert results[0]["lines"][0]["id"].startswith("s01_e04_c04_u")
    # lean for an agent: no highlight spans, no unit id lists; the text block is the same data as compact JSON
    assert set(results[0]["lines"][0]) == {"id", "text"} and "unit_ids" not in results[0]["passage"]
    assert len(found.content) == 1 and json.loads(found.content[0].text) == found.structured_content
    assert "\n" not in found.content[0].text

    line, chunk = out["line"].structured_content, out["chunk"].structured_content
    assert (line["kind"], line["parent_id"]) == ("unit", "s01_e04_c04") and line["text"] == results[0]["lines"][0]["text"]
    assert chunk["kind"] == "chunk" and chunk["char_end"] > chunk["char_start"]

    answer = out["ask"].structured_content
    assert not answer["refused"] and answer["citations"] and answer["citations"][0]["unit_ids"]
    assert out["evidence"].structured_content["reader"] == "evidence"
    assert "friends" in [c["name"] for c in out["collections"].structured_content["collections"]]

    for name, message in [("empty", "the question is empty"), ("mode", "unknown mode 'psychic'"), ("k", "k"),
                          ("filter", "near"), ("id", "no document, chunk or line with id 's99_e99_c99'")]:
        result = out[name]
        assert result.is_error, name
        text = result.content[0].text
        assert message in text and "Traceback" not in text, (name, text)
