"""The labelling plan's proposal: which runs the PM should label next.

Labels spent uniformly fill the PM's fail class slowly when the PM passes
most runs (a gate of true kappa 0.8 whose PM passes 95% of runs was called
calibrated in 11% of kits at 200 pairs, issue 26). Under the plan
(``calibration.plan_pass_side_rate`` below 1, :mod:`pmos.gate.plan`) the PM
labels every run the gate failed and the sampled share of the runs it passed;
:func:`suggest` lists the runs of the acceptance queue the plan asks for, the
FAIL side first (it is where the small class is found), oldest first within a
side. ``pmos accept RUN --plan`` then records the weight the label stands for,
which every reader re-derives.

With ``blind`` the proposals say nothing of the gate's side: the order, the
side and the weight would each tell the PM what the gate said. Blind
proposals are the plan's runs oldest first, without side or weight; ``pmos
accept --plan --blind`` derives the weight all the same.

:func:`recommended_rate` says which pass-side rate would make the kappa
estimate most precise per label at the current agreement (Neyman allocation
over the gate's two sides); a changed rate is a policy change, approved like
any other (``pmos policy approve``), and the weights of labels written under
the old rate are then refused (they count as 1).
"""

from __future__ import annotations

import math
from typing import Any

from pmos.calibration.queue import compute_queue
from pmos.calibration.stats import kappa_formula
from pmos.gate import plan as sampling
from pmos.gate.vocabulary import PASS_SIDE
from pmos.kit import Kit

#: The keys of :func:`suggest`'s answer, in order (json-keys.yaml, ``label plan``).
SUGGESTION_KEYS = ("plan_pass_side_rate", "planned", "blind", "waiting", "in_plan", "proposals")
#: The keys of each proposal.
PROPOSAL_KEYS = (
    "run_id",
    "initiative_id",
    "age",
    "gate_side",
    "inclusion_probability",
    "plan_weight",
    "accept_command",
)


def suggest(kit: Kit, *, blind: bool = False, limit: int = 10) -> dict[str, Any]:
    """The runs the plan asks the PM to label next, at most ``limit`` (module
    docstring): without a plan (rate 1), the acceptance queue oldest first."""
    rate = kit.config.plan_pass_side_rate
    owed = compute_queue(kit).acceptance_debt
    chosen: list[tuple[int, int, dict[str, Any]]] = []
    for order, entry in enumerate(owed):
        gate_pass = entry["verdict"] in PASS_SIDE
        weight = sampling.plan_weight(entry["record_id"], gate_pass, rate)
        if weight is None:
            continue
        side = "pass" if gate_pass else "fail"
        flags = " --plan" if rate < 1.0 else ""
        flags += " --blind" if blind else ""
        proposal = {
            "run_id": entry["run_id"],
            "initiative_id": entry["initiative_id"],
            "age": entry["age"],
            "gate_side": None if blind else side,
            "inclusion_probability": None
            if blind
            else sampling.inclusion_probability(gate_pass, rate),
            "plan_weight": None if blind else weight,
            "accept_command": f"pmos accept {entry['run_id']} --label pass|fail --by YOU{flags}",
        }
        # The FAIL side first under a plan (not when blind: the order would tell).
        first = 0 if (blind or rate >= 1.0 or not gate_pass) else 1
        chosen.append((first, order, proposal))
    chosen.sort(key=lambda item: item[:2])
    return {
        "plan_pass_side_rate": rate,
        "planned": rate < 1.0,
        "blind": blind,
        "waiting": len(owed),
        "in_plan": len(chosen),
        "proposals": [proposal for _, _, proposal in chosen[: max(limit, 0)]],
    }


def recommended_rate(tp: float, fn: float, fp: float, tn: float) -> float | None:
    """The pass-side rate that makes kappa's estimate most precise per label at this
    (weighted) table: Neyman allocation, labels per side proportional to
    |dk/dq_h| sqrt(q_h (1 - q_h)) for var(kappa) = sum_h (dk/dq_h)^2 q_h (1 - q_h) / n_h,
    so each side's inclusion probability (its labels over its W_h share of the runs) is
    proportional to |dk/dq_h| sqrt(q_h (1 - q_h)) / W_h; the FAIL side's is 1, the pass
    side's the ratio, at most 1. None when a side is empty or kappa is undefined.
    Shares are smoothed by half a pair."""
    pass_side, fail_side = tp + fp, fn + tn
    if pass_side <= 0 or fail_side <= 0:
        return None
    total = pass_side + fail_side
    w_p, w_f = pass_side / total, fail_side / total
    q = [(tp + 0.5) / (pass_side + 1), (fn + 0.5) / (fail_side + 1)]

    def kappa_at(qp: float, qf: float) -> float:
        return float(kappa_formula(w_p * qp, w_f * qf, w_p * (1 - qp), w_f * (1 - qf)))

    step = 1e-5
    spread = []
    for h in (0, 1):
        up, down = list(q), list(q)
        up[h], down[h] = q[h] + step, q[h] - step
        slope = (kappa_at(*up) - kappa_at(*down)) / (2 * step)
        spread.append(abs(slope) * math.sqrt(q[h] * (1 - q[h])) / (w_p, w_f)[h])
    if not all(math.isfinite(v) for v in spread) or spread[1] <= 0:
        return None
    return round(min(1.0, max(spread[0] / spread[1], 0.001)), 3)
