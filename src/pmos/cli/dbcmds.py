"""Database commands: sync (a kit into PostgreSQL), db migrate, db status, db grant."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pmos import exit_codes
from pmos.cli._app import JsonFlag, emit_json, examples, kit, new_typer, table, warn
from pmos.db.connect import connection, resolve_dsn
from pmos.db.migrate import migrate as apply_migrations
from pmos.db.migrate import status as read_status
from pmos.db.roles import Access, grant_kit
from pmos.db.roles import grant as grant_role
from pmos.errors import BadInput
from pmos.merge.committed import committed_policy

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        metavar="DSN",
        help="PostgreSQL DSN (postgresql://user@host/dbname or 'host=... dbname=...'); "
        "default $PMOS_DATABASE_URL.",
    ),
]


def register(app: typer.Typer) -> None:
    app.command("sync", epilog=examples("pmos sync --db postgresql:///pmos"))(sync)
    db_app = new_typer(
        "Set up the PostgreSQL database that pmos sync writes.",
        example="pmos db migrate --db postgresql:///pmos",
    )
    db_app.command("migrate", epilog=examples("pmos db migrate --db postgresql:///pmos"))(migrate)
    db_app.command("status", epilog=examples("pmos db status --db postgresql:///pmos"))(status)
    db_app.command(
        "grant",
        epilog=examples(
            "pmos db grant pmos_dashboard --as read --db postgresql:///pmos",
            "pmos db grant --kit github.com/acme/shop#pmos --password-file shop.secret "
            "--db postgresql:///pmos",
        ),
    )(grant)
    app.add_typer(db_app, name="db")


def sync(
    db: DbOption = None,
    kit_id: Annotated[
        str | None,
        typer.Option(
            "--kit-id",
            help="The kit's id in the database (default: the git remote URL and the kit's "
            "folder in the repository; needed when the kit has no git remote).",
        ),
    ] = None,
    policy_from_working_tree: Annotated[
        bool,
        typer.Option(
            "--policy-from-working-tree",
            help="Take the kit's working tree (pmos.yaml, allowed signers, rubrics) as its "
            "policy. Only for a kit outside git; in git the policy is the default branch's.",
        ),
    ] = False,
    json_output: JsonFlag = False,
) -> None:
    """Copy the kit's records the database lacks, in one transaction.

    The kit's settings and trust files come from the repository's default branch
    as committed, never from the branch or working tree checked out (a difference
    is reported). Refuses (exit 1, nothing copied) a kit whose ledgers fail 'pmos
    ledger verify', and (exit 2) a database whose schema is not at this pmos's
    version, or a kit outside git without --policy-from-working-tree.
    """
    # Deferred: pmos.db.sync imports numpy (about 0.2 s).
    from pmos.db.sync import sync_kit

    own = kit()
    dsn = resolve_dsn(db)
    with committed_policy(own, working_tree=policy_from_working_tree) as policy:
        if policy.differs:  # said first: it explains a refusal under the default branch's
            warn(
                [
                    f"this checkout's policy differs from the default branch's "
                    f"({policy.source}) in {', '.join(policy.differs)}: the sync applies the "
                    "default branch's; a change to the policy counts once it is merged"
                ]
            )
        report = sync_kit(own, dsn, policy=policy.kit, source=policy.source, kit_id=kit_id)
    if json_output:
        emit_json({**report.as_dict(), "policy_differs": policy.differs})
        return
    state = "new in the database" if report.new_kit else "already in the database"
    typer.echo(f"kit {report.identity.kit_id} ({state}); settings from {report.policy}")
    rows = [[k.kind, k.records, k.added] for k in report.kinds]
    rows.append(["total", report.records, report.added])
    typer.echo(table(["ledger", "records in kit", "added"], rows))


def migrate(
    db: DbOption = None,
    to: Annotated[
        int | None,
        typer.Option("--to", help="Stop at this schema version (default: the latest)."),
    ] = None,
    json_output: JsonFlag = False,
) -> None:
    """Apply the pending schema migrations, all in one transaction (as the database owner)."""
    with connection(resolve_dsn(db), purpose="migrate") as conn:
        report = apply_migrations(conn, to=to)
    if json_output:
        emit_json(report.as_dict())
        return
    if report.applied:
        for name in report.applied:
            typer.echo(f"applied {name}")
    else:
        typer.echo("nothing to apply")
    typer.echo(f"schema version {report.after}")


def status(db: DbOption = None, json_output: JsonFlag = False) -> None:
    """The database's schema version and the migrations pending. Exits 1 while any is."""
    with connection(resolve_dsn(db), purpose="status") as conn:
        found = read_status(conn)
    if json_output:
        emit_json(found)
    else:
        typer.echo(f"schema version {found['schema_version']} (latest {found['latest_version']})")
        for name in found["pending"]:
            typer.echo(f"pending {name}")
    if not found["current"]:
        raise typer.Exit(exit_codes.CHECK_FAILED)


def grant(
    role: Annotated[
        str | None,
        typer.Argument(help="An existing database role (with --as read)."),
    ] = None,
    access: Annotated[
        Access | None,
        typer.Option(
            "--as",
            help="read: select-only, for dashboards and pmos metrics/queue --db.",
        ),
    ] = None,
    kit_id: Annotated[
        str | None,
        typer.Option(
            "--kit",
            metavar="ID",
            help="Make the login role that alone may sync kit ID (its rows only, by "
            "row-level security), with a new password; run as the database's owner.",
        ),
    ] = None,
    password_file: Annotated[
        Path | None,
        typer.Option(
            "--password-file",
            help="With --kit: write the password to this new file (mode 600) instead of "
            "printing it.",
        ),
    ] = None,
    db: DbOption = None,
    json_output: JsonFlag = False,
) -> None:
    """Grant ROLE read access (--as read), or make kit ID's own syncing role (--kit ID).

    A kit's role is bound to its kit: 'pmos sync' with it under any other kit's id
    is refused (exit 2) and nothing is written. Its password is shown once.
    """
    if kit_id is not None:
        if role is not None or access is not None:
            raise BadInput("give either --kit ID, or ROLE --as read, not both")
        done = grant_kit(resolve_dsn(db), kit_id, password_file=password_file)
        if json_output:
            emit_json(done)
            return
        typer.echo(f"role {done['role']} syncs kit {done['kit_id']} and only it")
        if done["password"] is not None:
            typer.echo(f"password (shown once): {done['password']}")
        else:
            typer.echo(f"password written to {done['password_file']}")
        return
    if role is None or access is None:
        raise BadInput("give ROLE --as read, or --kit ID")
    if password_file is not None:
        raise BadInput("--password-file goes with --kit ID")
    done = grant_role(resolve_dsn(db), role, access)
    if json_output:
        emit_json(done)
        return
    for statement in done["statements"]:
        typer.echo(statement)
