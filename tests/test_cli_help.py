"""Every command documents itself, and unknown commands are usage errors."""

from __future__ import annotations

from typing import Any

import typer

from pmos.cli import COMMAND_MODULES, app


def walk(group: Any, ctx: Any, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    found = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        found.append(((*prefix, name), command))
        if hasattr(command, "list_commands"):
            found += walk(command, ctx, (*prefix, name))
    return found


def test_every_command_has_help():
    root = typer.main.get_command(app)
    ctx = root.make_context("pmos", ["--help"], resilient_parsing=True)
    commands = walk(root, ctx)
    assert {path[0] for path, _ in commands} == set(COMMAND_MODULES)
    for path, command in commands:
        assert command is not None, path
        assert (command.help or "").strip(), f"pmos {' '.join(path)} has no help text"


def test_help_runs_for_every_top_level_command(cli):
    for name in COMMAND_MODULES:
        result = cli(name, "--help")
        assert result.exit_code == 0, name
        assert "Usage:" in result.stdout


def test_unknown_command_is_a_usage_error(pmos):
    result = pmos("frobnicate")
    assert result.returncode == 2
    assert "No such command" in result.stderr
