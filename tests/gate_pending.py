"""Documents and tests that wait for `pmos gate` (issue 24 items 1-3, 5, 6).

The merge gate's command is built on another branch. Until it is merged, a
document shows its commands in a ``text`` block right after the marker
:data:`PENDING_MARK` (``pmos skill check`` reads shell blocks only), and a test
that runs the gate raises :class:`GateNotMerged` and is marked a strict xfail.
``tests/test_ci_workflow.py`` checks the marked blocks: every other command in
them must be one the CLI has, and once the CLI has ``gate`` no marker may be
left (turn each marked block into a ``sh`` block, drop the xfail marks).
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PENDING_MARK = "<!-- pending-command: pmos gate -->"
#: The commands the merge gate's branch adds.
PENDING_COMMANDS = ("gate", "policy")


class GateNotMerged(Exception):
    """`pmos gate` is not a command of this pmos: it comes with the merge gate branch."""


def gate_exists() -> bool:
    """Whether this pmos has the `gate` command (read from the CLI itself)."""
    import typer

    from pmos.cli import app

    group = typer.main.get_command(app)
    return group.get_command(group.context_class(group), "gate") is not None


def documents() -> list[Path]:
    """Every document `pmos skill check` reads in this repository."""
    paths = [REPO / "README.md", REPO / "AGENTS.md"]
    for folder in ("docs", "skills", "planning"):
        paths += sorted((REPO / folder).rglob("*.md"))
    return paths


def pending_blocks(text: str) -> list[str]:
    """The bodies of the fenced blocks right after each marker; a marker followed by
    anything but a ``text`` block is returned as None, for the test to name."""
    pattern = re.escape(PENDING_MARK) + r"\n(```text\n(.*?)^```)?"
    return [m.group(2) for m in re.finditer(pattern, text, re.S | re.M)]
