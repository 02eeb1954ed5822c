"""The ``pmos`` command line: parse arguments, call the library, print.

Each command group lives in its own module with a ``register(app)`` function.
Modules are imported only when one of their commands runs (or help lists
them), so a writer's start-up does not grow with every command pmos gains;
``benchmarks/writer.py`` holds us to that. Commands import the library inside
their bodies for the same reason.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import sys
import traceback
from functools import cache
from pathlib import Path
from typing import Annotated, Any

import typer

from pmos import __version__, exit_codes
from pmos.cli._app import PmosGroup, examples, new_typer, set_root

#: Top-level command -> the module (in pmos.cli) whose register(app) defines it.
COMMAND_MODULES: dict[str, str] = {
    "init": "kitcmds",
    "root": "kitcmds",
    "kit-id": "kitcmds",
    "schema": "kitcmds",
    "rubric": "kitcmds",
    "run": "writercmds",
    "eval": "writercmds",
    "accept": "writercmds",
    "ledger": "ledgercmds",
    "score": "scorecmds",
    "evidence": "evidencecmds",
    "followups": "followupcmds",
    "tasks": "followupcmds",
    "assess": "assesscmds",
    "metrics": "metricscmds",
    "queue": "metricscmds",
    "label": "labelcmds",
    "board": "boardcmds",
    "stats": "statscmds",
    "sync": "dbcmds",
    "db": "dbcmds",
    "exemplars": "skillcmds",
    "known-bad": "skillcmds",
    "skill": "skillcmds",
    "mcp": "mcpcmds",
    "gate": "mergecmds",
    "policy": "mergecmds",
}


@cache
def _module_group(module: str) -> Any:
    sub = new_typer("")
    sub.callback()(lambda: None)  # a callback makes typer build a group, even for one command
    importlib.import_module(f"pmos.cli.{module}").register(sub)
    return typer.main.get_command(sub)


class LazyGroup(PmosGroup):
    """The top-level group: resolves a command by importing only its module."""

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMAND_MODULES)

    def get_command(self, ctx: Any, name: str) -> Any:
        module = COMMAND_MODULES.get(name)
        return None if module is None else _module_group(module).get_command(ctx, name)


app = new_typer(
    "pmos: validated ledgers and calibration metrics for an AI review gate.\n\n"
    "The kit root is found from --root, else PMOS_ROOT, else the working directory "
    "and its parents.",
    cls=LazyGroup,
    add_completion=True,
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"pmos {__version__}")
        raise typer.Exit()


@app.callback(
    epilog=examples(
        "pmos init product/pmos",
        "pmos --root product/pmos queue --json",
        "pmos --install-completion bash",
    )
)
def _root(
    root: Annotated[
        Path | None,
        typer.Option(
            "--root",
            help="Kit root (a folder with pmos.yaml). Defaults to $PMOS_ROOT, then the working "
            "directory and its parents.",
            file_okay=False,
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print the pmos version and exit.",
            callback=_print_version,
            is_eager=True,
        ),
    ] = False,
) -> None:
    set_root(str(root) if root else None)


def _restore_interrupt() -> None:
    """Make Ctrl-C (SIGINT) interrupt pmos even when its parent ignored the signal.

    A parent that ignores SIGINT (a non-interactive shell's background job, a test
    runner started from one) passes the ignored disposition on through exec, and
    Python then never raises KeyboardInterrupt: an interrupted assessment would
    leave its commands running. pmos restores Python's default handler, so its own
    children (assessment commands, reviewers) start with SIGINT at its default too.
    """
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def main() -> None:
    _restore_interrupt()
    try:
        app(prog_name="pmos")
    except SystemExit as done:
        _leave(done)
    except Exception:
        # Expected errors never get here (see PmosGroup); this is a bug. Keep the
        # traceback, and an exit code no check uses, so CI cannot mistake a crash
        # for "a check found a problem" (1) or "bad input" (2).
        traceback.print_exc()
        print("pmos: internal error: this is a bug in pmos, please report it", file=sys.stderr)
        raise SystemExit(exit_codes.INTERNAL_ERROR) from None


#: Modules whose teardown at exit costs more than the command itself on a
#: small kit (scikit-learn pulls in scipy and numpy: about 0.3 s of freeing).
_HEAVY_MODULES = ("sklearn",)


def _leave(done: SystemExit) -> None:
    """End the process with ``done``'s status; skip interpreter teardown when it is heavy.

    Once the output is flushed, nothing is left to do: ledgers are fsynced
    before a writer reports success, and pmos registers no exit hooks. So a
    command that loaded scikit-learn leaves at once with ``os._exit`` instead
    of waiting for the interpreter to free every numpy and scipy object.
    """
    if not isinstance(done.code, int | None) or not any(m in sys.modules for m in _HEAVY_MODULES):
        raise done
    for stream in (sys.stdout, sys.stderr):
        # A closed pipe (pmos metrics | head) has nothing left to save.
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(done.code or 0)
