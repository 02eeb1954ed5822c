"""``pmos board``: write the self-contained HTML board of the review gate."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from pmos.board.collect import BoardOptions, collect, parse_by
from pmos.board.extra import require_extra
from pmos.board.output import check_target, default_path, write_board
from pmos.board.page import render
from pmos.cli._app import JsonFlag, emit_json, examples, kit
from pmos.errors import BadInput


def register(app: typer.Typer) -> None:
    app.command("board", epilog=examples("pmos board --out board.html"))(board)


def board(
    out: Annotated[
        str | None,
        typer.Option(
            "--out",
            help="Where to write the page (default: board.html in the kit's state/ folder); "
            "'-' writes it to stdout.",
        ),
    ] = None,
    initiative: Annotated[
        str | None, typer.Option("--initiative", help="Only this initiative.")
    ] = None,
    model: Annotated[str | None, typer.Option("--model", help="Only this evaluator model.")] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since", help="Only verdicts recorded at or after DATE (YYYY-MM-DD or RFC 3339)."
        ),
    ] = None,
    by: Annotated[
        str,
        typer.Option(
            "--by", help="Period of the agreement-over-time chart: week, month or N runs."
        ),
    ] = "week",
    limit: Annotated[
        int,
        typer.Option(
            "--limit", help="Records listed per section (latest verdicts, each queue, overrides)."
        ),
    ] = 50,
    json_output: JsonFlag = False,
) -> None:
    """Write one self-contained HTML page of the review gate.

    It shows the gate's status, agreement and its trend, per-model figures, score
    distributions, the queues, the latest verdicts and the overrides. No network, no
    scripts; it needs the 'board' extra.
    """
    require_extra()
    if out == "-" and json_output:
        raise BadInput(
            "--json describes the written file, and --out - writes the page itself to stdout; "
            "use one of them"
        )
    # Deferred: pmos.calibration.metrics imports numpy (about 0.2 s).
    from pmos.calibration.metrics import parse_since

    the_kit = kit()
    options = BoardOptions(
        initiative=initiative,
        model=model,
        since=parse_since(since) if since is not None else None,
        by=parse_by(by),
        limit=limit,
    ).checked()
    target = None if out in (None, "-") else Path(out)
    if out != "-":
        check_target(the_kit, target or default_path(the_kit))  # refuse before reading anything
    data = collect(the_kit, options)
    page = render(data)
    if out == "-":
        sys.stdout.write(page.html)
        sys.stdout.flush()
        return
    path = write_board(the_kit, page.html, target)
    size = len(page.html.encode("utf-8"))
    if json_output:
        emit_json(
            {
                "path": str(path),
                "bytes": size,
                "generated_at": data.generated_at,
                "kit_root": data.kit_root,
                "calibrated": bool(data.metrics.get("calibrated")),
                "charts": page.charts,
                "unavailable": page.unavailable,
                "checkpoint": data.checkpoint,
                "ledgers_moved": data.moved,
            }
        )
        return
    status = "CALIBRATED" if data.metrics.get("calibrated") else "ADVISORY"
    typer.echo(f"board written to {path} ({size / 1024:.0f} KiB); the gate is {status}")
    for line in page.unavailable:
        typer.echo(f"  {line}")
