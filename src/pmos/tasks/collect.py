"""Deterministic category scores computed from what the kit recorded about a run.

These are the ``deterministicScore`` inputs of :mod:`pmos.scoring`; an AI
evaluator supplies the ``aiScore`` beside them. Only kit records are read: the
run record and its contract, the run's assessments (the latest one's checks
and metrics, and the fix attempts), its verdicts and its PM labels. Nothing is
estimated from prose.

The formulas (all rounding half up, computed exactly):

**taskOutcomeQuality** - from the latest assessment of the run::

    items  = its checks + its metrics
    score  = round(100 * passed items / all items)

**processCompliance** - four workflow steps, 25 points each::

    contract registered  the run is registered with a contract (done_criteria)
    assessment run       at least one assessment of the run
    verdict recorded     at least one verdict that is not SKIPPED, recorded through
                         the writer (every record of the evals ledger is;
                         'pmos ledger verify' shows a hand-made one)
    PM label             at least one acceptance label for the run
    score = 25 * steps done

**agentPerformance** - from attempts and fix attempts::

    used    = the task's assessments triggered by fix, up to and including the
              run's latest assessment, whichever run they were made under (the
              budget is the task's, as pmos.assessments counts it)
    left    = fix_attempts_left of the latest assessment
    budget  = max_fix_attempts of the latest assessment (the spec's
              maxFixAttempts); used + left for a record that does not store it
    outcome = 60 if the latest assessment passed, else 0
    effort  = 40 * left / budget   (budget 0: 40 if no fix was used, else 0)
    score   = round(outcome + effort)

Counting only up to the run's latest assessment keeps a run's score fixed once
its assessments are done: a fix spent later, under another run, is that run's.

Missing inputs are never silently scored 100 or 0. A workflow step without a
record is missing from the process, so it earns none of its 25 points, and
each such step is listed. When there is no assessment (or it has no checks or
metrics) taskOutcomeQuality and agentPerformance have nothing to measure: they
are scored a neutral 50, and the result says so in ``missing`` and
``scoredAs``, and ``complete`` is false.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from pmos.assess.assessment import fix_attempts_used, task_records
from pmos.exact import round_half_up
from pmos.gate.runfacts import RunFacts, gather_known
from pmos.kit import Kit
from pmos.store.screening import Excluded
from pmos.tasks.scoring import (
    AGENT_PERFORMANCE,
    CATEGORIES,
    PROCESS_COMPLIANCE,
    TASK_OUTCOME_QUALITY,
)

NEUTRAL_SCORE = 50
STEP_POINTS = 25
OUTCOME_POINTS = 60
EFFORT_POINTS = 40

FORMULAS = {
    TASK_OUTCOME_QUALITY: "round(100 * passed / total) over the latest assessment's checks "
    "and metrics",
    PROCESS_COMPLIANCE: "25 points per workflow step done: contract registered, assessment "
    "run, verdict recorded, PM label",
    AGENT_PERFORMANCE: "round((60 if the latest assessment passed else 0) + 40 * "
    "fix_attempts_left / max_fix_attempts), fix attempts counted over the task",
}


@dataclass
class CategoryBasis:
    """One category's deterministic score and everything it was computed from."""

    category: str
    score: int
    inputs: dict[str, Any]
    missing: list[str] = field(default_factory=list)
    scored_as: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "deterministicScore": self.score,
            "formula": FORMULAS[self.category],
            "inputs": self.inputs,
            "missing": self.missing,
            "scoredAs": self.scored_as,
        }


def collect(kit: Kit, run_id: str) -> dict[str, Any]:
    """The three deterministic scores of ``run_id``, ready to pair with AI scores.

    Computed only from records that obey the writers' rules: a record made by
    hand that breaks one is left out and listed in ``excluded_records``.
    """
    # Deferred: pmos.gate.screen imports sshsig and cryptography (about 50 ms).
    from pmos.gate.screen import KitScreen

    excluded = Excluded()
    facts = gather_known(kit.store, run_id, screen=KitScreen(kit), excluded=excluded)
    bases = {
        AGENT_PERFORMANCE: agent_performance(facts, task_history(kit, facts)),
        TASK_OUTCOME_QUALITY: task_outcome_quality(facts),
        PROCESS_COMPLIANCE: process_compliance(facts),
    }
    task_id = facts.task_id
    missing = [f"{name}: {m}" for name in CATEGORIES for m in bases[name].missing]
    return {
        "run_id": run_id,
        "task_id": task_id or run_id,
        "task_id_source": "assessment" if task_id else "run_id (no assessment names a task)",
        "categories": {name: bases[name].as_dict() for name in CATEGORIES},
        "complete": not missing,
        "missing": missing,
        "excluded_records": excluded.as_list(),
        "template": {
            "task_id": task_id or run_id,
            "run_id": run_id,
            "categories": {
                name: {
                    "deterministicScore": bases[name].score,
                    "aiScore": None,
                    "rationale": "",
                    "evidence": [],
                }
                for name in CATEGORIES
            },
        },
    }


def _neutral(category: str, inputs: dict[str, Any], why: str) -> CategoryBasis:
    return CategoryBasis(
        category,
        NEUTRAL_SCORE,
        inputs,
        missing=[why],
        scored_as=f"neutral {NEUTRAL_SCORE}: {why}, so there is nothing to measure either way",
    )


def task_outcome_quality(facts: RunFacts) -> CategoryBasis:
    latest = facts.latest_assessment
    if latest is None:
        return _neutral(TASK_OUTCOME_QUALITY, {"assessment": None}, "no assessment of the run")
    checks, metrics = latest.get("checks", []), latest.get("metrics", [])
    inputs = {
        "assessment": latest["record_id"],
        "attempt": latest.get("attempt"),
        "checks_passed": sum(bool(c.get("passed")) for c in checks),
        "checks_total": len(checks),
        "metrics_passed": sum(bool(m.get("passed")) for m in metrics),
        "metrics_total": len(metrics),
    }
    total = len(checks) + len(metrics)
    if total == 0:
        return _neutral(
            TASK_OUTCOME_QUALITY, inputs, "the latest assessment has no checks or metrics"
        )
    passed = inputs["checks_passed"] + inputs["metrics_passed"]
    return CategoryBasis(TASK_OUTCOME_QUALITY, round_half_up(Fraction(100 * passed, total)), inputs)


def process_compliance(facts: RunFacts) -> CategoryBasis:
    steps: dict[str, dict[str, Any]] = {}

    def step(name: str, done: bool, detail: str) -> None:
        steps[name] = {"done": done, "detail": detail}

    run = facts.run
    if run is None:
        step("contract_registered", False, "the run is not registered")
    elif not facts.contract:
        step("contract_registered", False, "the run is registered without a contract")
    else:
        count = len(facts.contract.get("done_criteria", []))
        step("contract_registered", True, f"registered with {count} done-criteria")
    step(
        "assessment_run",
        bool(facts.assessments),
        f"{len(facts.assessments)} assessment(s)" if facts.assessments else "no assessment",
    )
    reviewed = facts.reviewed_verdicts
    if reviewed:
        step(
            "verdict_recorded",
            True,
            f"{len(reviewed)} verdict(s), latest {reviewed[-1]['verdict']}",
        )
    elif facts.verdicts:
        step("verdict_recorded", False, "only SKIPPED verdicts: the gate did not review the run")
    else:
        step("verdict_recorded", False, "no verdict")
    label = facts.latest_label
    step(
        "pm_label",
        label is not None,
        f"labelled {label['label']} by {label['by']}" if label else "no PM label",
    )
    done = sum(s["done"] for s in steps.values())
    missing = [
        f"step {name} not done ({s['detail']})" for name, s in steps.items() if not s["done"]
    ]
    scored_as = (
        f"each step without a record earns 0 of its {STEP_POINTS} points" if missing else None
    )
    return CategoryBasis(
        PROCESS_COMPLIANCE, STEP_POINTS * done, {"steps": steps}, missing, scored_as
    )


def task_history(kit: Kit, facts: RunFacts) -> list[dict[str, Any]]:
    """The task's assessments up to and including the run's latest one, oldest first.

    The fix budget belongs to the task, not the run: fixes made under an
    earlier run of the same task have been spent.
    """
    latest = facts.latest_assessment
    if latest is None:
        return []
    records = task_records(kit, latest["task_id"])
    ids = [r["record_id"] for r in records]
    return records[: ids.index(latest["record_id"]) + 1]


def agent_performance(facts: RunFacts, history: list[dict[str, Any]]) -> CategoryBasis:
    """``history``: the task's assessments up to the run's latest (:func:`task_history`)."""
    latest = facts.latest_assessment
    if latest is None:
        return _neutral(
            AGENT_PERFORMANCE,
            {"assessment": None},
            "no assessment of the run, so attempts and fix attempts are unknown",
        )
    used = fix_attempts_used(history)
    left = int(latest.get("fix_attempts_left", 0))
    stored = latest.get("max_fix_attempts")
    if isinstance(stored, int):
        budget, source = stored, "max_fix_attempts of the latest assessment"
        left = min(left, budget)
    else:
        budget = used + left
        source = "fix attempts used + left (the latest assessment stores no max_fix_attempts)"
    outcome = OUTCOME_POINTS if latest.get("passed") else 0
    if budget == 0:
        effort = Fraction(EFFORT_POINTS if used == 0 else 0)
    else:
        effort = Fraction(EFFORT_POINTS * left, budget)
    inputs = {
        "assessment": latest["record_id"],
        "task_id": latest["task_id"],
        "passed": bool(latest.get("passed")),
        "attempts": len(facts.assessments),
        "fix_attempts_used": used,
        "fix_attempts_left": left,
        "fix_budget": budget,
        "fix_budget_source": source,
        "outcome_points": outcome,
        "effort_points": round(float(effort), 4),
    }
    return CategoryBasis(AGENT_PERFORMANCE, round_half_up(outcome + effort), inputs)
