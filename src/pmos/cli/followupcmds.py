"""Follow-up commands: suggest follow-ups for a run, promote one to a task; list and close tasks."""

from __future__ import annotations

import enum
from typing import Annotated

import typer

from pmos.cli._app import JsonFlag, emit_json, examples, kit, new_typer, table
from pmos.tasks.followups import promote as promote_suggestion
from pmos.tasks.followups import suggest as make_suggestions
from pmos.tasks.task_list import close_task, list_tasks


class Policy(enum.StrEnum):
    """A follow-up policy: a pmos.yaml setting or one of the modes it maps to."""

    off = "off"
    suggest = "suggest"
    create = "create"
    persist_only = "persist_only"
    auto_create_qualified = "auto_create_qualified"
    create_all_non_duplicates = "create_all_non_duplicates"


def register(app: typer.Typer) -> None:
    followups_app = new_typer(
        "Follow-up work found by evaluating a run.",
        example="pmos followups suggest --run-id run-7",
    )
    followups_app.command(
        "suggest", epilog=examples("pmos followups suggest --run-id run-7 --policy suggest")
    )(suggest)
    followups_app.command(
        "promote",
        epilog=examples("pmos followups promote sg-0123456789abcdef --by ana --note 'do it now'"),
    )(promote)
    app.add_typer(followups_app, name="followups")
    tasks_app = new_typer(
        "Tasks created from follow-ups (the tasks ledger, state/tasks/).",
        example="pmos tasks list --open",
    )
    tasks_app.command("list", epilog=examples("pmos tasks list --open --json"))(tasks_list)
    tasks_app.command(
        "close", epilog=examples("pmos tasks close task-0123456789ab --note done --by ana")
    )(tasks_close)
    app.add_typer(tasks_app, name="tasks")


def suggest(
    run_id: Annotated[str, typer.Option("--run-id", help="The evaluated (parent) run.")],
    policy: Annotated[
        Policy | None,
        typer.Option(
            "--policy",
            help="off and suggest persist only; create creates qualified tasks; the mode names "
            "are accepted too. Default: followup_policy in pmos.yaml.",
        ),
    ] = None,
    json_output: JsonFlag = False,
) -> None:
    """Turn the latest verdict's defects and failed assessment checks into suggestions."""
    report = make_suggestions(kit(), run_id, policy=policy.value if policy else None)
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


def promote(
    suggestion_id: Annotated[
        str,
        typer.Argument(
            metavar="SUGGESTION_ID",
            help="A suggestion's id (sg-...), as 'pmos followups suggest' lists it.",
        ),
    ],
    by: Annotated[str | None, typer.Option("--by", help="Who promotes it.")] = None,
    note: Annotated[str | None, typer.Option("--note", help="Why it becomes a task.")] = None,
    json_output: JsonFlag = False,
) -> None:
    """Turn a reviewed suggestion into a triage task, whatever the policy decided.

    Refused (exit 2) when the suggestion is unknown, is already a task, or an open
    task already has its dedupe key.
    """
    created = promote_suggestion(kit(), suggestion_id, by=by, note=note)
    if json_output:
        emit_json(created)
    else:
        typer.echo(f"created {created['task_id']} from {suggestion_id}: {created['title']}")


def tasks_list(
    open_only: Annotated[
        bool, typer.Option("--open", help="Only tasks that are not closed.")
    ] = False,
    json_output: JsonFlag = False,
) -> None:
    """List the tasks and their current state."""
    views = [v.as_dict() for v in list_tasks(kit(), open_only=open_only)]
    if json_output:
        emit_json(views)
        return
    rows = [
        (v["task_id"], v["state"], v["priority"], v["parent_run_id"], v["title"]) for v in views
    ]
    typer.echo(table(["task", "state", "priority", "parent run", "title"], rows))


def tasks_close(
    task_id: Annotated[str, typer.Argument(help="The task to close.")],
    note: Annotated[str | None, typer.Option("--note", help="Why (done, dismissed, ...).")] = None,
    by: Annotated[str | None, typer.Option("--by", help="Who closes it.")] = None,
    json_output: JsonFlag = False,
) -> None:
    """Close a task (appends a state change; the created record is kept)."""
    written = close_task(kit(), task_id, note=note, by=by)
    if json_output:
        emit_json(written.record)
    else:
        typer.echo(f"closed {task_id}  [{written.record['record_id']}]")
