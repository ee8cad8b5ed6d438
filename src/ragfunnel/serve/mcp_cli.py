"""`ragfunnel mcp`: the MCP server (serve/mcp.py) over stdio, for agents (desktop assistants, IDEs). Added to the
main app by `register(app)`; the SDK is imported only when the command runs."""

from __future__ import annotations

import threading
from typing import Annotated, Optional

import typer

from ragfunnel.cli_options import CollectionOpt, ConfigOpt, IndexOpt
from ragfunnel.registry import require_modules


def mcp_cmd(
    collection: CollectionOpt = None,
    index: IndexOpt = None,
    config: ConfigOpt = None,
    llm: Annotated[Optional[str], typer.Option(
        "--llm", help="LLM of the ask tool: local (default), local:<file.gguf>, fake, anthropic[:<model>], "
                      "openai:<base_url>|<model>; env RAGFUNNEL_LLM")] = None,
    reader: Annotated[str, typer.Option(
        "--reader", help="the ask tool's default reader: llm (an LLM's checked answer) or evidence (the best lines, "
                         "no LLM)")] = "llm",
):
    """Serve a collection to MCP clients over stdio: tools search, ask, get_passage, list_collections.

    Client configuration (e.g. Claude Desktop's claude_desktop_config.json, under "mcpServers"):
    {"ragfunnel": {"command": "ragfunnel", "args": ["mcp", "--collection", "friends"]}}"""
    require_modules(["mcp"], "mcp", "ragfunnel mcp")
    from ragfunnel.api import open as open_client
    from ragfunnel.errors import ConfigError
    from ragfunnel.serve.mcp import build_server

    if reader not in ("llm", "evidence"):
        raise ConfigError(f"unknown reader {reader!r}: choose one of llm, evidence")
    client = open_client(collection, index=index, config=config, llm=llm)
    server = build_server(client, reader=reader)
    # the index and encoder load while the client connects, so the first search is not the slow one
    threading.Thread(target=_warm_up, args=(client,), name="ragfunnel-warm-up", daemon=True).start()
    try:
        server.run("stdio")
    finally:
        client.close()


def _warm_up(client) -> None:
    from ragfunnel.errors import RagfunnelError

    try:
        client.warm_up()
    except RagfunnelError:
        pass  # the first tool call reports it, as a tool error


def register(app: typer.Typer) -> None:
    """Add `mcp` to `app`."""
    app.command("mcp")(mcp_cmd)
