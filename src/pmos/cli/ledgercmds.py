"""Ledger commands: verify, show, path, pack, checkpoint."""

from __future__ import annotations

import enum
import sys
from collections.abc import Iterator
from itertools import chain
from pathlib import Path
from typing import Annotated, Any

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
from pmos.errors import BadInput
from pmos.gate.runfacts import gather_known
from pmos.gate.stored_evidence import verify_with_evidence
from pmos.store import history as ledger_history
from pmos.store.history import write_checkpoint
from pmos.store.layout import Store
from pmos.store.packing import DEFAULT_BRANCH, DEFAULT_GRACE_DAYS, pack_store
from pmos.store.read import canonical_lines
from pmos.store.read import show as show_records
from pmos.store.registry import LEDGER_KINDS, kind_of

#: The ledger kinds, as a choice the parser checks.
# Members from data, which mypy cannot list (it takes literal members only).
Kind = enum.StrEnum("Kind", {name: name for name in LEDGER_KINDS})  # type: ignore[misc]


def register(app: typer.Typer) -> None:
    ledger_app = new_typer("Inspect, verify and pack the ledgers.", example="pmos ledger verify")
    ledger_app.command("verify", epilog=examples("pmos ledger verify --since origin/main"))(verify)
    ledger_app.command(
        "show",
        epilog=examples(
            "pmos ledger show evals --run-id run-7 --last 5", "pmos ledger show evals --jsonl"
        ),
    )(show)
    ledger_app.command("path", epilog=examples("pmos ledger path evals"))(path)
    ledger_app.command("pack", epilog=examples("pmos ledger pack evals"))(pack)
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
            "rubric match, label signatures), without the screening cache.",
        ),
    ] = False,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            metavar="REV",
            help="Also require every record present at this git revision to be present "
            "and unchanged (a revision only; never a file).",
        ),
    ] = None,
    checkpoint_file: Annotated[
        Path | None,
        typer.Option(
            "--checkpoint",
            metavar="FILE",
            dir_okay=False,
            help="Also require every record of this checkpoint file (pmos ledger "
            "checkpoint) to be present and unchanged.",
        ),
    ] = None,
    json_output: JsonFlag = False,
) -> None:
    """Check every ledger file: records match their digests, packs their names.

    Applies the rule every reader applies (each line's digest and canonical
    form, its file's name and folder, one record per record_id) and reports
    each file or record the readers leave out, records dated in the future, and
    records that break their writer's rules. Exits 1 naming each bad file and
    line (and, with --since or --checkpoint, each record that was deleted or
    changed since), 0 when all is well.
    """
    if since is not None and checkpoint_file is not None:
        raise BadInput("give --since REV or --checkpoint FILE, not both")
    k = kit()
    store = k.store
    reports = verify_with_evidence(k, recheck_all=schema)
    ok = all(r.ok for r in reports)
    history: dict[str, Any] | None = None
    reference = since if since is not None else checkpoint_file
    if reference is not None and ok:
        if since is not None:
            what, _, missing = ledger_history.since(store, since)
        elif checkpoint_file is not None:
            what, _, missing = ledger_history.since_checkpoint(store, checkpoint_file)
        history = {
            "reference": str(reference),
            "reference_kind": what,
            "missing": [m.as_dict() for m in missing],
        }
        ok = not missing
    if json_output:
        data = {"ok": ok, "ledgers": [r.as_dict() for r in reports]}
        if reference is not None:
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
                f"since {reference}: {len(gone)} record(s) deleted or changed"
                if gone
                else f"since {reference}: every record is still there, unchanged"
            )
            for item in gone:
                how = "changed" if item["changed"] else "missing"
                typer.echo(f"  {item['kind']} {item['record_id'] or item['digest']}: {how}")
        elif reference is not None:
            typer.echo(f"since {reference}: not compared while the ledgers have problems")
    if not ok:
        raise typer.Exit(exit_codes.CHECK_FAILED)


def show(
    kind: Annotated[Kind, typer.Argument(metavar="KIND", help="The ledger kind.")],
    run_id: Annotated[
        str | None,
        typer.Option("--run-id", help="Only records of this run (tasks: of their parent run)."),
    ] = None,
    last: Annotated[int | None, typer.Option("--last", help="Only the last N records.")] = None,
    jsonl: Annotated[
        bool,
        typer.Option(
            "--jsonl",
            help="Stream every record as one canonical JSON line, in ledger order: the "
            "ledger as a single JSONL file, for tools that want one.",
        ),
    ] = False,
    json_output: JsonFlag = False,
) -> None:
    """Print a ledger's records, oldest first (terminal control characters neutralised).

    --json streams a JSON array; the table needs every row it shows in memory,
    so use --last on a large ledger. --jsonl streams every record that counts
    (no other option applies), one canonical JSON line each.
    """
    if jsonl:
        if run_id is not None or last is not None or json_output:
            raise BadInput(
                "--jsonl streams the whole ledger: --run-id, --last and --json do not apply"
            )
        _stream_jsonl(kind)
        return

    columns = ["recorded_at", "record_id", *kind_of(kind).columns]
    store = kit().store
    records = show_records(store, kind, run_id=run_id, last=last)
    if run_id is not None:
        records = _known_run(store, run_id, records)
    if json_output:
        emit_json_array(records)
        return
    if kind == "acceptances":
        # Whether each label is signed: unsigned ones count only from before signing
        # was required (pmos.yaml signing.required_since).
        columns.append("signature")
        records = (
            {**r, "signature": "signed" if r.get("signature") else "unsigned"} for r in records
        )
    rows = [[_fmt(r.get(c)) for c in columns] for r in records]
    typer.echo(table(columns, rows))


def _stream_jsonl(kind: str) -> None:
    """Write ``pmos ledger show KIND --jsonl`` to stdout, a bucket at a time."""
    out = sys.stdout.buffer
    for line in canonical_lines(kit().store, kind):
        out.write(line)
    out.flush()


def _known_run(
    store: Store, run_id: str, records: Iterator[dict[str, Any]]
) -> Iterator[dict[str, Any]]:
    """``records``, unless there are none and the kit has no record of ``run_id``
    in any ledger: an unknown id is bad input (exit 2), not an empty ledger."""
    iterator = iter(records)
    first = next(iterator, None)
    if first is None:
        gather_known(store, run_id)
        return iter(())
    return chain([first], iterator)


def _fmt(value: Any) -> Any:
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
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Pack even off the default branch (packs made on two branches can "
            "conflict when they merge).",
        ),
    ] = False,
    json_output: JsonFlag = False,
) -> None:
    """Compact each closed month of the ledgers into one pack.

    A month is closed once it is over and pack.grace_days (pmos.yaml, default
    7) have passed by this machine's clock. A pack is a function of its records
    alone, so the same compaction on two clones makes the same file. Refuses
    (exit 2) unless the kit is outside git or on the default branch
    (pack.default_branch, default main).
    """
    k = kit()
    settings = k.config.raw.get("pack") or {}
    reports = pack_store(
        k.store,
        [kind_of(name).name for name in kinds] if kinds else None,
        grace_days=settings.get("grace_days", DEFAULT_GRACE_DAYS),
        default_branch=settings.get("default_branch", DEFAULT_BRANCH),
        force=force,
    )
    for report in reports:
        warn(report.warnings)
    if json_output:
        emit_json({"ledgers": [r.as_dict() for r in reports]})
        return
    rows = [
        [r.kind, r.records, r.loose_folded, r.packs_folded, ",".join(r.buckets) or "-"]
        for r in reports
    ]
    typer.echo(table(["kind", "records", "loose", "packs", "months packed"], rows))


def checkpoint(
    out: Annotated[
        Path,
        typer.Option("--out", help="File to write the checkpoint to.", dir_okay=False),
    ],
    json_output: JsonFlag = False,
) -> None:
    """Write every record's digest to FILE and print one digest over them.

    Keep the file (or the printed digest) outside the repository; later,
    'pmos ledger verify --checkpoint FILE' reports any record deleted or changed.
    """
    summary = write_checkpoint(kit().store, out)
    if json_output:
        emit_json(summary)
    else:
        typer.echo(f"{summary['digest']}  {summary['records']} records  {summary['path']}")
