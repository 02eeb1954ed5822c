"""The verification queue: what the review gate and the PM still owe.

*Verification debt* is every registered run whose latest verdict is missing
or SKIPPED: a skip is declared honestly, but judging still did not happen, so
the debt stays until a real verdict lands. *Acceptance debt* is every run the
gate has judged (a non-SKIPPED verdict) that the PM has not labelled yet;
those are the runs calibration cannot use.

Verification debt is what a CI job can require to be empty; the CLI exits 1
while any exists. Ledgers are streamed once each; one small tuple per run is kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pmos.kit import Kit
from pmos.store.read import records
from pmos.store.rows import row_type
from pmos.store.vocabulary import SKIPPED
from pmos.timestamps import parse_instant


@dataclass
class Queue:
    now: datetime
    verification_debt: list[dict[str, Any]]
    acceptance_debt: list[dict[str, Any]]

    def as_dict(self) -> dict[str, Any]:
        return {
            "now": _stamp(self.now),
            "verification_debt": self.verification_debt,
            "acceptance_debt": self.acceptance_debt,
        }


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def human_age(seconds: int) -> str:
    """Compact age for people: ``45s``, ``12m``, ``5h 03m``, ``3d 04h``."""
    seconds = max(0, seconds)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours:02d}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m"
    return f"{secs}s"


def compute_queue(kit: Kit, now: datetime | None = None) -> Queue:
    """Both debts, oldest first. Age runs from the run's registration; a judged
    run that was never registered is aged from its first verdict instead."""
    now = now or datetime.now(UTC)
    registered: dict[str, tuple[str, str]] = {}
    runs = row_type("runs", ("run_id", "initiative_id", "recorded_at"))
    for run_row in records(kit.store, "runs", row=runs):
        registered.setdefault(run_row.run_id, (run_row.initiative_id, run_row.recorded_at))
    # run -> [latest verdict, its skipped_reason, latest non-SKIPPED verdict or None,
    #         initiative_id, first verdict's recorded_at]
    verdicts: dict[str, list[Any]] = {}
    fields = ("run_id", "verdict", "skipped_reason", "initiative_id", "recorded_at")
    for row in records(kit.store, "evals", row=row_type("evals", fields)):
        verdict = row.verdict
        state = verdicts.get(row.run_id)
        if state is None:
            state = verdicts[row.run_id] = [None, None, None, row.initiative_id, row.recorded_at]
        state[0] = verdict
        state[1] = row.skipped_reason
        if verdict != SKIPPED:
            state[2] = verdict
    labels = row_type("acceptances", ("run_id",))
    labelled = {label.run_id for label in records(kit.store, "acceptances", row=labels)}
    return queue_from(registered, verdicts, labelled, now)


def queue_from(
    registered: dict[str, tuple[str, str]],
    verdicts: dict[str, list[Any]],
    labelled: set[str],
    now: datetime,
) -> Queue:
    """Both debts from per-run readings (``pmos queue --db`` builds them from SQL):
    ``registered`` run -> (initiative_id, recorded_at) of its first registration;
    ``verdicts`` run -> [latest verdict, its skipped_reason, latest non-SKIPPED
    verdict or None, first verdict's initiative_id, first verdict's recorded_at];
    ``labelled`` the runs with a PM label."""

    def entry(run: str, initiative: str, since: str, registered_run: bool) -> dict[str, Any]:
        age = int((now - parse_instant(since)).total_seconds())
        return {
            "run_id": run,
            "initiative_id": initiative,
            "registered": registered_run,
            "age_from": since,
            "age_seconds": age,
            "age": human_age(age),
        }

    verification: list[dict[str, Any]] = []
    for run, (initiative, registered_at) in registered.items():
        state = verdicts.get(run)
        if state is None:
            item = entry(run, initiative, registered_at, True)
            item.update(status="no-verdict", skipped_reason=None)
        elif state[0] == SKIPPED:
            item = entry(run, initiative, registered_at, True)
            item.update(status="skipped", skipped_reason=state[1])
        else:
            continue
        verification.append(item)
    acceptance: list[dict[str, Any]] = []
    for run, state in verdicts.items():
        if state[2] is None or run in labelled:
            continue
        known = registered.get(run)
        if known is not None:
            item = entry(run, known[0], known[1], True)
        else:
            item = entry(run, state[3], state[4], False)
        item["verdict"] = state[2]
        acceptance.append(item)
    order = lambda item: (parse_instant(item["age_from"]), item["run_id"])  # noqa: E731
    verification.sort(key=order)
    acceptance.sort(key=order)
    return Queue(now, verification, acceptance)
