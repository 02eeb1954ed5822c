"""The tasks ledger: follow-up work filed on the board, and its state over time.

The ledger is append-only like every other: a task is born with a ``created``
record (state ``triage``) and later records of the same ``task_id`` change its
state. The latest record of a task id is its state; its created record holds
the rest. Nothing is ever rewritten, so the board's history is auditable.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pmos.errors import BadInput
from pmos.kit import Kit
from pmos.store.append import Draft, Written, append, check_schema, record_meta
from pmos.store.read import records

KIND = "tasks"
TRIAGE, CLOSED = "triage", "closed"


@dataclass
class TaskView:
    """A task as it stands now: its created record plus its latest state."""

    created: dict[str, Any]
    state: str
    updated_at: str
    note: str | None = None

    @property
    def task_id(self) -> str:
        task_id: str = self.created["task_id"]
        return task_id

    @property
    def is_open(self) -> bool:
        return self.state != CLOSED

    def as_dict(self) -> dict[str, Any]:
        c = self.created
        return {
            "task_id": c["task_id"],
            "state": self.state,
            "open": self.is_open,
            "title": c["title"],
            "priority": c["priority"],
            "severity": c["severity"],
            "dedupeKey": c["dedupeKey"],
            "parent_run_id": c["parent_run_id"],
            "suggestionId": c["provenance"]["suggestionId"],
            "created_at": c["recorded_at"],
            "updated_at": self.updated_at,
            "note": self.note,
        }


def current_tasks(kit: Kit) -> dict[str, TaskView]:
    """Every task by id, in creation order, with its latest state."""
    views: dict[str, TaskView] = {}
    for record in records(kit.store, KIND):
        if record["event"] == "created":
            views.setdefault(
                record["task_id"], TaskView(record, record["state"], record["recorded_at"])
            )
        elif record["task_id"] in views:
            view = views[record["task_id"]]
            view.state = record["state"]
            view.updated_at = record["recorded_at"]
            view.note = record.get("note")
    return views


def list_tasks(kit: Kit, *, open_only: bool = False) -> list[TaskView]:
    return [v for v in current_tasks(kit).values() if v.is_open or not open_only]


def close_task(
    kit: Kit, task_id: str, *, note: str | None = None, by: str | None = None
) -> Written:
    """Append a state change closing ``task_id``; an unknown or closed task is bad input."""

    def build() -> Draft:
        view = current_tasks(kit).get(task_id)
        if view is None:
            raise BadInput(f"no task {task_id!r} in the tasks ledger (see: pmos tasks list)")
        if not view.is_open:
            raise BadInput(f"task {task_id!r} is already closed")
        record: dict[str, Any] = {
            **record_meta(KIND),
            "task_id": task_id,
            "event": "state-change",
            "state": CLOSED,
        }
        if by is not None:
            record["by"] = by
        if note is not None:
            record["note"] = note
        return Draft([record])

    return append(kit.store, KIND, build)


def created_record(fields: dict[str, Any]) -> dict[str, Any]:
    """A validated ``created`` record (state triage) from the task's fields."""
    record = {**record_meta(KIND), "event": "created", "state": TRIAGE, **fields}
    check_schema(KIND, record)
    return record


def append_created(kit: Kit, build: Callable[[], list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Append the created records ``build`` returns, under the tasks ledger lock.

    ``build`` sees the ledger as it is under the lock, so a caller that checks
    for an existing task there cannot race another creator.
    """
    return append(kit.store, KIND, lambda: Draft(build())).records
