"""The statistics issue 12 added, against hand computation: Wilson bounds, the kappa
interval, the AUC interval, the score statistics, the decision rule and labels_needed.

Each expected number is worked out in the comment beside it from the formula
in calibration-method.md, never by calling the code under test.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pmos.calibration import intervals, stats
from pmos.calibration.agreement import table_report, table_reports
from pmos.calibration.decision import CalibrationRule, Evidence, Rule, decide, labels_needed
from pmos.calibration.scores import score_report
from pmos.calibration.stats import Confusion, Undefined

#: The single-look interval rule, at the median (labels_needed's p = 0.5).
INTERVAL = Rule(rule=CalibrationRule.INTERVAL, decision_probability=0.5)

Z2 = 1.959963984540054**2  # 3.841459


# ---------------------------------------------------------------- Wilson


@pytest.mark.parametrize(
    ("hits", "n", "low", "high"),
    [
        # 9/10: p .9, 1 + z^2/n = 1.3841459, centre (.9 + .1920730)/1.3841459 = .7889869,
        # half 1.959964 * sqrt(.009 + .0096037) / 1.3841459 = .1931369.
        (9, 10, 0.5958500, 0.9821238),
        # 0/10: low 0; high = 2 * (z^2/20) / 1.3841459 = .3841459/1.3841459 = .2775328.
        (0, 10, 0.0, 0.2775328),
        (10, 10, 1 - 0.2775328, 1.0),  # mirror image of 0/10
        # 90/100: 1 + z^2/n = 1.0384146, centre (.9 + .0192073)/1.0384146 = .8852026,
        # half 1.959964 * sqrt(.0009 + .0000960) / 1.0384146 = .0595683.
        (90, 100, 0.8256343, 0.9447709),
        # 5/10: centre .5, half 1.959964 * sqrt(.025 + .0009604) / 1.3841459 = .2634069.
        (5, 10, 0.2365931, 0.7634069),
        # 7/10: centre (.7 + .1920730)/1.3841459 = .6444934, half .2477153.
        (7, 10, 0.3967781, 0.8922087),
    ],
)
def test_wilson_by_hand(hits, n, low, high):
    got = intervals.wilson(hits, n)
    assert got == (pytest.approx(low, abs=2e-6), pytest.approx(high, abs=2e-6))


def test_wilson_needs_trials():
    with pytest.raises(ValueError, match="at least one trial"):
        intervals.wilson(0, 0)
    with pytest.raises(ValueError, match="between 0 and trials"):
        intervals.wilson(3, 2)


def test_tpr_and_tnr_intervals_in_a_table_report():
    r = table_report(Confusion(tp=9, fn=1, fp=10, tn=90), Rule())
    assert r["tpr_ci95"] == [pytest.approx(0.59585, abs=1e-6), pytest.approx(0.982124, abs=1e-6)]
    assert r["tnr_ci95"] == [pytest.approx(0.825634, abs=1e-6), pytest.approx(0.944771, abs=1e-6)]
    # No PM fail label: TNR and its interval are undefined, each with a reason.
    r = table_report(Confusion(tp=4, fn=1), Rule())
    assert r["tnr"] is None and r["tnr_ci95"] is None
    assert "negative class" in r["undefined"]["tnr"]
    assert r["undefined"]["tnr_ci95"] == "TNR is undefined"


# ---------------------------------------------------------------- kappa


def test_kappa_closed_form_matches_the_definition_by_hand():
    # 40/6/9/45: p_o .85, p_e (49*46 + 51*54)/1e4 = .5008, kappa .3492/.4992;
    # the identity: 2 (40*45 - 6*9) / (49*54 + 46*51) = 3492/4992.
    assert stats.cohen_kappa(Confusion(tp=40, fn=6, fp=9, tn=45)) == pytest.approx(3492 / 4992)


counts = st.integers(min_value=0, max_value=40)


@settings(max_examples=60, deadline=None)
@given(counts, counts, counts, counts)
def test_kappa_equals_scikit_learn(tp, fn, fp, tn):
    from sklearn.metrics import cohen_kappa_score

    c = Confusion(tp=tp, fn=fn, fp=fp, tn=tn)
    try:
        ours = stats.cohen_kappa(c)
    except Undefined:
        return
    gate = [1] * tp + [0] * fn + [1] * fp + [0] * tn
    pm = [1] * (tp + fn) + [0] * (fp + tn)
    assert ours == pytest.approx(cohen_kappa_score(gate, pm, labels=[0, 1]), abs=1e-12)


def test_kappa_interval_exists_at_perfect_agreement_and_holds_the_estimate():
    low, high = intervals.kappa_interval(10, 0, 0, 10)
    assert 0.6 < low < 0.8 and high == 1.0  # 20 perfect pairs: good, not proof of 1
    bigger_low, _ = intervals.kappa_interval(40, 0, 0, 40)
    assert bigger_low > low  # more pairs, a tighter interval
    low, high = intervals.kappa_interval(0, 5, 5, 0)
    assert low == -1.0 and high < 0


def test_kappa_interval_depends_on_the_table_only():
    alone = intervals.kappa_interval(12, 1, 2, 9)
    batch = intervals.kappa_intervals([(30, 3, 3, 30), (12, 1, 2, 9), (5, 5, 5, 5), (12, 1, 2, 9)])
    assert batch[1] == batch[3] == alone
    assert intervals.kappa_interval(12, 1, 2, 9) == alone  # and from one run to the next
    # Large cells go through Wilson-Hilferty: still an interval around the estimate.
    low, high = intervals.kappa_interval(900, 50, 50, 500)
    kappa = stats.cohen_kappa(Confusion(900, 50, 50, 500))
    assert low < kappa < high and high - low < 0.06


def test_kappa_interval_refuses_an_empty_table():
    with pytest.raises(ValueError, match="at least one pair"):
        intervals.kappa_intervals([(0, 0, 0, 0)])


def test_large_sample_interval_kept_for_comparison_by_hand():
    # tp=tn=9, fn=fp=1: A = .576, B = .004, C = .49, SE^2 = .09 / 5 = .018.
    c = Confusion(tp=9, fn=1, fp=1, tn=9)
    low, high = stats.large_sample_kappa_ci95(c, 0.8)
    assert low == pytest.approx(0.8 - stats.Z95 * math.sqrt(0.018)) and high == 1.0
    with pytest.raises(Undefined, match="standard error is 0"):
        stats.large_sample_kappa_ci95(Confusion(tp=12, tn=8), 1.0)


# ---------------------------------------------------------------- AUC and the score


def test_auc_interval_ends_solve_newcombes_equation():
    auc, m, n = 0.8, 10, 12
    low, high = intervals.auc_interval(auc, m, n)
    assert low < auc < high
    star = (m + n) / 2 - 1  # 10

    def variance(t):
        return t * (1 - t) * (1 + star * ((1 - t) / (2 - t) + t / (1 + t))) / (m * n)

    for end in (low, high):
        assert (auc - end) ** 2 == pytest.approx(Z2 * variance(end), rel=1e-6)


def test_auc_interval_has_a_lower_end_at_a_perfect_score():
    low, high = intervals.auc_interval(1.0, 10, 10)
    assert high == 1.0 and 0.7 < low < 0.9


SCORES_PASS = [0.9, 0.8, 0.75, 0.6]
SCORES_FAIL = [0.65, 0.5, 0.3]


def test_score_statistics_by_hand():
    pm = [1] * 4 + [0] * 3
    undefined: dict[str, str] = {}
    r = score_report(pm, SCORES_PASS + SCORES_FAIL, 0.7, undefined)
    assert r["score_pairs"] == 7
    # AUC: of the 12 (pass, fail) pairs only 0.6 < 0.65 is out of order: 11/12.
    assert r["score_auc"] == pytest.approx(11 / 12, abs=1e-6)
    low, high = r["score_auc_ci95"]
    assert low < 11 / 12 < high
    # Brier: (.1^2 + .2^2 + .25^2 + .4^2 + .65^2 + .5^2 + .3^2) / 7 = 1.035 / 7.
    assert r["brier"] == pytest.approx(1.035 / 7, abs=1e-6)
    # Youden's J at >= .75: TPR 3/4, FPR 0 -> .75; at >= .6: 1 - 1/3 = .667; at >= .65:
    # .75 - .333; so .75. A gate passing scores >= .75: tp 3, fn 1, fp 0, tn 3,
    # kappa 2 (3*3 - 1*0) / ((3 + 0)(0 + 3) + (3 + 1)(1 + 3)) = 18/25.
    assert r["youden_threshold"] == 0.75
    assert r["kappa_at_youden_threshold"] == pytest.approx(0.72)
    assert r["rubric_threshold"] == 0.7
    assert undefined == {}


def test_score_statistics_undefined_cases():
    undefined: dict[str, str] = {}
    r = score_report([], [], 0.7, undefined)
    assert r["score_pairs"] == 0 and r["brier"] is None and r["score_auc"] is None
    assert undefined["score_auc"] == "no labelled full-form verdict with a score in scope"
    undefined = {}
    r = score_report([1, 1], [0.9, 0.8], 0.7, undefined)  # one class: Brier only
    assert r["brier"] == pytest.approx((0.01 + 0.04) / 2)
    assert r["score_auc"] is None and r["youden_threshold"] is None
    assert "no PM fail label among the 2 scored" in undefined["score_auc"]
    undefined = {}
    r = score_report([1, 0], [0.4, 0.9], None, undefined, "the default rubric cannot be read")
    assert r["score_auc"] == 0.0 and r["youden_threshold"] is None  # reversed score
    assert "no better than chance" in undefined["youden_threshold"]
    assert undefined["rubric_threshold"] == "the default rubric cannot be read"


# ---------------------------------------------------------------- the decision rule


def evidence(c, kappa, low, tnr=None, tnr_low=None):
    return Evidence(c, kappa, (low, 1.0), tnr, None if tnr_low is None else (tnr_low, 1.0))


def test_each_condition_of_the_interval_rule_has_a_passing_and_a_failing_case():
    rule = INTERVAL
    good = Confusion(tp=30, fn=2, fp=1, tn=20)
    ok, reason = decide(rule, evidence(good, 0.88, 0.7, 0.95, 0.77))
    assert ok and reason.startswith("the lower end of kappa's 95% interval, 0.700, reaches")
    # The lower end below the threshold, the point above it.
    ok, reason = decide(rule, evidence(good, 0.88, 0.59, 0.95, 0.77))
    assert not ok and "the lower end of kappa's 95% interval, 0.590, is below" in reason
    # Too few of one class.
    few = Confusion(tp=40, fn=2, fp=1, tn=8)
    ok, reason = decide(rule, evidence(few, 0.85, 0.65, 0.89, 0.56))
    assert not ok and "only 9 PM fail label(s) among the pairs, at least 10" in reason
    # TNR's lower end below min_tnr; switched off with min_tnr 0.
    ok, reason = decide(rule, evidence(good, 0.88, 0.7, 0.95, 0.45))
    assert not ok and "TNR's 95% interval, 0.450, is below min_tnr 0.50" in reason
    assert decide(Rule(min_tnr=0.0), evidence(good, 0.88, 0.7, 0.95, 0.45))[0]
    # Too few pairs in all.
    ok, reason = decide(Rule(min_pairs=60), evidence(good, 0.88, 0.7, 0.95, 0.77))
    assert not ok and "only 53 pair(s), at least 60 are needed" in reason
    assert decide(rule, Evidence(Confusion(), None, None, None, None)) == (
        False,
        "no labelled pairs yet.",
    )


def test_the_point_rule_is_the_earlier_rule():
    rule = Rule(rule=CalibrationRule.POINT)
    c = Confusion(tp=9, fn=1, fp=1, tn=9)
    ok, reason = decide(rule, evidence(c, 0.8, 0.39))
    assert ok and reason.startswith("kappa 0.800 >= 0.60 over 20 pairs")
    ok, reason = decide(rule, evidence(Confusion(tp=4, fn=1, fp=1, tn=4), 0.6, 0.0))
    assert not ok and reason == "only 10 pair(s), at least 20 are needed."


def test_the_issues_examples_are_not_calibrated_by_default():
    # 8/2/2/8: kappa .6, interval about [.25, .95]; 90/0/5/5: TNR .5.
    for c in (Confusion(tp=8, fn=2, fp=2, tn=8), Confusion(tp=90, fn=0, fp=5, tn=5)):
        assert table_report(c, Rule())["calibrated"] is False
        assert table_report(c, Rule(rule=CalibrationRule.POINT))["calibrated"] is True


# ---------------------------------------------------------------- labels needed


def test_labels_needed_is_the_posterior_predictive_count():
    """n 90, kappa .8, lower end .5 (interval rule, median): the normal-theory projection
    said ceil(90 ((.8 - .5) / (.8 - .6))^2) - 90 = 113. The posterior-predictive one is
    the fewest m at which the rule holds on half of the simulated futures: on the
    projection's own draws the share is >= p at m and < p at m - 1, and it is the same
    number on every call (the draws are seeded by the counts)."""
    c = Confusion(tp=40, fn=5, fp=5, tn=40)
    e = evidence(c, 0.8, 0.5, 0.9, 0.8)
    needed = labels_needed(INTERVAL, e)
    assert 0 < needed < 200 and labels_needed(INTERVAL, e) == needed
    # More certainty asked for, more labels.
    assert labels_needed(Rule(rule=INTERVAL.rule, decision_probability=0.8), e) > needed


def test_a_short_class_needs_its_labels_in_every_likely_future():
    # 100/0/0/5 at perfect agreement, lower end .8 >= .6: the fail class needs 10. At the
    # current share (5 of 105) that is about 105 more labels for half of the futures
    # (fewer: the posterior puts the fail share a little above 5/105), more for 80%.
    c = Confusion(tp=100, fn=0, fp=0, tn=5)
    e = evidence(c, 1.0, 0.8, 1.0, 0.5655)
    median = labels_needed(INTERVAL, e)
    assert 70 <= median <= 130
    assert labels_needed(Rule(rule=INTERVAL.rule, decision_probability=0.8), e) > median + 20


def test_labels_needed_is_zero_once_calibrated_and_null_with_a_reason_otherwise():
    c = Confusion(tp=30, fn=2, fp=1, tn=20)
    assert labels_needed(INTERVAL, evidence(c, 0.88, 0.7, 0.95, 0.77)) == 0
    cases = [
        (Evidence(Confusion(), None, None, None, None), "no labelled pairs"),
        (Evidence(Confusion(tp=6), None, None, None, None), "kappa is undefined"),
        (evidence(Confusion(8, 2, 2, 8), 0.6, 0.25), "cannot at the current agreement"),
        (evidence(Confusion(tp=15, fp=5), 0.0, -0.3), "cannot at the current agreement"),
        (evidence(Confusion(tp=5, fn=1), 0.7, 0.2), "no PM fail label among the pairs"),
        (evidence(Confusion(90, 0, 5, 5), 0.64, 0.32, 0.5, 0.24), "TNR 0.500 is not above"),
    ]
    for e, why in cases:
        with pytest.raises(Undefined, match=why):
            labels_needed(INTERVAL, e)
    # 40/0/2/4: kappa .78, but over six PM fail labels a TNR above .5 and a kappa
    # above .6 are not 80% likely, whatever more labels would show.
    r = table_report(Confusion(40, 0, 2, 4), Rule())
    assert r["labels_needed"] is None
    assert r["undefined"]["labels_needed"].startswith(
        "cannot with probability 0.80 at the current evidence: even 1,048,576 more labels "
        "make the rule hold in only "
    )
    assert "and TNR above min_tnr 0.50 is not that likely" in r["undefined"]["labels_needed"]


@pytest.mark.parametrize("cells", [(12, 1, 2, 9), (24, 3, 2, 11), (8, 1, 1, 8), (30, 5, 4, 25)])
def test_the_projection_lands_near_the_threshold(cells):
    """The median projection against the exact posterior interval at the projected
    size, in the current proportions: it lands at or a little above the threshold."""
    r = table_report(
        Confusion(*cells),
        Rule(min_tnr=0.0, min_per_class=1, rule=INTERVAL.rule, decision_probability=0.5),
    )
    needed = r["labels_needed"]
    n = sum(cells)
    assert needed > 0
    size = n + needed
    scaled = [round(v * size / n) for v in cells]
    low, _ = intervals.kappa_interval(*scaled)
    assert 0.6 - 0.02 <= low <= 0.6 + 0.06


@pytest.mark.parametrize(
    "rule",
    [
        Rule(),
        Rule(rule=CalibrationRule.INTERVAL),
        Rule(rule=CalibrationRule.POINT),
        Rule(min_tnr=0.0, min_per_class=3, min_pairs=30),
    ],
    ids=["sequential", "interval", "point", "no-tnr"],
)
def test_the_projections_rule_is_decide_on_arrays(rule):
    """The projection applies :func:`decide`'s conditions to thousands of tables at once
    (decision.holds); given each table's own interval (its ratio (kappa - low) / se at
    its own size) it says what decide says, on tables of every kind."""
    import numpy as np

    from pmos.calibration.decision import holds
    from pmos.calibration.sequential import kappa_se

    rng = np.random.default_rng(11)
    sizes = rng.integers(1, 400, 1500)
    shares = rng.dirichlet([6, 1, 1, 3], 1500)
    tables = np.array([rng.multinomial(n, p) for n, p in zip(sizes, shares, strict=True)])
    reports = table_reports([Confusion(*map(int, t)) for t in tables], rule, project=False)
    spread = np.array(
        [
            np.nan if r["kappa"] is None else (r["kappa"] - r["kappa_ci95"][0]) / kappa_se(*t)
            for r, t in zip(reports, tables, strict=True)
        ]
    )
    found = holds(rule, tables, spread, tables.sum(axis=1))
    expected = np.array([r["calibrated"] for r in reports])
    assert expected.sum() > 100 and (~expected).sum() > 100
    assert (found == expected).all(), tables[found != expected]


def test_degenerate_tables_give_reasons_not_numbers():
    empty, one_class, perfect = table_reports(
        [Confusion(), Confusion(tp=7), Confusion(tp=10, tn=10)], Rule()
    )
    assert empty["kappa"] is None and empty["kappa_ci95"] is None
    assert (
        empty["labels_needed"] is None and empty["calibration_reason"] == "no labelled pairs yet."
    )
    assert set(empty["undefined"]) >= {"kappa", "kappa_ci95", "tpr", "tnr", "labels_needed"}
    assert one_class["kappa"] is None and "chance agreement is 1" in one_class["undefined"]["kappa"]
    assert one_class["kappa_point_meets_threshold"] is None
    assert perfect["kappa"] == 1.0 and perfect["kappa_ci95"][1] == 1.0
    assert perfect["calibrated"] is True and perfect["labels_needed"] == 0


def test_corrected_pass_rate_interval_no_longer_collapses():
    # TPR and TNR both 1 and one unlabelled pass: the bootstrap gave [1, 1].
    rate = stats.corrected_pass_rate(1, 1, Confusion(tp=10, tn=10))
    assert rate.value == 1.0
    assert rate.ci95[0] < 0.9 and rate.ci95[1] == pytest.approx(1.0, abs=1e-6)
