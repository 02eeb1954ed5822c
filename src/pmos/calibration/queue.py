"""The verification queue: what the review gate and the PM still owe.

The queue covers every run the kit knows of: registered, judged, or labelled.
*Verification debt* is every such run whose latest verdict is missing or
SKIPPED, registered or not: a skip is declared honestly, but judging still did
not happen, so the debt stays until a real verdict lands. *Acceptance debt* is
every run the gate has judged (a non-SKIPPED verdict) that the PM has not
labelled, or whose latest label does not judge the run's latest judged verdict
by calibration's pairing rule (:func:`pmos.gate.latest.judged_choice`): it
judged an earlier verdict, or none because it was written before the run was
first judged (the PM has not seen the latest verdict). A seeded known-bad
case's answer key judges whatever verdict comes. ``pmos metrics`` counts the
same runs in ``acceptance_debt``.

*Calibration debt* is the seeded known-bad runs (``pmos known-bad seed``) that
await a verdict. They are listed apart from verification debt: they exist to
measure the gate, not to ship, so a CI gate on ``pmos queue`` stays meaningful
after seeding; ``--include-calibration`` makes them count.

Verification debt is what a CI job can require to be empty; the CLI exits 1
while any exists. Ledgers are streamed once each; one small tuple per run is kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pmos._util.uncollected import uncollected
from pmos.gate.latest import judged_choice, per_run, verdicts_per_run
from pmos.gate.screen import KitScreen
from pmos.gate.seeded import is_seeded, is_seeded_label
from pmos.gate.vocabulary import SKIPPED
from pmos.kit import Kit
from pmos.store.read import records
from pmos.store.rows import row_type
from pmos.store.screening import Excluded
from pmos.timestamps import parse_instant, seconds_rfc3339


@dataclass
class Queue:
    now: datetime
    verification_debt: list[dict[str, Any]]
    acceptance_debt: list[dict[str, Any]]
    calibration_debt: list[dict[str, Any]]
    #: Records left out because they break a writer rule (a verdict made by hand
    #: does not clear a run's verification debt).
    excluded_records: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "now": _stamp(self.now),
            "verification_debt": self.verification_debt,
            "acceptance_debt": self.acceptance_debt,
            "calibration_debt": self.calibration_debt,
            "excluded_records": self.excluded_records,
        }

    def check_fails(self, *, include_calibration: bool = False) -> bool:
        """Whether a CI gate on the queue fails (:func:`queue_fails`)."""
        return queue_fails(self.as_dict(), include_calibration=include_calibration)


def queue_fails(queue: Mapping[str, Any], *, include_calibration: bool = False) -> bool:
    """THE queue's failure rule, for a queue as ``--json`` gives it (one kit's, or
    ``pmos queue --db``'s over many): a CI gate fails on verification debt, and
    with ``include_calibration`` on seeded runs awaiting a verdict too."""
    return bool(queue["verification_debt"] or (include_calibration and queue["calibration_debt"]))


def _stamp(moment: datetime) -> str:
    return seconds_rfc3339(moment)


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


RUN_FIELDS = ("run_id", "initiative_id", "recorded_at", "record_id")
VERDICT_FIELDS = (
    "run_id",
    "verdict",
    "skipped_reason",
    "initiative_id",
    "recorded_at",
    "record_id",
)
LABEL_FIELDS = ("run_id", "initiative_id", "recorded_at", "record_id", "gate_record_id", "by")


def compute_queue(kit: Kit, now: datetime | None = None) -> Queue:
    """All three debts, oldest first. Age runs from the run's registration; a
    run that was never registered is aged from the first record that names it."""
    store = kit.store
    screen, excluded = KitScreen(kit), Excluded()

    def read(kind: str, fields: tuple[str, ...]) -> Iterator[Any]:
        row = row_type(kind, fields)
        return records(store, kind, row=row, screen=screen, excluded=excluded)

    # Nothing read or kept here holds a reference cycle: the collector waits (on the
    # 1M + 1M kit its passes over the rows kept took a fifth of the queue's time).
    with uncollected():
        queue = queue_from_rows(
            read("runs", RUN_FIELDS),
            read("evals", VERDICT_FIELDS),
            read("acceptances", LABEL_FIELDS),
            now,
        )
    queue.excluded_records = excluded.as_list()
    return queue


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
    registered = per_run(run_rows)
    # Each judged verdict's (run, record id), by its hash, as calibration's pairing
    # compares them: the pairs themselves, a million of them, held as much memory
    # again as everything else the queue keeps.
    judged_ids: set[int] = set()

    def noting(rows: Iterable[Any]) -> Iterator[Any]:
        for row in rows:
            if row.verdict != SKIPPED:
                judged_ids.add(hash((row.run_id, row.record_id)))
            yield row

    verdicts = verdicts_per_run(noting(verdict_rows))
    labels = per_run(label_rows)
    # Every run the kit knows of, in the order its first record names it.
    known = dict.fromkeys([*registered, *verdicts, *labels])

    def entry(run: str, first: Any) -> dict[str, Any]:
        registration = registered.get(run)
        since = registration.first.recorded_at if registration else first.recorded_at
        age = int((now - parse_instant(since)).total_seconds())
        return {
            "run_id": run,
            "initiative_id": first.initiative_id,
            "registered": registration is not None,
            "age_from": since,
            "age_seconds": age,
            "age": human_age(age),
        }

    verification: list[dict[str, Any]] = []
    calibration: list[dict[str, Any]] = []
    acceptance: list[dict[str, Any]] = []
    for run in known:
        registration, verdict, label = registered.get(run), verdicts.get(run), labels.get(run)
        # What the run is aged from and whose initiative it is: its registration,
        # else the first record that names it (a verdict before a label).
        first = (registration or verdict or label).first  # type: ignore[union-attr]
        latest = verdict.latest if verdict else None
        if latest is None or latest.verdict == SKIPPED:
            item = entry(run, first)
            status = "no-verdict" if latest is None else "skipped"
            item.update(status=status, skipped_reason=latest.skipped_reason if latest else None)
            seeded = registration is not None and is_seeded(run, first.initiative_id)
            (calibration if seeded else verification).append(item)
        judged = verdict.judged if verdict else None
        if judged is None:
            continue
        if label is not None:
            # The pairing rule, as calibration applies it: the label judges the
            # verdict it names, else the latest judged one recorded before it
            # (any, for a seeded case's answer key), else nothing.
            latest_label = label.latest
            named_id = latest_label.gate_record_id
            takes_latest, _ = judged_choice(
                named_id is not None and named_id == judged.record_id,
                named_id is not None and hash((run, named_id)) in judged_ids,
                judged.recorded_at <= latest_label.recorded_at,
                is_seeded_label(run, getattr(latest_label, "by", None)),
            )
            if takes_latest:
                continue
        item = entry(run, first)
        item["verdict"] = judged.verdict
        item["record_id"] = judged.record_id
        # Labelled, but not since the latest judged verdict (an older verdict, or
        # none: a label written before the run was first judged).
        item["label_superseded"] = label is not None
        acceptance.append(item)
    order = lambda item: (parse_instant(item["age_from"]), item["run_id"])  # noqa: E731
    for debt in (verification, acceptance, calibration):
        debt.sort(key=order)
    return Queue(now, verification, acceptance, calibration)
