"""Assessment commands: assess SPEC and assess history TASK.

``pmos assess SPEC`` and ``pmos assess history TASK`` share one group: the
group sends any first argument that is not a subcommand name to the hidden
default command, so a spec path (or an option such as ``--run-id``) needs no
subcommand word in front of it; the group's help lists that command's options.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperCommand

from pmos import exit_codes
from pmos.assess.assessment import assess as run_assessment
from pmos.assess.assessment import resolve_task_id, spec_to_assess, summary, task_history
from pmos.cli._app import JsonFlag, PmosGroup, emit_json, examples, kit, new_typer, table, warn
from pmos.schemas import enum_values
from pmos.text import neutralise

_DEFAULT = "run"


#: Why an assessment runs: the assessment schema's ``trigger`` words.
Trigger = enum.StrEnum("Trigger", {v: v for v in enum_values("assessment", "/properties/trigger")})  # type: ignore[misc]


class AssessGroup(PmosGroup):
    """``pmos assess``: the default command's options are the group's own.

    Any first argument that is not a subcommand name goes to the default command,
    and ``--help`` lists the default command's options next to the subcommands,
    so ``pmos assess --help`` documents everything ``pmos assess`` takes.
    """

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = [_DEFAULT, *args]
        return super().parse_args(ctx, args)

    def format_usage(self, ctx: Any, formatter: Any) -> None:
        formatter.write_usage(ctx.command_path, "[OPTIONS] [SPEC] | history TASK [--json]")

    def format_options(self, ctx: Any, formatter: Any) -> None:
        default = self.commands[_DEFAULT]
        with ctx.scope(cleanup=False):
            sub_ctx = default.make_context(_DEFAULT, [], parent=ctx, resilient_parsing=True)
        records: dict[str, list[tuple[str, str]]] = {"argument": [], "option": []}
        for param in default.get_params(sub_ctx):
            record = param.get_help_record(sub_ctx)
            if record and param.param_type_name in records:
                records[param.param_type_name].append(record)
        if records["argument"]:
            with formatter.section("Arguments"):
                formatter.write_dl(records["argument"])
        with formatter.section("Options"):
            formatter.write_dl(records["option"])
        self.format_commands(ctx, formatter)


# click's Context as the typer in use carries it (its own copy of click or the package),
# which a type checker cannot take as a base class.
class _DefaultContext(TyperCommand.context_class):  # type: ignore[misc, valid-type]
    """The default command's context answers to the group's name (``pmos assess``),
    so usage errors say "Try 'pmos assess --help'", never the hidden command's name."""

    @property
    def command_path(self) -> str:
        path: str = self.parent.command_path if self.parent is not None else super().command_path
        return path


class _DefaultCommand(TyperCommand):
    """Shows its usage as ``pmos assess [OPTIONS] [SPEC]``, the way users type it."""

    context_class = _DefaultContext

    def format_usage(self, ctx: Any, formatter: Any) -> None:
        pieces = self.collect_usage_pieces(ctx)
        formatter.write_usage(ctx.command_path, " ".join(pieces))


def register(app: typer.Typer) -> None:
    assess_app = new_typer(
        "Run a task's deterministic checks, metrics and LLM reviews; keep the history.\n\n"
        "pmos assess SPEC runs a spec's checks; pmos assess --run-id R runs the run "
        "contract's expectation criteria; pmos assess history TASK shows what was recorded.\n\n"
        "Exit codes: 0 passed, 1 failed, 2 invalid spec or usage (nothing run or written).",
        cls=AssessGroup,
    )
    epilog = examples(
        "pmos assess spec.yaml --cwd . --task-id T-12 --trigger fix",
        "pmos assess --run-id run-7 --json",
        "pmos assess history T-12",
    )
    assess_app.info.epilog = epilog
    assess_app.command(_DEFAULT, hidden=True, cls=_DefaultCommand, epilog=epilog)(assess)
    assess_app.command("history", epilog=examples("pmos assess history T-12 --json"))(history)
    app.add_typer(assess_app, name="assess")


def assess(
    spec: Annotated[
        Path | None,
        typer.Argument(
            metavar="SPEC",
            help="Spec file (YAML or JSON). Omit it with --run-id to use the run's contract.",
        ),
    ] = None,
    cwd: Annotated[
        Path, typer.Option("--cwd", help="Folder the commands run in and paths are checked in.")
    ] = Path("."),
    task_id: Annotated[
        str | None,
        typer.Option(
            "--task-id",
            help="Task the assessment belongs to. Default: the spec's id, else --run-id, else "
            "the spec file's name.",
        ),
    ] = None,
    run_id: Annotated[str | None, typer.Option("--run-id", help="Run being assessed.")] = None,
    trigger: Annotated[
        Trigger | None,
        typer.Option(
            "--trigger",
            help="Why this assessment runs. Default: initial for a task's first assessment, "
            "reassess after.",
        ),
    ] = None,
    lenient: Annotated[
        bool,
        typer.Option(
            "--lenient", help="Drop malformed spec entries (with warnings) and run the rest."
        ),
    ] = False,
    json_output: JsonFlag = False,
) -> None:
    """Assess a task: run its checks and metrics, record the result."""
    k = kit()
    parsed, run = spec_to_assess(k, spec, run_id, lenient=lenient)
    written = run_assessment(
        k,
        parsed,
        cwd=cwd,
        task_id=resolve_task_id(task_id, parsed, run_id),
        run_id=run_id,
        run=run,
        trigger=trigger.value if trigger else None,
    )
    record = written.record
    warn(record.get("warnings", []) + written.warnings)
    if json_output:
        emit_json(summary(record))
    else:
        _print_assessment(record)
    if not record["passed"]:
        raise typer.Exit(exit_codes.CHECK_FAILED)


def history(
    task_id: Annotated[str, typer.Argument(help="Task whose assessments to show.")],
    json_output: JsonFlag = False,
) -> None:
    """Show a task's latest assessment and the earlier ones."""
    latest, earlier = task_history(kit(), task_id)
    if json_output:
        emit_json(
            {
                "task_id": task_id,
                "latest": summary(latest),
                "history": [summary(r) for r in earlier],
            }
        )
        return
    typer.echo(f"latest assessment of task {task_id}:")
    _print_assessment(latest)
    if earlier:
        typer.echo("")
        typer.echo("earlier assessments:")
        rows = [
            (
                r["attempt"],
                r["trigger"],
                "PASSED" if r["passed"] else "FAILED",
                _failing(r),
                r["fix_attempts_left"],
                _short_tree(r),
                r["recorded_at"],
                r["record_id"],
            )
            for r in earlier
        ]
        headers = [
            "attempt",
            "trigger",
            "result",
            "failing",
            "fixes_left",
            "commit",
            "recorded_at",
            "record",
        ]
        typer.echo(table(headers, rows))


def _tree(record: dict[str, Any]) -> str:
    """What the assessment ran on: the commit, and DIRTY when the tree was not it."""
    if "dirty" not in record:
        return "not recorded (an assessment of schema version 1)"
    commit = record.get("commit") or "no commit"
    if record["dirty"] is None:
        return f"{commit}, state unknown (not a git work tree)"
    if record["dirty"]:
        count = record.get("dirty_count", len(record.get("dirty_paths", [])))
        return f"{commit} DIRTY ({count} path(s) differ; the assessment is not of the commit)"
    return f"{commit} clean"


def _short_tree(record: dict[str, Any]) -> str:
    commit = (record.get("commit") or "-")[:12]
    return commit + (" DIRTY" if record.get("dirty") else "")


def _failing(record: dict[str, Any]) -> str:
    failing = [f"check {c['index']}" for c in record["checks"] if not c["passed"]]
    failing += [f"metric {m['name']}" for m in record["metrics"] if not m["passed"]]
    return ", ".join(failing) or "-"


def _print_assessment(record: dict[str, Any]) -> None:
    result = "PASSED" if record["passed"] else "FAILED"
    head = f"{result}  task {record['task_id']}"
    if record.get("run_id"):
        head += f"  run {record['run_id']}"
    head += f"  attempt {record['attempt']} ({record['trigger']})  {record['record_id']}"
    typer.echo(_safe(head))
    typer.echo(_safe(f"tree: {_tree(record)}"))
    if record["checks"]:
        rows = [
            (
                c["index"],
                c["type"] + (f" [{c['criterion_id']}]" if "criterion_id" in c else ""),
                "pass" if c["passed"] else "FAIL",
                c["duration_s"],
                c["reason"],
            )
            for c in record["checks"]
        ]
        typer.echo(table(["index", "type", "result", "seconds", "reason"], rows))
    if record["metrics"]:
        rows = [
            (
                m["name"],
                m["value"],
                m["threshold"],
                "pass" if m["passed"] else "FAIL",
                m["reason"],
            )
            for m in record["metrics"]
        ]
        typer.echo(table(["metric", "value", "threshold", "result", "reason"], rows))
    for check in record["checks"]:
        if check["type"] == "llm_review":
            _print_review(check)
        elif not check["passed"] and check.get("output_tail"):
            tail = check["output_tail"].rstrip().split("\n")[-10:]
            typer.echo(f"check {check['index']} output (last lines):")
            typer.echo(table(["output"], [[line] for line in tail]))
    typer.echo(f"fix attempts left: {record['fix_attempts_left']}")


def _safe(text: str) -> str:
    return neutralise(text)


def _print_review(check: dict[str, Any]) -> None:
    typer.echo(
        _safe(f"check {check['index']} (llm_review, {check['aggregate']}): {check['reason']}")
    )
    rows: list[tuple[Any, ...]] = []
    for r in check["reviewers"]:
        if r["ok"]:
            scores = ", ".join(f"{n} {s:g}" for n, s in r["scores"].items())
            rows.append((r["name"], r["model"], r["attempt"], "ok", r["weighted_score"], scores))
        else:
            rows.append((r["name"], r["model"], r["attempt"], "FAILED", "", r["error"]))
    typer.echo(table(["reviewer", "model", "attempt", "result", "weighted", "scores"], rows))
    if check["dimensions"]:
        rows = [
            (
                name,
                d["score"],
                d["weight"],
                ", ".join(f"{e['reviewer']} {e['score']:g}" for e in d["kept"]),
                "; ".join(f"{e['reviewer']}: {e['reason']}" for e in d["excluded"]) or "-",
            )
            for name, d in check["dimensions"].items()
        ]
        typer.echo(table(["dimension", "score", "weight", "kept", "excluded"], rows))
