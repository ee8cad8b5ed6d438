"""`ragfunnel serve`'s MCP endpoint (POST /mcp, streamable HTTP) driven by the official SDK's own client over a real
loopback server: the same tools as `ragfunnel mcp`, answered from the server's index and LLM, behind its token."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("mcp")
pytestmark = pytest.mark.integration

import httpx2  # noqa: E402  (the SDK's HTTP client)
from mcp import Client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

QUESTION = "Who did Rachel dump at the altar?"


@pytest.fixture(scope="module")
def mcp_url(make_app):
    from ragfunnel.serve.background import serve_in_thread

    with serve_in_thread(make_app()) as url:
        yield url.rstrip("/") + "/mcp"


@pytest.fixture(scope="module")
def guarded_mcp_url(make_app):
    from ragfunnel.serve.background import serve_in_thread

    with serve_in_thread(make_app(token="s3cret")) as url:
        yield url.rstrip("/") + "/mcp"


def run_session(server, calls: list[tuple[str, dict]]) -> tuple[set[str], list]:
    async def session():
        async with Client(server, read_timeout_seconds=120) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            return tools, [await client.call_tool(name, args) for name, args in calls]

    return asyncio.run(session())


def test_mcp_tools_over_http(mcp_url):
    tools, (found, answer, evidence, empty) = run_session(mcp_url, [
        ("search", {"question": QUESTION, "k": 3}),
        ("ask", {"question": QUESTION, "k": 3}),
        ("ask", {"question": QUESTION, "k": 3, "reader": "evidence"}),
        ("search", {"question": "  "}),
    ])
    assert tools == {"search", "ask", "get_passage", "list_collections"}
    assert not found.is_error
    results = found.structured_content["results"]
    assert [r["rank"] for r in results] == [1, 2, 3] and results[0]["id"] == "s01_e04_c04"
    assert not answer.is_error and not answer.structured_content["refused"]
    assert answer.structured_content["citations"][0]["unit_ids"]
    assert evidence.structured_content["reader"] == "evidence"
    assert empty.is_error and "the question is empty" in empty.content[0].text


def test_mcp_over_http_same_results_as_post_search(mcp_url, client):
    _, (found,) = run_session(mcp_url, [("search", {"question": QUESTION, "k": 5})])
    posted = client.post("/search", json={"question": QUESTION, "k": 5}).json()
    assert [r["id"] for r in found.structured_content["results"]] == [r["id"] for r in posted["results"]]


def test_mcp_over_http_needs_the_token(guarded_mcp_url):
    refused = httpx2.post(guarded_mcp_url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                          headers={"Accept": "application/json, text/event-stream"})
    assert refused.status_code == 401 and "API token" in refused.json()["error"]["message"]
    foreign = httpx2.post(guarded_mcp_url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                          headers={"Host": "evil.example", "Authorization": "Bearer s3cret"})
    assert foreign.status_code == 400 and foreign.json()["error"]["code"] == "bad_host"

    with_token = streamable_http_client(guarded_mcp_url,
                                        http_client=httpx2.AsyncClient(headers={"Authorization": "Bearer s3cret"}))
    tools, (found,) = run_session(with_token, [("search", {"question": QUESTION, "k": 1})])
    assert "search" in tools and found.structured_content["results"][0]["id"] == "s01_e04_c04"
