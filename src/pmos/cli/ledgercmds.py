"""Ledger commands: verify, show, path."""

from __future__ import annotations

import enum
from typing import Annotated

import typer

from pmos import exit_codes
from pmos.cli._app import JsonFlag, emit_json, emit_json_array, examples, kit, new_typer, table
from pmos.store.registry import LEDGER_KINDS

#: The ledger kinds, as a choice the parser checks.
Kind = enum.StrEnum("Kind", {name: name for name in LEDGER_KINDS})


def register(app: typer.Typer) -> None:
    ledger_app = new_typer("Inspect and verify the ledgers.", example="pmos ledger verify")
    ledger_app.command("verify", epilog=examples("pmos ledger verify --json"))(verify)
    ledger_app.command("show", epilog=examples("pmos ledger show evals --run-id run-7 --last 5"))(
        show
    )
    ledger_app.command("path", epilog=examples("pmos ledger path evals"))(path)
    app.add_typer(ledger_app, name="ledger")


def verify(
    schema: Annotated[
        bool, typer.Option("--schema", help="Also re-validate every record.")
    ] = False,
    json_output: JsonFlag = False,
) -> None:
    """Check every ledger: each line parses, the hash chain holds, no torn tail.

    Exits 1 naming each bad line, 0 when all ledgers are clean.
    """
    from pmos.store.verify import verify_store

    reports = verify_store(kit().store, with_schema=schema)
    ok = all(r.ok for r in reports)
    if json_output:
        emit_json({"ok": ok, "ledgers": [r.as_dict() for r in reports]})
    else:
        for report in reports:
            state = "ok" if report.ok else f"{len(report.problems)} problem(s)"
            typer.echo(f"{report.kind:<12} {report.lines:>8} lines  {state}  {report.path}")
            for problem in report.problems:
                typer.echo(f"  {report.path}:{problem.line}: {problem.problem}")
    if not ok:
        raise typer.Exit(exit_codes.CHECK_FAILED)


def show(
    kind: Annotated[Kind, typer.Argument(metavar="KIND", help="The ledger kind.")],
    run_id: Annotated[
        str | None,
        typer.Option("--run-id", help="Only records of this run (tasks: of their parent run)."),
    ] = None,
    last: Annotated[int | None, typer.Option("--last", help="Only the last N records.")] = None,
    json_output: JsonFlag = False,
) -> None:
    """Print a ledger's records (terminal control characters neutralised).

    --json streams a JSON array; the table needs every row it shows in memory,
    so use --last on a large ledger.
    """
    from pmos.store.read import show

    records = show(kit().store, kind.value, run_id=run_id, last=last)
    if json_output:
        emit_json_array(records)
        return
    columns = ["recorded_at", "record_id", *LEDGER_KINDS[kind.value].columns]
    rows = [[_fmt(r.get(c)) for c in columns] for r in records]
    typer.echo(table(columns, rows))


def _fmt(value):
    if isinstance(value, list):
        return ",".join(map(str, value))
    return value


def path(
    kind: Annotated[
        Kind | None, typer.Argument(metavar="[KIND]", help="Ledger kind; all when omitted.")
    ] = None,
    json_output: JsonFlag = False,
) -> None:
    """Print where the ledgers are."""
    k = kit()
    kinds = [kind.value] if kind else list(LEDGER_KINDS)
    paths = {name: str(k.store.path(name)) for name in kinds}
    if json_output:
        emit_json(paths)
    elif kind:
        typer.echo(paths[kind.value])
    else:
        for name, p in paths.items():
            typer.echo(f"{name:<12} {p}")
