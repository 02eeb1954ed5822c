"""Point look-ups into the ledgers that writers need before appending.

They read newest-first, so the common case (a run registered recently, the last
N verdicts) touches only the end of a large ledger.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pmos.store.layout import Store
from pmos.store.read import newest_first


def find_run(store: Store, run_id: str) -> dict[str, Any] | None:
    """The registration record of ``run_id``, or None."""
    for record in newest_first(store, "runs"):
        if record.get("run_id") == run_id:
            return record
    return None


def find_label(store: Store, run_id: str) -> dict[str, Any] | None:
    """The run's most recent PM label, or None."""
    for record in newest_first(store, "acceptances"):
        if record.get("run_id") == run_id:
            return record
    return None


def latest_verdict(
    store: Store, run_id: str, *, where: Callable[[dict[str, Any]], bool] | None = None
) -> dict[str, Any] | None:
    """The run's most recent verdict, or None; with ``where``, the most recent one
    it accepts (the store knows nothing of what a verdict says)."""
    for record in newest_first(store, "evals"):
        if record.get("run_id") == run_id and (where is None or where(record)):
            return record
    return None


def find_verdict(store: Store, record_id: str) -> dict[str, Any] | None:
    """The verdict stored as ``record_id``, or None: what a label that names the
    verdict it judges (``pmos accept --verdict``) is checked against."""
    for record in newest_first(store, "evals"):
        if record.get("record_id") == record_id:
            return record
    return None
