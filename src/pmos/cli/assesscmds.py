"""Assessment commands: assess SPEC and assess history TASK.

``pmos assess SPEC`` and ``pmos assess history TASK`` share one group: the
group sends any first argument that is not a subcommand name to the hidden
default command, so a spec path (or an option such as ``--run-id``) needs no
subcommand word in front of it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from typer.core import TyperCommand

from pmos import exit_codes
from pmos.cli._app import JSON_OPTION, PmosGroup, emit_json, kit, new_typer, table, warn

_DEFAULT = "run"


class AssessGroup(PmosGroup):
    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = [_DEFAULT, *args]
        return super().parse_args(ctx, args)

    def format_usage(self, ctx: Any, formatter: Any) -> None:
        formatter.write_usage(ctx.command_path, "[SPEC] [OPTIONS] | history TASK [--json]")


class _DefaultCommand(TyperCommand):
    """Shows its usage as ``pmos assess [OPTIONS] [SPEC]``, the way users type it."""

    def format_usage(self, ctx: Any, formatter: Any) -> None:
        pieces = self.collect_usage_pieces(ctx)
        formatter.write_usage(ctx.parent.command_path, " ".join(pieces))


def register(app: typer.Typer) -> None:
    assess_app = new_typer(
        "Run a task's deterministic checks, metrics and LLM reviews; keep the history.\n\n"
        "pmos assess SPEC [--cwd DIR] [--task-id T] [--run-id R] [--trigger T] [--lenient] "
        "[--json]\n\n"
        "pmos assess --run-id R  (runs the run contract's expectation criteria)\n\n"
        "pmos assess history TASK [--json]\n\n"
        "Exit codes: 0 passed, 1 failed, 2 invalid spec or usage (nothing run or written).",
        cls=AssessGroup,
    )
    assess_app.command(_DEFAULT, hidden=True, cls=_DefaultCommand)(assess)
    assess_app.command("history")(history)
    app.add_typer(assess_app, name="assess")


def assess(
    spec: Path | None = typer.Argument(
        None,
        metavar="SPEC",
        help="Spec file (YAML or JSON). Omit it with --run-id to use the run's contract.",
    ),
    cwd: Path = typer.Option(
        Path("."), "--cwd", help="Folder the commands run in and paths are checked in."
    ),
    task_id: str | None = typer.Option(
        None,
        "--task-id",
        help="Task the assessment belongs to. Default: the spec's id, else --run-id, else the "
        "spec file's name.",
    ),
    run_id: str | None = typer.Option(None, "--run-id", help="Run being assessed."),
    trigger: str | None = typer.Option(
        None,
        "--trigger",
        help="initial|reassess|fix|retry|auto-correct|judge. Default: initial for a task's "
        "first assessment, reassess after.",
    ),
    lenient: bool = typer.Option(
        False, "--lenient", help="Drop malformed spec entries (with warnings) and run the rest."
    ),
    json_output: bool = JSON_OPTION,
) -> None:
    """Assess a task: run its checks and metrics, record the result."""
    from pmos.assess.assessment import assess as run_assessment
    from pmos.assess.assessment import resolve_task_id, spec_to_assess, summary

    k = kit()
    parsed, run = spec_to_assess(k, spec, run_id, lenient=lenient)
    written = run_assessment(
        k,
        parsed,
        cwd=cwd,
        task_id=resolve_task_id(task_id, parsed, run_id),
        run_id=run_id,
        run=run,
        trigger=trigger,
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
    task_id: str = typer.Argument(..., help="Task whose assessments to show."),
    json_output: bool = JSON_OPTION,
) -> None:
    """Show a task's latest assessment and the earlier ones."""
    from pmos.assess.assessment import summary, task_history

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
                r["recorded_at"],
                r["record_id"],
            )
            for r in earlier
        ]
        headers = ["attempt", "trigger", "result", "failing", "fixes_left", "recorded_at", "record"]
        typer.echo(table(headers, rows))


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
    from pmos.text import neutralise

    return neutralise(text)


def _print_review(check: dict[str, Any]) -> None:
    typer.echo(
        _safe(f"check {check['index']} (llm_review, {check['aggregate']}): {check['reason']}")
    )
    rows = []
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
