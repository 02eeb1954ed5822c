"""Agreement statistics over a 2x2 table of gate verdicts against PM labels.

Everything here is a pure function of plain counts, so each formula can be
checked by hand against a published table. The positive class is *pass*::

                  PM pass   PM fail
    gate pass       tp        fp
    gate fail       fn        tn

A statistic whose denominator is zero raises :class:`Undefined` carrying the
reason, instead of returning NaN or a silent 0: a gate that has never faced a
failing run has no measurable TNR, and saying "0" would read as a verdict.

numpy is imported inside the functions that need it, so importing this
module stays cheap and no writer ever loads it. The intervals reported beside
these statistics live in :mod:`pmos.calibration.intervals`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

#: z for a two-sided 95% normal interval.
Z95 = 1.959963984540054
#: Draws behind the corrected pass rate's interval; the seed makes it reproducible.
BOOTSTRAP_SEED = 20260101
BOOTSTRAP_REPLICATES = 2000


class Undefined(ValueError):
    """A statistic cannot be computed from these counts; the message says why."""


@dataclass(frozen=True)
class Confusion:
    """Counts of paired (gate verdict, PM label) outcomes, pass being positive."""

    tp: int = 0
    fn: int = 0
    fp: int = 0
    tn: int = 0

    def __post_init__(self) -> None:
        for name in ("tp", "fn", "fp", "tn"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be a non-negative integer, got {value!r}")

    @property
    def n(self) -> int:
        return self.tp + self.fn + self.fp + self.tn

    @property
    def pm_pass(self) -> int:
        return self.tp + self.fn

    @property
    def pm_fail(self) -> int:
        return self.fp + self.tn

    @property
    def gate_pass(self) -> int:
        return self.tp + self.fp

    @property
    def gate_fail(self) -> int:
        return self.fn + self.tn

    def as_dict(self) -> dict[str, int]:
        return {"tp": self.tp, "fn": self.fn, "fp": self.fp, "tn": self.tn}


def _require_pairs(c: Confusion) -> None:
    if c.n == 0:
        raise Undefined("no labelled pairs")


def observed_agreement(c: Confusion) -> float:
    """p_o = (tp + tn) / n: the share of pairs where gate and PM agree."""
    _require_pairs(c)
    return (c.tp + c.tn) / c.n


def chance_agreement(c: Confusion) -> float:
    """p_e = (gate_pass * pm_pass + gate_fail * pm_fail) / n^2 (Cohen 1960).

    The agreement two raters with these marginals would reach by chance alone.
    """
    _require_pairs(c)
    return (c.gate_pass * c.pm_pass + c.gate_fail * c.pm_fail) / (c.n * c.n)


def _kappa_denominator(c: Confusion) -> float:
    p_e = chance_agreement(c)
    if c.gate_pass * c.pm_pass == c.n * c.n or c.gate_fail * c.pm_fail == c.n * c.n:
        # Integer test: p_e == 1 exactly, only when both sides are one and the same class.
        side = "pass" if c.gate_pass else "fail"
        raise Undefined(
            f"every verdict and every PM label is {side}: chance agreement is 1, so "
            "kappa's denominator 1 - p_e is zero"
        )
    return 1.0 - p_e


def cohen_kappa(c: Confusion) -> float:
    """Cohen's kappa, kappa = (p_o - p_e) / (1 - p_e) (Cohen 1960, Educ Psychol Meas 20:37-46).

    Computed by the 2x2 identity kappa = 2 (tp tn - fn fp) / ((tp + fp)(fp + tn) +
    (tp + fn)(fn + tn)), in exact integer arithmetic up to the final division:
    the same number as scikit-learn's ``cohen_kappa_score`` (the tests check it),
    at a cost that lets ``pmos stats agreement`` answer for ten thousand tables.
    Undefined when p_e = 1 (every verdict and label the same class). When only
    one side is constant, p_e = p_o and kappa is exactly 0.
    """
    _kappa_denominator(c)
    kappa: float = kappa_formula(c.tp, c.fn, c.fp, c.tn) + 0.0
    return kappa


def kappa_formula(tp: Any, fn: Any, fp: Any, tn: Any) -> Any:
    """THE kappa formula, the one place pmos states it: the 2x2 identity
    kappa = 2 (tp tn - fn fp) / ((tp + fp)(fp + tn) + (tp + fn)(fn + tn)), equal to
    (p_o - p_e) / (1 - p_e) but free of the cancellation in 1 - p_e when one class
    dominates. On integers it is exact up to the final division; on numpy arrays
    (:func:`pmos.calibration.intervals.kappa_of_cells`) it computes millions at once."""
    return 2 * (tp * tn - fn * fp) / ((tp + fp) * (fp + tn) + (tp + fn) * (fn + tn))


def large_sample_kappa_ci95(c: Confusion, kappa: float) -> tuple[float, float]:
    """The large-sample 95% interval kappa +/- 1.96 SE, clipped to [-1, 1]: the
    interval pmos reported before the posterior one, kept for comparison
    (``benchmarks/calibration_sim.py`` prints its coverage beside the new one's).

    SE is the asymptotic, non-null standard error of Fleiss, Cohen & Everitt
    (1969, Psychol Bull 72:323-327), for cell proportions p_ij (i gate, j PM),
    row marginals r_i and column marginals c_j::

        A = sum_i p_ii * (1 - (r_i + c_i) * (1 - kappa))^2
        B = (1 - kappa)^2 * sum_{i != j} p_ij * (c_i + r_j)^2
        C = (kappa - p_e * (1 - kappa))^2
        SE^2 = (A + B - C) / (n * (1 - p_e)^2)

    Where SE is 0 (the edges of the table) there is no interval: :class:`Undefined`.
    That is where it fails a gate most: at perfect agreement it has no lower end.
    """
    denominator = _kappa_denominator(c)
    n = c.n
    p = [[c.tp / n, c.fp / n], [c.fn / n, c.tn / n]]
    rows = [c.gate_pass / n, c.gate_fail / n]
    cols = [c.pm_pass / n, c.pm_fail / n]
    p_e = 1.0 - denominator
    a = sum(p[i][i] * (1 - (rows[i] + cols[i]) * (1 - kappa)) ** 2 for i in range(2))
    b = (1 - kappa) ** 2 * sum(
        p[i][j] * (cols[i] + rows[j]) ** 2 for i in range(2) for j in range(2) if i != j
    )
    cc = (kappa - p_e * (1 - kappa)) ** 2
    variance = (a + b - cc) / (n * denominator**2)
    if variance <= 1e-15:
        raise Undefined(
            "the large-sample standard error is 0 for this table (perfect agreement or "
            "disagreement, or one side all one class), so it gives no interval"
        )
    se = math.sqrt(variance)
    return max(-1.0, kappa - Z95 * se), min(1.0, kappa + Z95 * se)


def tpr(c: Confusion) -> float:
    """True-positive rate (sensitivity) = tp / (tp + fn): PM passes the gate also passed."""
    _require_pairs(c)
    if c.pm_pass == 0:
        raise Undefined("no PM pass labels among the pairs: TPR has no denominator")
    return c.tp / c.pm_pass


def tnr(c: Confusion) -> float:
    """True-negative rate (specificity) = tn / (tn + fp): PM fails the gate also failed."""
    _require_pairs(c)
    if c.pm_fail == 0:
        raise Undefined(
            "no PM fail labels among the pairs: the gate has not faced a negative class, "
            "so TNR has no denominator"
        )
    return c.tn / c.pm_fail


def pabak(c: Confusion) -> float:
    """Prevalence- and bias-adjusted kappa, PABAK = 2 p_o - 1 (Byrt, Bishop & Carlin 1993,
    J Clin Epidemiol 46:423-429).

    Kappa with chance agreement fixed at 1/2, so a skewed pass rate cannot drag it down.
    """
    return 2.0 * observed_agreement(c) - 1.0


def gwet_ac1(c: Confusion) -> float:
    """Gwet's AC1 = (p_o - p_e) / (1 - p_e) with p_e = 2 pi (1 - pi) for two categories,
    pi = (gate_pass + pm_pass) / (2 n) (Gwet 2008, Br J Math Stat Psychol 61:29-48).

    Its chance term peaks at 1/2, so unlike kappa it stays defined and stable
    when almost every run passes (the prevalence paradox).
    """
    p_o = observed_agreement(c)
    pi = (c.gate_pass + c.pm_pass) / (2 * c.n)
    p_e = 2.0 * pi * (1.0 - pi)
    return (p_o - p_e) / (1.0 - p_e)


def rogan_gladen(apparent: float, sensitivity: float, specificity: float) -> float:
    """Rogan-Gladen estimate of the true pass rate, clipped to [0, 1]:

        (apparent + specificity - 1) / (sensitivity + specificity - 1)

    (Rogan & Gladen 1978, Am J Epidemiol 107:71-76.) ``apparent`` is the gate's
    pass rate on unlabelled runs, sensitivity its TPR and specificity its TNR.
    A gate no better than a coin (TPR + TNR <= 1) carries no information to
    correct with, so the estimate is undefined.
    """
    youden = sensitivity + specificity - 1.0
    if youden <= 0:
        raise Undefined(
            f"TPR + TNR = {sensitivity + specificity:.4g} <= 1: the gate separates pass "
            "from fail no better than chance, so its pass rate cannot be corrected"
        )
    return min(1.0, max(0.0, (apparent + specificity - 1.0) / youden))


@dataclass(frozen=True)
class CorrectedRate:
    value: float
    ci95: tuple[float, float]
    apparent: float
    replicates_used: int


def corrected_pass_rate(
    unlabelled_pass: int,
    unlabelled: int,
    c: Confusion,
    *,
    seed: int = BOOTSTRAP_SEED,
    replicates: int = BOOTSTRAP_REPLICATES,
) -> CorrectedRate:
    """Rogan-Gladen corrected pass rate of unlabelled runs, with a seeded 95% interval.

    The three inputs are independent binomial proportions: the gate's passes
    among the ``unlabelled`` runs, its passes among the PM-pass pairs (TPR) and
    its fails among the PM-fail pairs (TNR). Each replicate draws all three
    from their Jeffreys posteriors, Beta(x + 1/2, n - x + 1/2), applies the
    clipped estimator, and the interval is the 2.5th and 97.5th percentiles.
    A percentile bootstrap redraws a rate of 0 or 1 as exactly 0 or 1, which
    collapsed the interval to a point (``[1, 1]`` from one unlabelled run);
    the posterior draws do not. Replicates whose drawn TPR + TNR <= 1 have no
    estimate and are left out; ``replicates_used`` says how many remained.
    """
    if unlabelled <= 0:
        raise Undefined("no unlabelled runs with a verdict: nothing to correct")
    if not 0 <= unlabelled_pass <= unlabelled:
        raise ValueError("unlabelled_pass must lie between 0 and unlabelled")
    apparent = unlabelled_pass / unlabelled
    try:
        sensitivity, specificity = tpr(c), tnr(c)
    except Undefined as exc:
        raise Undefined(f"the correction needs the gate's TPR and TNR; {exc}") from None
    value = rogan_gladen(apparent, sensitivity, specificity)

    # Deferred: numpy (about 0.2 s), for the statistics alone.
    import numpy as np

    rng = np.random.default_rng(seed)

    def posterior(hits: int, total: int) -> np.ndarray:
        return rng.beta(hits + 0.5, total - hits + 0.5, replicates)

    app = posterior(unlabelled_pass, unlabelled)
    sens = posterior(c.tp, c.pm_pass)
    spec = posterior(c.tn, c.pm_fail)
    youden = sens + spec - 1.0
    keep = youden > 0
    if not keep.any():
        raise Undefined("no replicate had TPR + TNR > 1: the interval is undefined")
    estimates = np.clip((app[keep] + spec[keep] - 1.0) / youden[keep], 0.0, 1.0)
    low, high = np.percentile(estimates, [2.5, 97.5])
    return CorrectedRate(value, (float(low), float(high)), apparent, int(keep.sum()))


def corrected_rate_method(
    seed: int = BOOTSTRAP_SEED, replicates: int = BOOTSTRAP_REPLICATES
) -> str:
    return (
        "Rogan-Gladen, clipped to [0, 1]; 95% interval: percentiles of the estimate over "
        f"{replicates} draws of the three rates from their Jeffreys Beta posteriors, seed {seed}"
    )
