"""What the PM should label next: ``pmos label next``.

The next run is the labelling plan's first proposal (:func:`pmos.calibration.plan.suggest`):
without a plan, the oldest run in the acceptance queue (:mod:`pmos.calibration.queue`:
a judged run whose latest judged verdict no label judges), so labels are spent
uniformly over what the gate judged; under a plan (``calibration.plan_pass_side_rate``
below 1), the oldest run the plan sampled, the gate's FAIL side first, labelled
with ``pmos accept --plan`` so the label records the weight it stands for.

With ``blind`` the proposal leaves the gate's verdict out: the PM sees the
run, its contract and where its evidence is, labels it, and records the label
with ``pmos accept --blind``. Labels given with the verdict in view are
anchored on it (agreement looks better than it is); ``pmos metrics`` reports
agreement on blind labels beside the rest (``blind_pairs``, ``blind_kappa``).
"""

from __future__ import annotations

from typing import Any

from pmos.calibration.plan import suggest
from pmos.gate.vocabulary import is_judged
from pmos.kit import Kit
from pmos.store import lookup

#: The verdict fields a proposal shows (never with ``blind``).
VERDICT_SHOWN = ("record_id", "verdict", "score", "evaluator_model", "note", "axes", "criteria")
#: The run record's fields that say what was built (:mod:`pmos.gate.artifact`).
ARTIFACT_FIELDS = ("repo", "base", "head")


def next_to_label(kit: Kit, *, blind: bool = False) -> dict[str, Any]:
    """The proposal (keys documented under ``label next`` in json-keys.yaml); ``run_id``
    is None when no judged run awaits a label."""
    plan = suggest(kit, blind=blind, limit=1)
    proposal: dict[str, Any] = {
        "run_id": None,
        "initiative_id": None,
        "blind": blind,
        "waiting": plan["waiting"],
        "in_plan": plan["in_plan"],
        "plan_weight": None,
        "age": None,
        "contract": None,
        "artifact": None,
        "verdict": None,
        "evidence_command": None,
        "accept_command": None,
    }
    if not plan["proposals"]:
        return proposal
    first = plan["proposals"][0]
    run_id = first["run_id"]
    run = lookup.find_run(kit.store, run_id) or {}
    artifact = {k: run[k] for k in ARTIFACT_FIELDS if k in run}
    proposal.update(
        run_id=run_id,
        initiative_id=first["initiative_id"],
        age=first["age"],
        contract=run.get("contract"),
        artifact=artifact or None,
        plan_weight=first["plan_weight"],
        evidence_command=f"pmos evidence --run-id {run_id}",
        accept_command=first["accept_command"],
    )
    if not blind:
        verdict = lookup.latest_verdict(kit.store, run_id, where=is_judged) or {}
        proposal["verdict"] = {k: verdict[k] for k in VERDICT_SHOWN if k in verdict}
    return proposal
