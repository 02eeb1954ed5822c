"""Ledger commands: verify, show, path, pack, checkpoint."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated

import typer

from pmos import exit_codes
from pmos.cli._app import (
    JsonFlag,
    emit_json,
    emit_json_array,
    examples,
    kit,
    new_typer,
    table,
    warn,
)
from pmos.store.registry import LEDGER_KINDS

#: The ledger kinds, as a choice the parser checks.
Kind = enum.StrEnum("Kind", {name: name for name in LEDGER_KINDS})


def register(app: typer.Typer) -> None:
    ledger_app = new_typer("Inspect, verify and pack the ledgers.", example="pmos ledger verify")
    ledger_app.command("verify", epilog=examples("pmos ledger verify --since origin/main"))(verify)
    ledger_app.command("show", epilog=examples("pmos ledger show evals --run-id run-7 --last 5"))(
        show
    )
    ledger_app.command("path", epilog=examples("pmos ledger path evals"))(path)
    ledger_app.command("pack", epilog=examples("pmos ledger pack"))(pack)
    ledger_app.command(
        "checkpoint", epilog=examples("pmos ledger checkpoint --out /safe/pmos-checkpoint.json")
    )(checkpoint)
    app.add_typer(ledger_app, name="ledger")


def verify(
    schema: Annotated[
        bool,
        typer.Option(
            "--schema",
            help="Re-check every record against its schema and every rule its writer "
            "enforces (the combine rule, axes, weighted sum, verified cap, contract grading, "
            "rubric match, label signatures), ignoring the outcome packs recorded.",
        ),
    ] = False,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            metavar="REV|FILE",
            help="Also require every record present at this git revision (or in this "
            "checkpoint file, when it is an existing file) to be present and unchanged.",
        ),
    ] = None,
    json_output: JsonFlag = False,
) -> None:
    """Check every ledger file: records match their digests, packs their names.

    Each record must also obey its writer's rules: loose records are checked,
    packed ones by the outcome their pack recorded while it holds (--schema
    checks them all). Exits 1 naming each bad file and line (and, with --since,
    each record that was deleted or changed since REV), 0 when all is well.
    """
    from pmos.gate.screen import verify_kit

    k = kit()
    store = k.store
    reports = verify_kit(k, recheck_all=schema)
    ok = all(r.ok for r in reports)
    history = None
    if since is not None and ok:
        from pmos.store.history import since as compare

        what, _, missing = compare(store, since)
        history = {
            "reference": since,
            "reference_kind": what,
            "missing": [m.as_dict() for m in missing],
        }
        ok = not missing
    if json_output:
        data = {"ok": ok, "ledgers": [r.as_dict() for r in reports]}
        if since is not None:
            data["since"] = history
        emit_json(data)
    else:
        for report in reports:
            state = "ok" if report.ok else f"{len(report.problems)} problem(s)"
            typer.echo(f"{report.kind:<12} {report.records:>8} records  {state}  {report.folder}")
            for problem in report.problems:
                where = f"{problem.file}:{problem.line}" if problem.line else problem.file
                typer.echo(f"  {where}: {problem.problem}")
        if history is not None:
            gone = history["missing"]
            typer.echo(
                f"since {since}: {len(gone)} record(s) deleted or changed"
                if gone
                else f"since {since}: every record is still there, unchanged"
            )
            for item in gone:
                how = "changed" if item["changed"] else "missing"
                typer.echo(f"  {item['kind']} {item['record_id'] or item['digest']}: {how}")
        elif since is not None:
            typer.echo(f"since {since}: not compared while the ledgers have problems")
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
    """Print a ledger's records, oldest first (terminal control characters neutralised).

    --json streams a JSON array; the table needs every row it shows in memory,
    so use --last on a large ledger.
    """
    from pmos.store.read import show
    from pmos.store.registry import kind_of

    columns = ["recorded_at", "record_id", *kind_of(kind).columns]
    store = kit().store
    records = show(store, kind, run_id=run_id, last=last)
    if run_id is not None:
        records = _known_run(store, run_id, records)
    if json_output:
        emit_json_array(records)
        return
    rows = [[_fmt(r.get(c)) for c in columns] for r in records]
    typer.echo(table(columns, rows))


def _known_run(store, run_id: str, records):
    """``records``, unless there are none and the kit has no record of ``run_id``
    in any ledger: an unknown id is bad input (exit 2), not an empty ledger."""
    from itertools import chain

    from pmos.gate.runfacts import gather_known

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
    kind: Annotated[
        Kind | None, typer.Argument(metavar="[KIND]", help="The ledger kind; all when omitted.")
    ] = None,
    json_output: JsonFlag = False,
) -> None:
    """Print the folder of each ledger."""
    from pmos.store.registry import kind_of

    store = kit().store
    kinds = [kind_of(kind).name] if kind else list(LEDGER_KINDS)
    paths = {name: str(store.folder(name)) for name in kinds}
    if json_output:
        emit_json(paths)
    elif kind:
        typer.echo(paths[kind])
    else:
        for name, p in paths.items():
            typer.echo(f"{name:<12} {p}")


def pack(
    kinds: Annotated[
        list[Kind] | None,
        typer.Argument(metavar="[KIND]...", help="Ledger kinds to pack; all when omitted."),
    ] = None,
    json_output: JsonFlag = False,
) -> None:
    """Fold loose records (and a pre-folder single-file ledger) into packs.

    Only adds a pack and deletes what it folded, so it merges cleanly on every
    branch; run it on main now and then, and once to convert an older kit.
    """
    from pmos.gate.screen import pack_kit
    from pmos.store.registry import kind_of

    reports = pack_kit(kit(), [kind_of(k).name for k in kinds] if kinds else None)
    for report in reports:
        warn(report.warnings)
    if json_output:
        emit_json({"ledgers": [r.as_dict() for r in reports]})
        return
    rows = [
        [
            r.kind,
            r.records,
            r.loose_folded,
            r.packs_folded,
            "yes" if r.legacy_folded else "",
            r.pack,
        ]
        for r in reports
    ]
    typer.echo(table(["kind", "records", "loose", "packs", "single file", "new pack"], rows))


def checkpoint(
    out: Annotated[
        Path,
        typer.Option("--out", help="File to write the checkpoint to.", dir_okay=False),
    ],
    json_output: JsonFlag = False,
) -> None:
    """Write every record's digest to FILE and print one digest over them.

    Keep the file (or the printed digest) outside the repository; later,
    'pmos ledger verify --since FILE' reports any record deleted or changed.
    """
    from pmos.store.history import write_checkpoint

    summary = write_checkpoint(kit().store, out)
    if json_output:
        emit_json(summary)
    else:
        typer.echo(f"{summary['digest']}  {summary['records']} records  {summary['path']}")
