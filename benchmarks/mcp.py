"""MCP benchmark: from starting ``pmos mcp`` to its first tool result.

Prints, measured in this one run, the time from spawning the server to
receiving the result of its first tool call, as a ratio to the same for a
one-tool server written with the same SDK (its low-level ``Server``, as
``pmos.mcp.server`` uses it) and called the same way: the SDK's stdio client
spawns the process, initialises the session and calls one tool (target: at
most 1.5). pmos's call is ``pmos_show_run`` on a registered run, the
evaluator's first step. The SDK's own import takes most of a second, so this
holds only while pmos loads its tools' modules when they are called.

The two servers are started alternately, so machine noise hits both alike, and
the best of several runs of each is compared (the machine is shared). Everything
happens in a throw-away kit root; pmos's modules are byte-compiled first, as an
installer does. Usage: ``python benchmarks/mcp.py [--runs N]``.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

RUNS = 7
TARGET = 1.5
# This file is named mcp.py: run as a script, its folder is first on sys.path and
# would shadow the SDK's package of the same name.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

#: The baseline: the smallest server the SDK makes, with one tool.
ONE_TOOL_SERVER = """
import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server


async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[types.Tool(
        name="ping", description="Answer pong.", input_schema={"type": "object"})])


async def call_tool(ctx, params):
    return types.CallToolResult(content=[types.TextContent(text="pong")])


async def main():
    server = Server("one-tool", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


anyio.run(main)
"""


def first_result(command: list[str], tool: str, arguments: dict, cwd: Path) -> float:
    """Seconds from spawning ``command`` to the result of calling ``tool`` once."""
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=command[0], args=command[1:], cwd=str(cwd), env=dict(os.environ)
    )

    async def main() -> float:
        start = time.perf_counter()
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool(tool, arguments)
            elapsed = time.perf_counter() - start
        if result.is_error:
            raise SystemExit(f"{tool} failed: {result.content}")
        return elapsed

    return anyio.run(main)


def main() -> int:
    import argparse
    import compileall

    import pmos
    from pmos.gate.writers import register_run
    from pmos.kit import init_kit, open_kit

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS, help="runs of each server")
    runs = parser.parse_args().runs
    compileall.compile_dir(Path(pmos.__file__).parent, quiet=1)
    with tempfile.TemporaryDirectory(prefix="pmos-bench-mcp-") as tmp:
        work = Path(tmp)
        root = work / "kit"
        init_kit(root)
        register_run(open_kit(root), run_id="run-1", initiative_id="i", builder_model="m")
        baseline_script = work / "one_tool_server.py"
        baseline_script.write_text(ONE_TOOL_SERVER, encoding="utf-8")
        compileall.compile_file(str(baseline_script), quiet=1)
        servers = {
            "pmos mcp": (
                [sys.executable, "-m", "pmos", "--root", str(root), "mcp"],
                "pmos_show_run",
                {"run_id": "run-1"},
            ),
            "one-tool server": ([sys.executable, str(baseline_script)], "ping", {}),
        }
        for command, tool, arguments in servers.values():  # warm the OS caches once
            first_result(command, tool, arguments, work)
        times: dict[str, list[float]] = {name: [] for name in servers}
        for _ in range(runs):
            for name, (command, tool, arguments) in servers.items():
                times[name].append(first_result(command, tool, arguments, work))
    best = {name: min(found) for name, found in times.items()}
    for name, found in times.items():
        print(f"{name:<16} best {best[name]:.3f} s  (runs: {', '.join(f'{t:.2f}' for t in found)})")
    ratio = best["pmos mcp"] / best["one-tool server"]
    verdict = "ok" if ratio <= TARGET else "over target"
    print(f"start to first tool result: ratio {ratio:.2f} (target <= {TARGET}): {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
