"""The labelling plan's sampling rule: which judged runs it asks the PM to label,
and the weight a label of such a run stands for.

A PM whose gate passes most runs fills the fail class slowly when labels are
spent uniformly. The plan (``calibration.plan_pass_side_rate`` in pmos.yaml,
below 1) samples the runs the gate passed at that rate and every run it
failed: a stratified Bernoulli sample by the gate's side. A label of a sampled
run stands for 1 / (its inclusion probability) runs (its Horvitz-Thompson
weight), so the weighted table estimates what labelling every run would have
shown, and the over-sampled FAIL side does not bias kappa.

Whether a run is in the sample is a *draw* nobody picks: a number in [0, 1)
from the SHA-256 of the record id of the verdict the label judges (the writer
makes that id at random when the verdict is stored; a builder names the run
but never its verdict). A pass-side verdict is in the sample when its draw is
below the rate. So every reader re-derives a label's weight from the verdict
it is paired with and the policy it reads; a weight recorded on a label is
checked against that and never trusted alone (calibration-method.md,
"A labelling plan"). The writer (``pmos accept --plan``) and the readers
(:mod:`pmos.calibration.pairs`) both apply :func:`plan_weight`; the rule lives
here only.
"""

from __future__ import annotations

import hashlib
import math

#: Domain separation for the draw: a digest of the bare record id is used elsewhere.
DRAW_DOMAIN = b"pmos-labelling-plan-v1\x00"


def draw(record_id: str) -> float:
    """The verdict's draw: uniform in [0, 1), the same for every reader."""
    digest = hashlib.sha256(DRAW_DOMAIN + record_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def inclusion_probability(gate_pass: bool, pass_side_rate: float) -> float:
    """The chance the plan asks for a label of a run the gate judged so: the rate
    for a pass-side verdict, 1 for a FAIL (the side the plan over-samples)."""
    return pass_side_rate if gate_pass else 1.0


def in_sample(record_id: str, gate_pass: bool, pass_side_rate: float) -> bool:
    """Whether the plan asks for a label of the run whose judged verdict this is."""
    return draw(record_id) < inclusion_probability(gate_pass, pass_side_rate)


def plan_weight(record_id: str, gate_pass: bool, pass_side_rate: float) -> float | None:
    """The weight a plan label of this verdict stands for (1 / inclusion
    probability), or None when the plan did not sample it."""
    if not in_sample(record_id, gate_pass, pass_side_rate):
        return None
    return 1.0 / inclusion_probability(gate_pass, pass_side_rate)


def same_weight(recorded: float, derived: float) -> bool:
    """A recorded weight matches the derived one (floats written as JSON numbers)."""
    return math.isclose(recorded, derived, rel_tol=1e-9, abs_tol=0.0)
