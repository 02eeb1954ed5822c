"""Drift against a frozen baseline (issue 26, item 4): a lasting drop stays flagged
until the gate is recalibrated. False alarms and detection delay are measured by
``benchmarks/calibration_sim.py --drift``."""

from __future__ import annotations

import numpy as np

from pmos.calibration.decision import Rule
from pmos.calibration.drift import detect
from test_metrics import metrics, seed_table


def perfect(pairs: int) -> tuple[list[bool], list[bool]]:
    """Alternating pass and fail, the gate agreeing every time."""
    side = [i % 2 == 0 for i in range(pairs)]
    return side, side


def bad(pairs: int) -> tuple[list[bool], list[bool]]:
    """Every third pair a disagreement (agreement 2/3, kappa about 1/3)."""
    pm = [i % 2 == 0 for i in range(pairs)]
    gate = [p if i % 3 else not p for i, p in enumerate(pm)]
    return gate, pm


def joined(*parts):
    return [x for part in parts for x in part[0]], [x for part in parts for x in part[1]]


def test_a_lasting_drop_stays_flagged_until_recalibration():
    rule = Rule()
    gate, pm = joined(perfect(20), bad(400))
    found = detect(gate, pm, rule)
    assert found.drift is True
    assert found.basis["baseline_pairs"] == 20 and found.basis["recalibrated"] is False
    assert 20 < found.basis["alarm_at_pair"] <= 40  # caught within 20 pairs
    # However long the drop lasts, it stays flagged (the baseline never absorbs it).
    assert detect(*joined(perfect(20), bad(2000)), rule).drift is True
    # Recalibrated: the rule holds again on the pairs after the alarm alone (the rest
    # of the drop among them, so it takes many good pairs).
    gate, pm = joined(perfect(20), bad(60), perfect(300))
    found = detect(gate, pm, rule)
    assert found.drift is False and found.basis["recalibrated"] is True
    assert found.basis["baseline_start_pair"] > 20


def test_a_stationary_gate_is_not_flagged():
    rng = np.random.default_rng(7)
    pm = rng.random(400) < 0.5
    gate = np.where(rng.random(400) < 0.03, ~pm, pm)  # 97% agreement throughout
    found = detect(gate, pm, Rule())
    assert found.drift is False and found.basis["alarm_at_pair"] is None


def test_never_calibrated_has_no_baseline():
    found = detect(*bad(100), Rule())
    assert found.drift is None and "no baseline" in found.undefined


def test_drift_through_the_cli_per_model(cli, kit):
    seed_table(kit, 10, 0, 0, 10, prefix="good")
    seed_table(kit, 0, 10, 10, 0, prefix="bad", model="gpt-6")  # another model
    r = metrics(cli)
    # Per model: gpt-5 never drifted; gpt-6 was never calibrated.
    assert r["by_model"]["gpt-5"]["drift"] is False
    assert r["by_model"]["gpt-6"]["drift"] is None
    assert r["drift"] is True  # all models pooled
