"""The ``pmos`` command line: parse arguments, call the library, print.

Each command group lives in its own module and is attached here. Modules
import only typer at load time and the library inside each command, so that
``pmos eval record`` does not pay for what ``pmos metrics`` needs.
"""

from __future__ import annotations

from pathlib import Path

import typer

from pmos.cli import kitcmds, ledgercmds, metricscmds, writercmds
from pmos.cli._app import new_typer, set_root

app = new_typer(
    "pmos: validated ledgers and calibration metrics for an AI review gate.\n\n"
    "The kit root is found from --root, else PMOS_ROOT, else the working directory "
    "and its parents."
)


@app.callback()
def _root(
    root: Path | None = typer.Option(
        None,
        "--root",
        help="Kit root (a folder with pmos.yaml). Defaults to $PMOS_ROOT, then the working "
        "directory and its parents.",
        file_okay=False,
    ),
) -> None:
    set_root(str(root) if root else None)


kitcmds.register(app)
writercmds.register(app)
ledgercmds.register(app)
metricscmds.register(app)


def main() -> None:
    app(prog_name="pmos")
