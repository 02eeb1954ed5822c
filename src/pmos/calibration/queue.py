"""The verification queue: what the review gate and the PM still owe.

The queue covers every run the kit knows of: registered, judged, or labelled.
*Verification debt* is every such run whose latest verdict is missing or
SKIPPED, registered or not: a skip is declared honestly, but judging still did
not happen, so the debt stays until a real verdict lands. *Acceptance debt* is
every run the gate has judged (a non-SKIPPED verdict) that the PM has not
labelled, or whose latest label judged an earlier verdict than the run's latest
judged one (the PM has not seen the newer verdict); those are the runs
calibration cannot use.

*Calibration debt* is the seeded known-bad runs (``pmos known-bad seed``) that
await a verdict. They are listed apart from verification debt: they exist to
measure the gate, not to ship, so a CI gate on ``pmos queue`` stays meaningful
after seeding; ``--include-calibration`` makes them count.

Verification debt is what a CI job can require to be empty; the CLI exits 1
while any exists. Ledgers are streamed once each; one small tuple per run is kept.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pmos.gate.known_bad import is_seeded
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
    calibration_debt: list[dict[str, Any]]

    def as_dict(self) -> dict[str, Any]:
        return {
            "now": _stamp(self.now),
            "verification_debt": self.verification_debt,
            "acceptance_debt": self.acceptance_debt,
            "calibration_debt": self.calibration_debt,
        }

    def check_fails(self, *, include_calibration: bool = False) -> bool:
        """Whether a CI gate on the queue fails: verification debt, and with
        ``include_calibration`` seeded runs awaiting a verdict too."""
        return bool(self.verification_debt or (include_calibration and self.calibration_debt))


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


@dataclass
class _Run:
    """What the queue keeps of one run, from whichever ledger named it first."""

    initiative_id: str | None
    first_seen: str
    registered_at: str | None = None
    latest_verdict: str | None = None
    skipped_reason: str | None = None
    judged_verdict: str | None = None
    judged_record_id: str | None = None
    labelled: bool = False
    #: The gate_record_id of the run's latest label (None: it named no verdict).
    label_judged: str | None = None


RUN_FIELDS = ("run_id", "initiative_id", "recorded_at")
VERDICT_FIELDS = (
    "run_id",
    "verdict",
    "skipped_reason",
    "initiative_id",
    "recorded_at",
    "record_id",
)
LABEL_FIELDS = ("run_id", "initiative_id", "recorded_at", "gate_record_id")


def compute_queue(kit: Kit, now: datetime | None = None) -> Queue:
    """All three debts, oldest first. Age runs from the run's registration; a
    run that was never registered is aged from the first record that names it."""
    store = kit.store
    return queue_from_rows(
        records(store, "runs", row=row_type("runs", RUN_FIELDS)),
        records(store, "evals", row=row_type("evals", VERDICT_FIELDS)),
        records(store, "acceptances", row=row_type("acceptances", LABEL_FIELDS)),
        now,
    )


def queue_from_rows(
    run_rows: Iterable[Any],
    verdict_rows: Iterable[Any],
    label_rows: Iterable[Any],
    now: datetime | None = None,
) -> Queue:
    """The debts from rows of :data:`RUN_FIELDS`, :data:`VERDICT_FIELDS` and
    :data:`LABEL_FIELDS`, each oldest first (by recorded time, then record id),
    wherever they were read: the kit's ledgers, or a database (``pmos queue --db``)."""
    now = now or datetime.now(UTC)
    runs: dict[str, _Run] = {}
    for run_row in run_rows:
        if run_row.run_id not in runs:
            runs[run_row.run_id] = _Run(
                run_row.initiative_id, run_row.recorded_at, registered_at=run_row.recorded_at
            )
    for row in verdict_rows:
        state = runs.get(row.run_id)
        if state is None:
            state = runs[row.run_id] = _Run(row.initiative_id, row.recorded_at)
        state.latest_verdict = row.verdict
        state.skipped_reason = row.skipped_reason
        if row.verdict != SKIPPED:
            state.judged_verdict = row.verdict
            state.judged_record_id = row.record_id
    for label in label_rows:
        state = runs.get(label.run_id)
        if state is None:
            state = runs[label.run_id] = _Run(label.initiative_id, label.recorded_at)
        state.labelled = True
        state.label_judged = label.gate_record_id

    def entry(run: str, state: _Run) -> dict[str, Any]:
        since = state.registered_at or state.first_seen
        age = int((now - parse_instant(since)).total_seconds())
        return {
            "run_id": run,
            "initiative_id": state.initiative_id,
            "registered": state.registered_at is not None,
            "age_from": since,
            "age_seconds": age,
            "age": human_age(age),
        }

    verification: list[dict[str, Any]] = []
    calibration: list[dict[str, Any]] = []
    acceptance: list[dict[str, Any]] = []
    for run, state in runs.items():
        if state.latest_verdict is None or state.latest_verdict == SKIPPED:
            item = entry(run, state)
            status = "no-verdict" if state.latest_verdict is None else "skipped"
            item.update(status=status, skipped_reason=state.skipped_reason)
            seeded = state.registered_at is not None and is_seeded(run, state.initiative_id)
            (calibration if seeded else verification).append(item)
        if state.judged_verdict is None:
            continue
        superseded = state.labelled and state.label_judged not in (None, state.judged_record_id)
        if state.labelled and not superseded:
            continue
        item = entry(run, state)
        item["verdict"] = state.judged_verdict
        item["record_id"] = state.judged_record_id
        item["label_superseded"] = superseded
        acceptance.append(item)
    order = lambda item: (parse_instant(item["age_from"]), item["run_id"])  # noqa: E731
    for debt in (verification, acceptance, calibration):
        debt.sort(key=order)
    return Queue(now, verification, acceptance, calibration)
