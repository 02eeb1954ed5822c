"""Score commands: record a task evaluation, show one, collect deterministic scores."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from pmos.cli._app import JsonFlag, emit_json, examples, excluded_lines, kit, new_typer, table, warn
from pmos.tasks.collect import collect as collect_scores
from pmos.tasks.task_evals import compute_task_eval, latest_for_task, record_task_eval, summary


def register(app: typer.Typer) -> None:
    score_app = new_typer(
        "Task evaluation scores: 0-100 per category, one overall score.",
        example="pmos score show T-12",
    )
    score_app.command("record", epilog=examples("pmos score record --file eval.json"))(record)
    score_app.command("show", epilog=examples("pmos score show T-12 --json"))(show)
    score_app.command("collect", epilog=examples("pmos score collect --run-id run-7 --json"))(
        collect
    )
    score_app.command("compute", epilog=examples("pmos score compute --file eval.json --json"))(
        compute
    )
    app.add_typer(score_app, name="score")


def _print_eval(record: dict[str, Any]) -> None:
    rows = [
        (
            c["category"],
            c["deterministicScore"],
            c["aiScore"],
            c["finalScore"],
            c["weight"],
            c["band"],
            c["rationale"],
        )
        for c in record["categoryScores"]
    ]
    headers = ["category", "deterministic", "ai", "final", "weight", "band", "rationale"]
    typer.echo(table(headers, rows))
    run = f", run {record['run_id']}" if record.get("run_id") else ""
    typer.echo(
        f"task {record['task_id']}{run}: overall {record['overallScore']} ({record['band']})"
        f"  [{record['record_id']}]"
    )


def record(
    file: Annotated[
        str,
        typer.Option(
            "--file",
            "-f",
            help="Evaluation JSON file, or - for stdin: 'pmos score collect --json' output (or "
            "--template) with aiScore, rationale and evidence filled in; or {run_id, task_id?, "
            "categories: {NAME: {aiScore, rationale, evidence, deterministicScore?}}}.",
        ),
    ],
    json_output: JsonFlag = False,
) -> None:
    """Record a task evaluation of a run; pmos computes the deterministic scores itself.

    The deterministic score of each category is computed from the kit's records
    of the run (as 'pmos score collect' shows); a submitted one that differs is
    refused with both values. Final scores, bands and the overall score are
    computed. Example: pmos score collect --run-id r1 --template > eval.json;
    fill in the AI scores; pmos score record --file eval.json
    """
    # Deferred: pmos.cli.writercmds imports sshsig and cryptography (about 50 ms).
    from pmos.cli.writercmds import _read_json

    written = record_task_eval(kit(), _read_json(file, "score input"))
    warn(written.warnings)
    if json_output:
        emit_json(summary(written.record))
    else:
        _print_eval(written.record)


def show(
    task_id: Annotated[str, typer.Argument(help="The evaluated task's id.")],
    json_output: JsonFlag = False,
) -> None:
    """Show a task's latest evaluation."""
    latest = latest_for_task(kit(), task_id)
    if json_output:
        emit_json(summary(latest))
    else:
        _print_eval(latest)


def collect(
    run_id: Annotated[str, typer.Option("--run-id", help="The run to score.")],
    json_output: JsonFlag = False,
    template: Annotated[
        bool,
        typer.Option(
            "--template",
            help="Print only the input 'pmos score record' takes, aiScore left null.",
        ),
    ] = False,
) -> None:
    """Compute each category's deterministic score from the kit's records of a run.

    The JSON output ends with a template for 'pmos score record': fill in aiScore,
    rationale and evidence for each category; 'score record' takes the whole
    output, or just the template (--template).
    """
    result = collect_scores(kit(), run_id)
    if template:
        emit_json(result["template"])
        return
    if json_output:
        emit_json(result)
        return
    rows = [
        (name, c["deterministicScore"], c["scoredAs"] or "computed", "; ".join(c["missing"]))
        for name, c in result["categories"].items()
    ]
    typer.echo(table(["category", "deterministic", "scored as", "missing"], rows))
    state = "complete" if result["complete"] else "INCOMPLETE: some inputs are missing (above)"
    typer.echo(f"run {result['run_id']}, task {result['task_id']}: {state}")
    for line in excluded_lines(result["excluded_records"]):
        typer.echo(line)


def compute(
    file: Annotated[
        str,
        typer.Option(
            "--file",
            "-f",
            help="Score input JSON file, or - for stdin: {task_id, run_id?, categories: "
            "{NAME: {deterministicScore, aiScore, rationale, evidence}}}.",
        ),
    ],
    json_output: JsonFlag = False,
) -> None:
    """Compute category finals, bands and the overall score; record nothing.

    A calculator for the score formula: takes explicit deterministic and AI
    scores and prints exactly what 'pmos score record --json' would, with
    record_id and recorded_at null. Example: pmos score compute --file - --json < eval.json
    """
    # Deferred: pmos.cli.writercmds imports sshsig and cryptography (about 50 ms).
    from pmos.cli.writercmds import _read_json

    result = compute_task_eval(_read_json(file, "score input"))
    warn(result.get("warnings") or [])
    if json_output:
        emit_json(result)
        return
    _print_eval({**result, "record_id": "not recorded"})
