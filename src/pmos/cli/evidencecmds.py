"""The evidence command: a capped, citable bundle of what happened in a run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pmos.cli._app import JsonFlag, emit_json, examples, kit, table
from pmos.errors import BadInput
from pmos.tasks.evidence import build_bundle, render_markdown


def register(app: typer.Typer) -> None:
    app.command(
        "evidence",
        epilog=examples("pmos evidence --run-id run-7 --repo . --range main..feature --markdown"),
    )(evidence)


def evidence(
    run_id: Annotated[str, typer.Option("--run-id", help="The run to collect evidence for.")],
    repo: Annotated[
        Path | None,
        typer.Option(
            "--repo",
            help="Git repository of the product, for commits and changed docs (default: "
            "the run record's --repo, else the repository of the working directory).",
        ),
    ] = None,
    rev_range: Annotated[
        str | None,
        typer.Option(
            "--range",
            help="Revision range in --repo, e.g. main..feature (default: the run "
            "record's base..head, else the newest 20 commits of HEAD).",
        ),
    ] = None,
    logs: Annotated[
        list[Path] | None, typer.Option("--log", help="Agent log file; repeat for several.")
    ] = None,
    json_output: JsonFlag = False,
    markdown: Annotated[
        bool,
        typer.Option("--markdown", help="Print the '## Evidence' prompt section for an evaluator."),
    ] = False,
) -> None:
    """Print the evidence bundle of a run: eight groups in a fixed order, capped and cited."""
    if json_output and markdown:
        raise BadInput("choose one of --json and --markdown")
    bundle = build_bundle(kit(), run_id, repo=repo, rev_range=rev_range, logs=logs or [])
    if json_output:
        emit_json(bundle.as_dict())
        return
    if markdown:
        typer.echo(render_markdown(bundle), nl=False)
        return
    for group in bundle.groups:
        typer.echo(f"{group.name} ({len(group.entries)} of {group.total})")
        for note in group.notes:
            typer.echo(f"  ({note})")
        if group.entries:
            typer.echo(table(["id", "excerpt"], [(e.id, e.excerpt) for e in group.entries]))
        typer.echo("")
