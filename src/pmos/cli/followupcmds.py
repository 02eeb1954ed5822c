"""Follow-up commands: suggest follow-ups for a run; list and close board tasks."""

from __future__ import annotations

import typer

from pmos.cli._app import JSON_OPTION, emit_json, kit, new_typer, table


def register(app: typer.Typer) -> None:
    followups_app = new_typer("Follow-up work found by evaluating a run.")
    followups_app.command("suggest")(suggest)
    app.add_typer(followups_app, name="followups")
    tasks_app = new_typer("Tasks created from follow-ups (state/tasks.jsonl).")
    tasks_app.command("list")(tasks_list)
    tasks_app.command("close")(tasks_close)
    app.add_typer(tasks_app, name="tasks")


def suggest(
    run_id: str = typer.Option(..., "--run-id", help="The evaluated (parent) run."),
    policy: str | None = typer.Option(
        None,
        "--policy",
        help="off|suggest (persist only) or create (create qualified tasks); also a mode name: "
        "persist_only, auto_create_qualified, create_all_non_duplicates. Default: "
        "followup_policy in pmos.yaml.",
    ),
    json_output: bool = JSON_OPTION,
) -> None:
    """Turn the latest verdict's defects and failed assessment checks into suggestions."""
    from pmos.tasks.followups import suggest as make_suggestions

    report = make_suggestions(kit(), run_id, policy=policy)
    data = report.as_dict()
    if json_output:
        emit_json(data)
        return
    rows = [
        (
            s["suggestionId"],
            s["state"],
            s["suppressedReason"] or "",
            s["createdTaskId"] or s["matchedTaskId"] or "",
            s["severity"],
            s["title"],
        )
        for s in data["suggestions"]
    ]
    typer.echo(table(["suggestion", "state", "suppressed", "task", "severity", "title"], rows))
    for note in data["notes"]:
        typer.echo(f"({note})")
    counts = data["counts"]
    typer.echo(
        f"policy {data['policy']} ({data['policyMode']}): {counts['suggested']} suggested, "
        f"{counts['suppressed']} suppressed, {counts['created']} created"
    )


def tasks_list(
    open_only: bool = typer.Option(False, "--open", help="Only tasks that are not closed."),
    json_output: bool = JSON_OPTION,
) -> None:
    """List the tasks and their current state."""
    from pmos.tasks.task_list import list_tasks

    views = [v.as_dict() for v in list_tasks(kit(), open_only=open_only)]
    if json_output:
        emit_json(views)
        return
    rows = [
        (v["task_id"], v["state"], v["priority"], v["parent_run_id"], v["title"]) for v in views
    ]
    typer.echo(table(["task", "state", "priority", "parent run", "title"], rows))


def tasks_close(
    task_id: str = typer.Argument(..., help="The task to close."),
    note: str | None = typer.Option(None, "--note", help="Why (done, dismissed, ...)."),
    by: str | None = typer.Option(None, "--by", help="Who closes it."),
    json_output: bool = JSON_OPTION,
) -> None:
    """Close a task (appends a state change; the created record is kept)."""
    from pmos.tasks.task_list import close_task

    written = close_task(kit(), task_id, note=note, by=by)
    if json_output:
        emit_json(written.record)
    else:
        typer.echo(f"closed {task_id}  [{written.record['record_id']}]")
