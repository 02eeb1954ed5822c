"""Runs are named once: the rule for a run id registered twice.

Two branches that each register ``run-z`` both pass their own CI; after they
merge, the runs ledger holds two registrations of one id. The first (by the
store's order) is the run's registration; the second is reported, with both
records and what to do, by ``pmos ledger verify`` and left out by every reader
(:mod:`pmos.gate.recheck` applies this rule). ``pmos run register`` without
``--run-id`` makes ids no other branch chooses (:func:`pmos.gate.writers.new_run_id`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pmos.errors import Violation

RULE = "run-unique"

#: The documented way out (docs/reference/writers.md, "A run id registered twice").
RESOLVE = (
    "to resolve it: on the branch that registered second, register its run again under "
    "a new id ('pmos run register' without --run-id prints a unique one), record its "
    "verdict and label again under that id, and take the duplicate registration's "
    "record file (the file this report names) out of the merge with 'git rm'"
)


def _describe(record: Mapping[str, Any]) -> str:
    fields = ("record_id", "recorded_at", "initiative_id", "builder_model")
    return ", ".join(f"{name} {record.get(name)!s}" for name in fields)


def duplicate_registration(
    first: Mapping[str, Any] | None, record: Mapping[str, Any]
) -> Violation | None:
    """The problem with ``record`` when ``first``, the run's first registration, is
    another record: both records, and :data:`RESOLVE`. None when ``record`` is the
    first (or the only) one."""
    if first is None or first.get("record_id") == record.get("record_id"):
        return None
    return Violation(
        RULE,
        "run_id",
        f"run {record.get('run_id')!r} is registered twice (two branches chose one run id): "
        f"first [{_describe(first)}], again [{_describe(record)}]; the first counts and this "
        f"one is left out, {RESOLVE}",
    )
