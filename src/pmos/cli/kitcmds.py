"""Kit commands: init, root, schema show, rubric show."""

from __future__ import annotations

import enum
import os
import shlex
from pathlib import Path
from typing import Annotated, Any

import typer

from pmos import __version__
from pmos.cli._app import JsonFlag, emit_json, examples, kit, new_typer, root_option, table
from pmos.gate.rubric import load_rubric
from pmos.gate.signing import KIT_ID_COMMAND
from pmos.gate.signing import kit_id as configured
from pmos.kit import init_kit
from pmos.kit.init import create_kit_id, summarise
from pmos.schemas import SCHEMA_NAMES, load_schema
from pmos.store.registry import LEDGER_KINDS

#: The bundled schemas, as a choice the parser checks.
# Members from data, which mypy cannot list (it takes literal members only).
SchemaName = enum.StrEnum("SchemaName", {name: name for name in SCHEMA_NAMES})  # type: ignore[misc]


class CiSystem(enum.StrEnum):
    """The CI systems ``pmos init --ci`` writes the merge gate's job for."""

    github = "github"
    gitlab = "gitlab"


def register(app: typer.Typer) -> None:
    app.command(
        "init",
        epilog=examples(
            "pmos init product/pmos",
            "pmos init product/pmos --ci github",
            "pmos init pmos --mcp-json",
        ),
    )(init)
    app.command("root", epilog=examples("pmos root", "pmos root --json"))(root)
    app.command("kit-id", epilog=examples("pmos kit-id", "pmos kit-id --create"))(kit_id)
    schema_app = new_typer(
        "Print the JSON Schemas records are validated against.",
        example="pmos schema show verdict",
    )
    schema_app.command("show", epilog=examples("pmos schema show verdict"))(schema_show)
    schema_app.command("list", epilog=examples("pmos schema list --json"))(schema_list)
    app.add_typer(schema_app, name="schema")
    rubric_app = new_typer("Read rubrics (the kit's get_eval_rubric).", example="pmos rubric show")
    rubric_app.command(
        "show", epilog=examples("pmos rubric show planning/evals/agent-run-eval-rubric.md --json")
    )(rubric_show)
    app.add_typer(rubric_app, name="rubric")


def init(
    directory: Annotated[
        str, typer.Argument(help="Folder to make a kit root (created if missing).")
    ],
    mcp_json: Annotated[
        bool,
        typer.Option(
            "--mcp-json",
            help="Also write .mcp.json in the working directory (the project folder an agent "
            "host such as Claude Code starts in): the 'pmos' MCP server, 'pmos --root DIR mcp'. "
            "Refused (exit 2, nothing written) when .mcp.json exists.",
        ),
    ] = False,
    ci: Annotated[
        CiSystem | None,
        typer.Option(
            "--ci",
            help="Also write the merge gate's CI job into the repository the kit is in: "
            "github (.github/workflows/pmos-gate.yml) or gitlab "
            "(.gitlab/pmos-gate.gitlab-ci.yml). An existing file is refused, nothing written.",
        ),
    ] = None,
    json_output: JsonFlag = False,
) -> None:
    """Create a ready kit root: pmos.yaml, empty ledgers, schemas, rubric, scripts.

    Existing files, ledgers above all, are never overwritten; re-running init only
    adds what is missing. A folder inside another kit is refused. Prints a summary
    and the next steps (--json lists every file created or kept).
    """
    report = init_kit(
        directory, mcp_project=Path.cwd() if mcp_json else None, ci=ci.value if ci else None
    )
    if json_output:
        emit_json(report.as_dict())
        return
    typer.echo(render_init(report, directory))


def render_init(report: Any, directory: str) -> str:
    """What init did, folder by folder, and the three steps that follow it."""
    created, kept = summarise(report.created), summarise(report.kept)
    lines = [f"kit root: {report.root}"]
    if created:
        lines.append(f"created {len(report.created)} file(s): {created}")
    if kept:
        lines.append(f"kept {len(report.kept)} existing file(s), unchanged: {kept}")
    if report.mcp_config is not None:
        lines.append(
            f"wrote {report.mcp_config}: agent hosts that read it start 'pmos mcp' on this kit "
            "(commit it with the kit)"
        )
    kit_dir = shlex.quote(directory.rstrip("/") or directory)
    added, message = kit_dir, "Add the pmos kit"
    if report.ci:
        lines.append(f"wrote the merge gate's CI job: {report.ci}")
        shown = os.path.relpath(report.ci)
        added += " " + shlex.quote(report.ci if shown.startswith("..") else shown)
        message += " and its merge gate"
        ci_step = [
            "  2. in the CI settings, set the variable PMOS_PIP_SPEC to where pip installs "
            f"pmos {__version__} from, and make the check 'pmos gate' required (pmos's "
            "docs/how-to/gate-merges-in-ci.md)",
        ]
    else:
        ci_step = [
            "  2. in the product's CI, gate every merge on pmos (pmos gate): write the job "
            "(--ci gitlab for GitLab CI) and make the check 'pmos gate' required:",
            f"       pmos init {kit_dir} --ci github",
        ]
    lines += [
        "",
        "next steps:",
        "  1. commit the kit, ledgers included:",
        f"       git add {added} && git commit -m '{message}'",
        *ci_step,
        "  3. register a run and record its first verdict (an evaluator agent, from the "
        "product's root; run prints the new run's id):",
        f"       RUN=$({kit_dir}/scripts/pmos-log.sh run --initiative-id INITIATIVE_ID "
        f'--builder-model BUILDER_MODEL) && {kit_dir}/scripts/pmos-log.sh eval "$RUN" '
        "INITIATIVE_ID 0.9 PASS planning/evals/agent-run-eval-rubric.md EVALUATOR_MODEL "
        "--spec pass --standards pass",
        "",
        "signed PM labels are off: to require each label to carry its PM's SSH signature, "
        "list the PMs' public keys in an allowed_signers file and uncomment the 'signing' "
        f"section of {report.root}/pmos.yaml (PMs then run 'pmos accept ... --sign-key "
        "~/.ssh/id_ed25519'). In a kit that already holds labels, commit them and write "
        "'required_since: COMMIT' (the full id 'git rev-parse HEAD' prints) instead of "
        "'required: true': the unsigned labels in the kit at that commit stay valid and "
        "counted, marked unsigned; every later label needs a signature "
        "(docs/how-to/record-pm-labels.md).",
    ]
    return "\n".join(lines)


def kit_id(
    create: Annotated[
        bool,
        typer.Option(
            "--create",
            help="Write a new kit_id into pmos.yaml (a kit made before kits had one); "
            "refused when it has one.",
        ),
    ] = False,
    json_output: JsonFlag = False,
) -> None:
    """Print the kit's identity (pmos.yaml kit_id), which signed PM labels name.

    'pmos init' writes it; a kit made before needs it once, before its first
    signed label: 'pmos kit-id --create', then commit pmos.yaml. Exit 1 when the
    kit has none.
    """
    k = kit()
    found = configured(k.config)
    created = False
    if create:
        found, created = create_kit_id(k.root), True
    if json_output:
        emit_json({"kit_id": found, "created": created})
    elif found is not None:
        typer.echo(found)
    else:
        typer.echo(f"this kit has no kit_id: run '{KIT_ID_COMMAND}' and commit pmos.yaml", err=True)
    if found is None:
        raise typer.Exit(1)


def root(json_output: JsonFlag = False) -> None:
    """Print the kit root in use (--json adds where each ledger is).

    The root is found from --root, else $PMOS_ROOT, else the working directory and
    its parents; 'pmos ledger path' prints the ledger folders.
    """
    k = kit()
    if json_output:
        ledgers = {name: str(k.store.folder(name)) for name in LEDGER_KINDS}
        emit_json({"root": str(k.root), "ledgers": ledgers, "from_option": bool(root_option())})
        return
    typer.echo(str(k.root))


def schema_show(
    kind: Annotated[SchemaName, typer.Argument(help="Schema name (see 'pmos schema list').")],
) -> None:
    """Print one bundled JSON Schema."""
    emit_json(load_schema(kind.value))


def schema_list(json_output: JsonFlag = False) -> None:
    """List the bundled schemas."""
    rows = [{"name": n, "id": load_schema(n)["$id"]} for n in SCHEMA_NAMES]
    if json_output:
        emit_json(rows)
        return
    for row in rows:
        typer.echo(f"{row['name']:<12} {row['id']}")


def rubric_show(
    path: Annotated[
        str | None,
        typer.Argument(help="Rubric path, relative to the kit root; default from pmos.yaml."),
    ] = None,
    json_output: JsonFlag = False,
) -> None:
    """Print a rubric: threshold, weighted dimensions and axes, then its text."""
    k = kit()
    rubric = load_rubric(k.root, k.config.default_rubric if path is None else path)
    if json_output:
        emit_json(rubric.as_dict())
        return
    typer.echo(f"rubric: {rubric.path}")
    typer.echo(f"threshold: {rubric.threshold}")
    rows = [(d.name, d.axis, d.weight, d.description) for d in rubric.dimensions]
    typer.echo(table(["dimension", "axis", "weight", "description"], rows))
    typer.echo(rubric.body.rstrip())
