"""``pmos mcp``: the evaluator skill's tools over the Model Context Protocol.

An optional front end, like the CLI: each tool is a thin call of the library
function the matching command calls, and nothing in pmos imports this package
but the CLI. Three modules, so that what must stay light stays light:

* :mod:`pmos.mcp.tools`: the tool registry (names, input schemas derived from
  ``schemas/*.json``, the calls). It imports neither the MCP SDK nor pmos's
  heavy modules, so ``pmos skill check`` reads the tool names from it;
* :mod:`pmos.mcp.resources`: the evaluator skill and the documents it links;
* :mod:`pmos.mcp.server`: the SDK's low-level server over stdio.

The server offers no PM power: no tool records a label, approves a policy or
signs, and it never reads a signing key (DECISIONS.md D10, the evaluator is
read-only but for its verdict).
"""
