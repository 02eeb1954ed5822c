"""Ledger commands: verify, show, path."""

from __future__ import annotations

import typer

from pmos import exit_codes
from pmos.cli._app import JSON_OPTION, emit_json, emit_json_array, kit, new_typer, table


def register(app: typer.Typer) -> None:
    ledger_app = new_typer("Inspect and verify the ledgers.")
    ledger_app.command("verify")(verify)
    ledger_app.command("show")(show)
    ledger_app.command("path")(path)
    app.add_typer(ledger_app, name="ledger")


def verify(
    schema: bool = typer.Option(False, "--schema", help="Also re-validate every record."),
    json_output: bool = JSON_OPTION,
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
    kind: str = typer.Argument(..., help="Ledger kind: runs, evals, acceptances, ..."),
    run_id: str | None = typer.Option(
        None, "--run-id", help="Only records of this run (tasks: of their parent run)."
    ),
    last: int | None = typer.Option(None, "--last", help="Only the last N records."),
    json_output: bool = JSON_OPTION,
) -> None:
    """Print a ledger's records (terminal control characters neutralised).

    --json streams a JSON array; the table needs every row it shows in memory,
    so use --last on a large ledger.
    """
    from pmos.store.read import show
    from pmos.store.registry import LEDGER_KINDS

    store = kit().store
    records = show(store, kind, run_id=run_id, last=last)
    if run_id is not None:
        records = _known_run(store, run_id, records)
    if json_output:
        emit_json_array(records)
        return
    columns = ["recorded_at", "record_id", *LEDGER_KINDS[kind].columns]
    rows = [[_fmt(r.get(c)) for c in columns] for r in records]
    typer.echo(table(columns, rows))


def _known_run(store, run_id: str, records):
    """``records``, unless there are none and the kit has no record of ``run_id``
    in any ledger: an unknown id is bad input (exit 2), not an empty ledger."""
    from itertools import chain

    from pmos.store.runfacts import gather_known

    iterator = iter(records)
    first = next(iterator, None)
    if first is None:
        gather_known(store, run_id)
        return iter(())
    return chain([first], iterator)


def _fmt(value):
    if isinstance(value, list):
        return ",".join(map(str, value))
    return value


def path(
    kind: str | None = typer.Argument(None, help="Ledger kind; all when omitted."),
    json_output: bool = JSON_OPTION,
) -> None:
    """Print where the ledgers are."""
    from pmos.store.registry import LEDGER_KINDS

    k = kit()
    kinds = [kind] if kind else list(LEDGER_KINDS)
    paths = {name: str(k.store.path(name)) for name in kinds}
    if json_output:
        emit_json(paths)
    elif kind:
        typer.echo(paths[kind])
    else:
        for name, p in paths.items():
            typer.echo(f"{name:<12} {p}")
