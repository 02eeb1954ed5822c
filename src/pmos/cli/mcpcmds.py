"""The mcp command: serve the evaluator's tools to an agent host over stdio."""

from __future__ import annotations

import typer

from pmos.cli._app import examples, kit
from pmos.mcp.server import load_sdk, serve


def register(app: typer.Typer) -> None:
    app.command("mcp", epilog=examples("pmos mcp"))(mcp)


def mcp() -> None:
    """Serve the evaluator's tools over the Model Context Protocol (stdio).

    An agent host (Claude Code, VS Code, Cursor...) starts this command and calls
    the tools: show a run, the rubric, exemplars, evidence, a verdict draft,
    record or log a verdict, the queue and the metrics. No tool records a PM
    label or signs. Needs the MCP Python SDK: pip install 'pmos[mcp]' (without
    it: exit 2). 'pmos init DIR --mcp-json' writes a host's configuration.
    """
    load_sdk()
    serve(kit())
