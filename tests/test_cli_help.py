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


def test_a_bug_exits_70_not_1_or_2():
    import subprocess
    import sys

    code = (
        "import sys; import pmos.cli as c; c.COMMAND_MODULES['boom'] = 'no_such_module'; "
        "sys.argv = ['pmos', 'boom']; c.main()"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 70
    assert "Traceback" in result.stderr and "internal error" in result.stderr


def test_a_locked_ledger_is_a_temporary_failure(kit, monkeypatch):
    import fcntl

    import pytest

    from pmos.errors import LedgerBusy
    from pmos.gate import writers
    from pmos.store import files
    from pmos.store.layout import MARKER

    monkeypatch.setattr(files, "LOCK_TIMEOUT_S", 0.2)
    folder = kit.store.folder("acceptances")
    before = sorted(p.name for p in folder.iterdir())
    with open(folder / MARKER, "rb") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)
        with pytest.raises(LedgerBusy) as info:
            writers.record_acceptance(kit, run_id="r", label="pass", by="pm")
    assert info.value.exit_code == 75
    assert sorted(p.name for p in folder.iterdir()) == before


def test_a_path_the_system_refuses_is_a_clean_error(pmos):
    long_name = "x" * 5000
    for args in (
        ("rubric", "show", long_name),
        ("--root", long_name, "root"),
        ("init", long_name),
        ("ledger", "show", "evals", "--last", "9" * 25),
    ):
        result = pmos(*args)
        assert result.returncode == 2, args
        assert "Traceback" not in result.stderr and result.stderr.startswith("pmos: error:")
