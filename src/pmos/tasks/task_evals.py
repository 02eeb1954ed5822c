"""The task-evaluation ledger: writing a scored evaluation and reading it back.

The writer never trusts a number it can compute: :func:`pmos.scoring.score_input`
derives every final score, weight, band and the overall score, and the stored
record is validated against ``task-eval.schema.json`` before it is appended.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pmos.errors import BadInput
from pmos.kit import Kit
from pmos.store import lookup
from pmos.store.append import Draft, Written, append, record_meta
from pmos.store.read import newest_first
from pmos.tasks.scoring import score_input

KIND = "task-evals"


def record_task_eval(kit: Kit, data: Any, *, target: str | Path | None = None) -> Written:
    """Score ``data`` (the ``pmos score record`` input) and append the result."""
    scored = score_input(data)

    def build() -> Draft:
        record: dict[str, Any] = {**record_meta(KIND), **scored.fields}
        notes = list(scored.warnings)
        run_id = record.get("run_id")
        if isinstance(run_id, str) and lookup.find_run(kit.store, run_id) is None:
            record["flags"] = ["unregistered-run"]
            notes.append(
                f"run {run_id!r} was never registered ('pmos run register'); "
                "the evaluation is flagged unregistered-run"
            )
        if scored.warnings:
            record["warnings"] = list(scored.warnings)
        return Draft([record], notes)

    return append(kit.store, KIND, build, target=target)


#: The keys of ``pmos score show --json``, always all present (null when the record lacks one).
SUMMARY_KEYS = (
    "record_id",
    "recorded_at",
    "task_id",
    "run_id",
    "categoryScores",
    "overallScore",
    "band",
    "flags",
    "warnings",
)


def summary(record: dict[str, Any]) -> dict[str, Any]:
    """The stable ``--json`` shape of one evaluation.

    Stored records omit optional fields (run_id, flags, warnings) and carry
    ledger internals (hashes, schema_version); a reader's keys must not come
    and go with them.
    """
    return {key: record.get(key) for key in SUMMARY_KEYS}


def latest_for_task(kit: Kit, task_id: str) -> dict[str, Any]:
    """The most recent evaluation of ``task_id``; unknown task -> :class:`BadInput`."""
    for record in newest_first(kit.store, KIND):
        if record.get("task_id") == task_id:
            return record
    raise BadInput(f"no evaluation recorded for task {task_id!r} (record one: pmos score record)")


def latest_for_run(kit: Kit, run_id: str) -> dict[str, Any] | None:
    for record in newest_first(kit.store, KIND):
        if record.get("run_id") == run_id:
            return record
    return None
