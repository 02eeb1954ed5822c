"""Point look-ups into the ledgers that writers need before appending.

They read newest-first, so the common case (a run registered recently, the last
N verdicts) touches only the end of a large ledger.
"""

from __future__ import annotations

from typing import Any

from pmos.kit import Kit
from pmos.ledger import iter_records_reversed
from pmos.verdict_rules import PASS_SIDE, SKIPPED


def find_run(kit: Kit, run_id: str) -> dict[str, Any] | None:
    """The registration record of ``run_id``, or None."""
    for record in iter_records_reversed(kit.ledger_path("runs"), "runs"):
        if record.get("run_id") == run_id:
            return record
    return None


def latest_verdict(kit: Kit, run_id: str) -> dict[str, Any] | None:
    """The run's most recent verdict (SKIPPED included), or None."""
    for record in iter_records_reversed(kit.ledger_path("evals"), "evals"):
        if record.get("run_id") == run_id:
            return record
    return None


def recent_pass_fraction(kit: Kit, window: int) -> float | str:
    """Share of pass-side verdicts among the last ``window`` non-SKIPPED verdicts.

    ``"unknown"`` when the gate has no verdict yet: a disclosure, not a zero.
    """
    seen = passed = 0
    for record in iter_records_reversed(kit.ledger_path("evals"), "evals"):
        if record.get("verdict") == SKIPPED:
            continue
        seen += 1
        passed += record.get("verdict") in PASS_SIDE
        if seen >= window:
            break
    return round(passed / seen, 6) if seen else "unknown"
