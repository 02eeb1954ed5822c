"""The default rule is safe under repeated looks (issue 26, item 2).

The error rate under continuous monitoring and the power are measured by
``benchmarks/calibration_sim.py`` (its quick run is in the suite); here each
part of the rule has a passing and a failing case, through the CLI.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from pmos.calibration import sequential
from pmos.calibration.agreement import table_report
from pmos.calibration.decision import CalibrationRule, Evidence, Rule, decide, labels_needed
from pmos.calibration.stats import Confusion
from test_metrics import seed_table


def metrics(cli):
    result = cli("metrics", "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_alphas_of_every_look_add_up_to_at_most_five_percent():
    k = np.arange(1, 2_000_001, dtype=float)
    spent = sequential.look_alpha(k + 19, 20).sum()
    # Looks beyond: sum over j > K + 1 of 1/(j ln^2 j) <= 1/ln(K + 1), times ALPHA/S.
    tail = sequential.ALPHA / sequential.SPENDING_SUM / math.log(k[-1] + 1)
    assert spent + tail <= sequential.ALPHA
    assert sequential.look_alpha(20, 20) == pytest.approx(0.05 / (2.11 * 2 * math.log(2) ** 2))
    assert sequential.first_look(20, 10) == 20 and sequential.first_look(5, 10) == 20


def test_the_bound_is_below_the_estimate_and_tightens_with_pairs_in_proportion():
    small = sequential.lower_bound(0.8, 45, 5, 5, 45, 20)
    large = sequential.lower_bound(0.8, 450, 50, 50, 450, 20)
    assert small < large < 0.8
    # Perfect agreement still has a standard error (half a pair in each cell).
    assert sequential.kappa_se(10, 0, 0, 10) > 0


def test_the_sequential_rule_passes_and_fails_on_its_bound():
    rule = Rule()
    assert rule.rule is CalibrationRule.SEQUENTIAL
    good = Confusion(tp=30, fn=2, fp=1, tn=20)
    base = (good, 0.88, (0.7, 1.0), 0.95, (0.77, 1.0), None)
    ok, reason = decide(rule, Evidence(*base, 0.65, 0.01))
    assert ok and "bound for repeated looks, 0.650" in reason
    ok, reason = decide(rule, Evidence(*base, 0.55, 0.01))
    assert not ok and reason.startswith("kappa's bound for repeated looks, 0.550")
    # The single-look rule ignores it.
    assert decide(Rule(rule=CalibrationRule.INTERVAL), Evidence(*base, 0.55, 0.01))[0]


def test_labels_needed_brings_the_bound_to_the_threshold():
    """The projection applies the sequential rule to the futures it simulates: at the
    median (p = 0.5) the table grown in its proportions to n + labels_needed has its
    bound for repeated looks at the threshold (0.601 here), and p = 0.8 asks for more."""
    c = Confusion(tp=45, fn=5, fp=5, tn=45)
    r = table_report(c, Rule(decision_probability=0.5))  # the median projection
    assert r["calibrated"] is False and r["kappa_sequential_low"] < 0.6
    needed = r["labels_needed"]
    assert needed > 0
    grown = (c.n + needed) / c.n
    at = [v * grown for v in (c.tp, c.fn, c.fp, c.tn)]
    assert 0.59 <= sequential.lower_bound(r["kappa"], *at, 20) <= 0.63
    assert table_report(c, Rule())["labels_needed"] > needed + 100
    # The interval rule, which reads only its 95% interval, needs none.
    assert (
        labels_needed(
            Rule(rule=CalibrationRule.INTERVAL),
            Evidence(c, r["kappa"], tuple(r["kappa_ci95"]), r["tnr"], tuple(r["tnr_ci95"])),
        )
        == 0
    )


def test_the_default_rule_and_the_single_look_rule_through_the_cli(cli, kit, kit_root):
    seed_table(kit, tp=45, fn=5, fp=5, tn=45)
    r = metrics(cli)
    assert r["calibration_rule"] == "sequential" and r["calibrated"] is False
    assert "bound for repeated looks" in r["calibration_reason"]
    assert r["kappa_sequential_low"] < 0.6 < r["kappa_ci95"][0]
    config = kit_root / "pmos.yaml"
    text = config.read_text()
    assert "calibration_rule: sequential" in text  # what pmos init writes
    config.write_text(text.replace("calibration_rule: sequential", "calibration_rule: interval"))
    r = metrics(cli)
    assert r["calibration_rule"] == "interval" and r["calibrated"] is True
    config.write_text(text.replace("calibration_rule: sequential", "calibration_rule: often"))
    assert cli("metrics", "--json").exit_code == 2
