"""Kit commands: init, root, schema show, rubric show."""

from __future__ import annotations

import typer

from pmos.cli._app import JSON_OPTION, emit_json, kit, new_typer, root_option


def register(app: typer.Typer) -> None:
    app.command("init")(init)
    app.command("root")(root)
    schema_app = new_typer("Print the JSON Schemas records are validated against.")
    schema_app.command("show")(schema_show)
    schema_app.command("list")(schema_list)
    app.add_typer(schema_app, name="schema")
    rubric_app = new_typer("Read rubrics (the kit's get_eval_rubric).")
    rubric_app.command("show")(rubric_show)
    app.add_typer(rubric_app, name="rubric")


def init(
    directory: str = typer.Argument(..., help="Folder to make a kit root (created if missing)."),
    json_output: bool = JSON_OPTION,
) -> None:
    """Create a ready kit root: pmos.yaml, empty ledgers, schemas, rubric, scripts.

    Existing files, ledgers above all, are never overwritten; re-running init only
    adds what is missing.
    """
    from pmos.kit import init_kit

    report = init_kit(directory)
    if json_output:
        emit_json(report.as_dict())
        return
    typer.echo(f"kit root: {report.root}")
    for rel in report.created:
        typer.echo(f"  created  {rel}")
    for rel in report.kept:
        typer.echo(f"  kept     {rel}")
    typer.echo(
        "signed PM labels are off: to require each label to carry its PM's SSH signature, "
        "list the PMs' public keys in an allowed_signers file and uncomment the 'signing' "
        f"section of {report.root}/pmos.yaml (PMs then run 'pmos accept ... --sign-key "
        "~/.ssh/id_ed25519')"
    )


def root(json_output: bool = JSON_OPTION) -> None:
    """Print the resolved kit root and its ledger files."""
    from pmos.store.registry import LEDGER_KINDS

    k = kit()
    ledgers = {name: str(k.store.folder(name)) for name in LEDGER_KINDS}
    if json_output:
        emit_json({"root": str(k.root), "ledgers": ledgers, "from_option": bool(root_option())})
        return
    typer.echo(str(k.root))


def schema_show(
    kind: str = typer.Argument(..., help="Schema name: run, verdict, acceptance, rubric, ..."),
) -> None:
    """Print one bundled JSON Schema."""
    from pmos.schemas import load_schema

    emit_json(load_schema(kind))


def schema_list(json_output: bool = JSON_OPTION) -> None:
    """List the bundled schemas."""
    from pmos.schemas import SCHEMA_NAMES, load_schema

    rows = [{"name": n, "id": load_schema(n)["$id"]} for n in SCHEMA_NAMES]
    if json_output:
        emit_json(rows)
        return
    for row in rows:
        typer.echo(f"{row['name']:<12} {row['id']}")


def rubric_show(
    path: str | None = typer.Argument(
        None, help="Rubric path relative to the kit root; default from pmos.yaml."
    ),
    json_output: bool = JSON_OPTION,
) -> None:
    """Print a rubric: threshold, weighted dimensions and axes, then its text."""
    from pmos.gate.rubric import load_rubric

    k = kit()
    rubric = load_rubric(k.root, k.config.default_rubric if path is None else path)
    if json_output:
        emit_json(rubric.as_dict())
        return
    from pmos.cli._app import table

    typer.echo(f"rubric: {rubric.path}")
    typer.echo(f"threshold: {rubric.threshold}")
    rows = [(d.name, d.axis, d.weight, d.description) for d in rubric.dimensions]
    typer.echo(table(["dimension", "axis", "weight", "description"], rows))
    typer.echo(rubric.body.rstrip())
