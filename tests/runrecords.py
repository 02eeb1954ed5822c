"""Helpers that put a run's records into a test kit through the library writers.

Assessments are written directly through ``append_validated`` with schema
validation, as ``pmos assess`` would store them, so these tests do not depend
on the assessment command.
"""

from __future__ import annotations

from typing import Any

from conftest import good_verdict
from pmos.gate import writers
from pmos.kit import Kit
from pmos.store.append import Draft, append, record_meta

CONTRACT = {
    "done_criteria": [
        {"id": "c1", "text": "the API answers", "test_method": "pytest tests/test_api.py"},
        {"id": "c2", "text": "the flag is documented", "test_method": "read README.md"},
    ]
}


def register(kit: Kit, run_id: str = "run-1", *, contract: dict | None = CONTRACT) -> None:
    writers.register_run(
        kit, run_id=run_id, initiative_id="init-1", builder_model="claude-x", contract=contract
    )


def check(index: int, passed: bool, **extra: Any) -> dict[str, Any]:
    return {
        "index": index,
        "type": extra.pop("type", "test"),
        "passed": passed,
        "reason": extra.pop("reason", "ok" if passed else "2 tests failed"),
        "duration_s": 0.5,
        **extra,
    }


def metric(name: str, passed: bool) -> dict[str, Any]:
    return {
        "name": name,
        "value": 0.9 if passed else 0.5,
        "threshold": 0.8,
        "passed": passed,
        "reason": "measured",
    }


def assess(
    kit: Kit,
    run_id: str = "run-1",
    *,
    task_id: str = "task-A",
    trigger: str = "initial",
    attempt: int = 1,
    passed: bool = True,
    checks: list[dict[str, Any]] | None = None,
    metrics: list[dict[str, Any]] | None = None,
    fix_attempts_left: int = 3,
) -> dict[str, Any]:
    def build() -> Draft:
        record = {
            **record_meta("assessments"),
            "task_id": task_id,
            "run_id": run_id,
            "trigger": trigger,
            "attempt": attempt,
            "passed": passed,
            "checks": checks if checks is not None else [check(0, True), check(1, True)],
            "metrics": metrics if metrics is not None else [],
            "fix_attempts_left": fix_attempts_left,
        }
        return Draft([record])

    return append(kit.store, "assessments", build).record


def defect(severity: str, where: str, problem: str, fix: str = "fix it properly") -> dict:
    return {"severity": severity, "where": where, "problem": problem, "fix": fix}


def verdict_with(kit: Kit, run_id: str = "run-1", defects: list[dict] | None = None) -> dict:
    """Record a consistent full verdict carrying ``defects`` (verdict derived from them)."""
    defects = defects or []
    severities = {d["severity"] for d in defects}
    blocking = bool(severities & {"critical", "must-fix"})
    findings = bool(severities & {"critical", "must-fix", "should-fix"})
    overall = "FAIL" if blocking else ("PASS-WITH-FINDINGS" if findings else "PASS")
    v = good_verdict(run_id=run_id, defects=defects, verdict=overall)
    v["axes"]["standards"] = {
        "verdict": "fail" if blocking else "pass",
        "rationale": "blocking defect" if blocking else "no blocking defect",
    }
    return writers.record_verdict(kit, v).record


def label(kit: Kit, run_id: str = "run-1", value: str = "pass") -> dict:
    return writers.record_acceptance(kit, run_id=run_id, label=value, by="pm").record


def legacy_skip(kit: Kit, run_id: str = "run-1", defects: list[dict] | None = None) -> dict:
    """A SKIPPED verdict carrying defects, appended as a ledger may hold one.

    The verdict schema now refuses defects on a skip, but ledgers written before
    that rule can hold such records; readers must still never treat them as
    findings. Written as a record file with a valid digest, bypassing the verdict rules.
    """
    from ledgerfiles import forge

    record = {
        **writers.record_meta("evals"),
        "form": "full",
        "run_id": run_id,
        "initiative_id": "init-1",
        "verdict": "SKIPPED",
        "score": None,
        "skipped_reason": "the diff was too large to read",
        "defects": defects or [],
    }
    forge(kit.root, "evals", record)
    return record
