"""The statistics as pure functions of a 2x2 table, against published and hand-computed values.

Table layout (pass is the positive class): tp = gate pass & PM pass, fn = gate
fail & PM pass, fp = gate pass & PM fail, tn = gate fail & PM fail.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pmos.calibration import stats
from pmos.calibration.stats import Confusion, Undefined


def test_published_kappa_feinstein_cicchetti_table_a():
    # Feinstein AR, Cicchetti DV. "High agreement but low kappa: I. The problems of
    # two paradoxes." J Clin Epidemiol 1990;43(6):543-549, first table (reproduced in
    # Gerstman, Epidemiology Kept Simple, 3rd ed., Table 10.6A): rater A +/+ 40,
    # +/- 9, -/+ 6, -/- 45; published p_o = 0.85, p_e = 0.50, kappa = 0.70.
    c = Confusion(tp=40, fp=9, fn=6, tn=45)
    assert stats.observed_agreement(c) == pytest.approx(0.85)
    assert stats.chance_agreement(c) == pytest.approx(0.5008)
    assert round(stats.cohen_kappa(c), 2) == 0.70
    assert stats.cohen_kappa(c) == pytest.approx(0.3492 / 0.4992)


def test_published_kappa_paradox_feinstein_cicchetti_table_b():
    # Same paper, second table (Gerstman Table 10.6B): +/+ 80, +/- 10, -/+ 5, -/- 5;
    # the same p_o = 0.85 but p_e = 0.78 and kappa = 0.32: high agreement, low kappa.
    c = Confusion(tp=80, fp=10, fn=5, tn=5)
    assert stats.observed_agreement(c) == pytest.approx(0.85)
    assert stats.chance_agreement(c) == pytest.approx(0.78)
    assert round(stats.cohen_kappa(c), 2) == 0.32
    # PABAK and AC1 stay high where kappa collapses: why they are reported beside it.
    assert stats.pabak(c) == pytest.approx(0.70)
    assert stats.gwet_ac1(c) == pytest.approx((0.85 - 0.21875) / 0.78125)


def test_published_kappa_gerstman_xray_example():
    # Gerstman, Epidemiology Kept Simple, 3rd ed., Illustrative Example 10.1
    # (X-ray readings, N = 19,790): a = 1467, d = 16232, row total 2249, column
    # total 2776; published p_o = 0.8943, p_e = 0.7780, kappa = 0.524.
    c = Confusion(tp=1467, fp=2249 - 1467, fn=2776 - 1467, tn=16232)
    assert c.n == 19790
    assert round(stats.observed_agreement(c), 4) == 0.8943
    assert round(stats.chance_agreement(c), 4) == 0.7780
    assert round(stats.cohen_kappa(c), 3) == 0.524


def test_large_sample_ci_by_hand():
    # tp=tn=9, fn=fp=1: p_o .9, p_e .5, kappa .8. Fleiss-Cohen-Everitt terms:
    # A = 2 * .45 * (1 - 1 * .2)^2 = .576; B = .2^2 * (.05 + .05) = .004;
    # C = (.8 - .5 * .2)^2 = .49; SE^2 = (.576 + .004 - .49) / (20 * .25) = .018.
    c = Confusion(tp=9, fn=1, fp=1, tn=9)
    kappa = stats.cohen_kappa(c)
    assert kappa == pytest.approx(0.8)
    low, high = stats.large_sample_kappa_ci95(c, kappa)
    se = math.sqrt(0.018)
    assert low == pytest.approx(0.8 - stats.Z95 * se)
    assert high == 1.0  # 0.8 + 0.263 clipped


def test_kappa_undefined_only_when_both_sides_are_one_class():
    with pytest.raises(Undefined, match="every verdict and every PM label is pass"):
        stats.cohen_kappa(Confusion(tp=5))
    with pytest.raises(Undefined, match="every verdict and every PM label is fail"):
        stats.cohen_kappa(Confusion(tn=5))
    with pytest.raises(Undefined, match="no labelled pairs"):
        stats.cohen_kappa(Confusion())
    # One side constant: chance agreement equals observed agreement, kappa is exactly 0.
    assert stats.cohen_kappa(Confusion(tp=3, fp=2)) == 0.0
    assert stats.cohen_kappa(Confusion(fn=2, tn=3)) == 0.0  # the gate fails everything
    assert stats.cohen_kappa(Confusion(tp=2, fn=3)) == 0.0  # the PM passes everything


def test_no_zero_width_interval_at_the_edges():
    for c in (Confusion(tp=12, tn=8), Confusion(fn=5, fp=5), Confusion(tp=3, fp=2)):
        with pytest.raises(Undefined, match="standard error is 0"):
            stats.large_sample_kappa_ci95(c, stats.cohen_kappa(c))


def test_rates_and_their_undefined_cases():
    c = Confusion(tp=6, fn=2, fp=1, tn=3)
    assert stats.tpr(c) == pytest.approx(0.75)
    assert stats.tnr(c) == pytest.approx(0.75)
    with pytest.raises(Undefined, match="negative class"):
        stats.tnr(Confusion(tp=4, fn=1))
    with pytest.raises(Undefined, match="no PM pass labels"):
        stats.tpr(Confusion(fp=4, tn=1))


def test_rogan_gladen_by_hand_and_clipping():
    # (0.6 + 0.9 - 1) / (0.8 + 0.9 - 1) = 0.5 / 0.7
    assert stats.rogan_gladen(0.6, 0.8, 0.9) == pytest.approx(0.5 / 0.7)
    assert stats.rogan_gladen(0.05, 0.8, 0.9) == 0.0  # raw value negative, clipped
    assert stats.rogan_gladen(0.99, 0.8, 0.9) == 1.0  # raw value above 1, clipped
    with pytest.raises(Undefined, match="no better than chance"):
        stats.rogan_gladen(0.5, 0.5, 0.5)


def test_corrected_pass_rate_is_seeded_and_brackets_the_estimate():
    c = Confusion(tp=40, fn=10, fp=5, tn=45)  # TPR .8, TNR .9
    first = stats.corrected_pass_rate(30, 50, c)
    again = stats.corrected_pass_rate(30, 50, c)
    assert first == again  # same seed, same interval
    assert first.value == pytest.approx(0.5 / 0.7)
    assert first.apparent == pytest.approx(0.6)
    assert first.ci95[0] <= first.value <= first.ci95[1]
    assert 0.0 <= first.ci95[0] < first.ci95[1] <= 1.0
    other = stats.corrected_pass_rate(30, 50, c, seed=1)
    assert other.ci95 != first.ci95
    with pytest.raises(Undefined, match="no unlabelled runs"):
        stats.corrected_pass_rate(0, 0, c)
    with pytest.raises(Undefined, match="needs the gate's TPR and TNR; no PM fail labels"):
        stats.corrected_pass_rate(3, 5, Confusion(tp=4))


def test_confusion_rejects_bad_counts():
    with pytest.raises(ValueError, match="tp"):
        Confusion(tp=-1)
    with pytest.raises(ValueError, match="fn"):
        Confusion(fn=1.5)  # type: ignore[arg-type]


counts = st.integers(min_value=0, max_value=60)


@given(counts, counts, counts, counts)
def test_kappa_matches_the_formula_or_is_undefined(tp, fn, fp, tn):
    c = Confusion(tp=tp, fn=fn, fp=fp, tn=tn)
    if c.n == 0:
        with pytest.raises(Undefined):
            stats.cohen_kappa(c)
        return
    p_o = (tp + tn) / c.n
    p_e = ((tp + fp) * (tp + fn) + (fn + tn) * (fp + tn)) / c.n**2
    if (tp + fp) * (tp + fn) == c.n**2 or (fn + tn) * (fp + tn) == c.n**2:
        with pytest.raises(Undefined):
            stats.cohen_kappa(c)
        return
    kappa = stats.cohen_kappa(c)
    assert kappa == pytest.approx((p_o - p_e) / (1 - p_e), abs=1e-9)
    assert -1.0 - 1e-9 <= kappa <= 1.0 + 1e-9
    try:
        low, high = stats.large_sample_kappa_ci95(c, kappa)
    except Undefined:
        # Only at the edges: perfect (dis)agreement or one side all one class.
        assert p_o in (0.0, 1.0) or tp + fp in (0, c.n) or tp + fn in (0, c.n)
    else:
        assert -1.0 <= low <= kappa + 1e-9 and kappa - 1e-9 <= high <= 1.0
    assert -1.0 <= stats.pabak(c) <= 1.0
    assert -1.0 - 1e-9 <= stats.gwet_ac1(c) <= 1.0 + 1e-9
