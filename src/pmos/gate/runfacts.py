"""Everything the kit has recorded about one run, gathered in one pass.

Scoring, the evidence bundle and follow-up suggestions all start from the same
question ("what happened to run R?"), and they must agree on the answer: which
assessment is the latest, which verdict counts, in what order events happened.
That answer is computed here once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pmos.errors import BadInput
from pmos.gate.vocabulary import is_judged
from pmos.store.layout import Store
from pmos.store.read import records
from pmos.store.screening import Excluded, Screen

#: Ledgers read for a run, in the order used to break recorded_at ties.
RUN_LEDGERS = ("runs", "assessments", "evals", "acceptances", "task-evals", "followups", "tasks")


@dataclass
class RunFacts:
    """A run's records from every ledger, each list oldest first."""

    run_id: str
    run: dict[str, Any] | None = None
    assessments: list[dict[str, Any]] = field(default_factory=list)
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    labels: list[dict[str, Any]] = field(default_factory=list)
    task_evals: list[dict[str, Any]] = field(default_factory=list)
    followups: list[dict[str, Any]] = field(default_factory=list)
    #: Records of the tasks created from this run (created and later state changes).
    tasks: list[dict[str, Any]] = field(default_factory=list)
    #: (ledger kind, record) for every record above, in recorded order.
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    @property
    def latest_assessment(self) -> dict[str, Any] | None:
        return self.assessments[-1] if self.assessments else None

    @property
    def reviewed_verdicts(self) -> list[dict[str, Any]]:
        """Verdicts where the gate judged the run (:func:`~pmos.gate.vocabulary.is_judged`)."""
        return [v for v in self.verdicts if is_judged(v)]

    @property
    def latest_judged_verdict(self) -> dict[str, Any] | None:
        """The latest verdict that is a judgement; the one findings are taken from."""
        reviewed = self.reviewed_verdicts
        return reviewed[-1] if reviewed else None

    @property
    def latest_label(self) -> dict[str, Any] | None:
        return self.labels[-1] if self.labels else None

    @property
    def task_id(self) -> str | None:
        """The evaluated task as the latest assessment names it, if any."""
        for record in reversed(self.assessments):
            task_id: str | None = record.get("task_id")
            if task_id:
                return task_id
        return None

    @property
    def contract(self) -> dict[str, Any] | None:
        return (self.run or {}).get("contract")

    def is_empty(self) -> bool:
        return not self.events


def gather(
    store: Store, run_id: str, *, screen: Screen | None = None, excluded: Excluded | None = None
) -> RunFacts:
    """Read every ledger once and keep the records of ``run_id``; with a ``screen``,
    records that break a writer rule are left out (reported to ``excluded``)."""
    facts = RunFacts(run_id)
    ordered: list[tuple[str, int, int, dict[str, Any]]] = []
    for rank, kind in enumerate(RUN_LEDGERS):
        created_tasks: set[str] = set()
        found = records(store, kind, screen=screen, excluded=excluded)
        for position, record in enumerate(found):
            if not _belongs(kind, record, run_id, created_tasks):
                continue
            ordered.append((record.get("recorded_at", ""), rank, position, record))
            _file(facts, kind, record)
    ordered.sort(key=lambda item: item[:3])
    facts.events = [(RUN_LEDGERS[rank], record) for _, rank, _, record in ordered]
    return facts


def gather_known(
    store: Store, run_id: str, *, screen: Screen | None = None, excluded: Excluded | None = None
) -> RunFacts:
    """Like :func:`gather`, but a run the kit knows nothing about is bad input."""
    facts = gather(store, run_id, screen=screen, excluded=excluded)
    if facts.is_empty():
        raise BadInput(
            f"the kit has no record of run {run_id!r} (no registration, assessment, "
            "verdict or label); check the run id"
        )
    return facts


def _belongs(kind: str, record: dict[str, Any], run_id: str, created_tasks: set[str]) -> bool:
    if kind == "tasks":
        if record.get("event") == "created" and record.get("parent_run_id") == run_id:
            created_tasks.add(record["task_id"])
            return True
        return record.get("task_id") in created_tasks
    return record.get("run_id") == run_id


def _file(facts: RunFacts, kind: str, record: dict[str, Any]) -> None:
    if kind == "runs":
        # A run id is registered once; keep the first registration if a ledger
        # predating that rule holds two.
        facts.run = facts.run or record
        return
    target = {
        "assessments": facts.assessments,
        "evals": facts.verdicts,
        "acceptances": facts.labels,
        "task-evals": facts.task_evals,
        "followups": facts.followups,
        "tasks": facts.tasks,
    }[kind]
    target.append(record)
