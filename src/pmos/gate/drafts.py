"""Verdict skeletons: what the kit already knows about a run, with judgment left blank.

An evaluator should spend its judgment on what needs judgment. The run's ids
and builder model come from its registration, the dimensions and weights from
the rubric, and each done-criterion that the run's governing assessment (the latest clean
one of its head: :func:`pmos.gate.rules.governing_assessment`) checked gets its
result and an evidence pointer at that assessment record (``verified: true``:
the check ran). Everything else (the verdict, scores, notes, axes, defects, and
``verified`` where no check ran) is left empty, so the draft is refused
by ``pmos eval record`` until a judge fills it in: a skeleton cannot be
recorded as a verdict by accident.
"""

from __future__ import annotations

from typing import Any

from pmos.errors import BadInput
from pmos.gate.clock import checking_time
from pmos.gate.rubric import load_rubric
from pmos.gate.rules import governing_assessment
from pmos.gate.runfacts import gather
from pmos.gate.writers import evaluator_model_from_env
from pmos.kit import Kit


def criterion_evidence(record: dict[str, Any], check: dict[str, Any]) -> str:
    """A pointer a reader, and the writer, can follow: the assessment record and the
    check in it (an evidence pointer of :mod:`pmos.gate.evidence_pointers`)."""
    return (
        f"check:{record['record_id']}#{check['index']} ({check['type']}): "
        f"{'passed' if check['passed'] else 'failed'}, {check['reason']}"
    )


def draft_verdict(kit: Kit, run_id: str) -> tuple[dict[str, Any], list[str]]:
    """The skeleton for ``run_id`` and notes for the evaluator."""
    facts = gather(kit.store, run_id)
    run = facts.run
    if run is None:
        raise BadInput(f"run {run_id!r} is not registered; register it with 'pmos run register'")
    rubric = load_rubric(kit.root, kit.config.default_rubric)
    # The assessment the verdict writer will hold the verdict to (the latest clean
    # one of the run's head: pmos.gate.rules.governing_assessment).
    assessment = governing_assessment(run, run_id, facts.assessments, now=checking_time())
    notes: list[str] = []
    if assessment is None:
        notes.append(f"run {run_id!r} has no assessment; every criterion is left to the judge")
    else:
        notes.append(
            f"criteria results come from assessment {assessment['record_id']} "
            f"(attempt {assessment['attempt']}, {assessment['recorded_at']})"
        )
    checks = {
        c["criterion_id"]: c for c in (assessment or {}).get("checks", []) if "criterion_id" in c
    }
    criteria = []
    for criterion in (run.get("contract") or {}).get("done_criteria", []):
        check = checks.get(criterion["id"])
        if check is None or assessment is None:
            criteria.append({"id": criterion["id"], "result": "", "evidence": "", "verified": None})
            continue
        criteria.append(
            {
                "id": criterion["id"],
                "result": "pass" if check["passed"] else "fail",
                "evidence": criterion_evidence(assessment, check),
                # The assessment ran the check: its result is verified either way.
                "verified": True,
            }
        )
    draft: dict[str, Any] = {
        "run_id": run["run_id"],
        "initiative_id": run["initiative_id"],
        "builder_model": run["builder_model"],
        "rubric_path": rubric.path,
        "evaluator_model": evaluator_model_from_env() or "",
        "verdict": "",
        "score": None,
        "note": "",
        "axes": {
            "spec": {"verdict": "", "rationale": ""},
            "standards": {"verdict": "", "rationale": ""},
        },
        "criteria": criteria,
        "dimensions": {
            d.name: {
                "score": None,
                "weight": d.weight,
                "note": "",
                "evidence": "",
                "verified": None,
                "axis": d.axis,
            }
            for d in rubric.dimensions
        },
        "defects": [],
        "exemplars": [],
    }
    if not criteria:
        notes.append(f"run {run_id!r} has no contract; add the criteria you graded")
    return draft, notes
