"""Kappa's lower bound for a team that looks after every label: alpha spending over looks.

A single reading of the interval rule calls a gate exactly at the threshold
calibrated about 2% of the time; a team that reads ``pmos metrics`` after every
label sees ``calibrated`` at *some* point far more often (10% from 20 to 200
pairs, issue 26), because each look is another chance for noise to cross the
line. The ``sequential`` rule (the default ``calibration_rule``) spends a total
one-sided error ``ALPHA`` = 5% over every look a team could make, from the
first possible one to forever:

* the first possible look is at ``first = max(min_pairs, 2 * min_per_class)``
  pairs (no table with fewer can be calibrated); the look at n pairs is look
  k = n - first + 1;
* look k may err with probability alpha_k = ALPHA / (S (k + 1) ln(k + 1)^2),
  S = 2.11 >= sum over j >= 2 of 1 / (j ln(j)^2) = 2.1097, so the alphas of all
  looks add up to at most ALPHA: by the union bound, a gate at the threshold
  is called calibrated at some look with probability at most ALPHA, however
  often, and however long, the team looks. (alpha_k falls as 1/(k log^2 k),
  more slowly than the 1/k^2 of the textbook spending, so late looks keep
  more power; the simulation compares both.)
* at look k, kappa's lower bound is kappa - z_k * se, with z_k the upper
  alpha_k point of the standard normal and se the large-sample standard error
  of Fleiss, Cohen and Everitt (1969), computed on the table with half a pair
  added to each cell so that it never vanishes at perfect agreement.

The normal approximation is least accurate on the few pairs of the first
looks; there the rule also requires the interval rule's own 95% Dirichlet
bound (:mod:`pmos.calibration.intervals`) to reach the threshold, which is
exact enough at small n. The error rate under continuous monitoring and the
power were measured, not assumed: ``benchmarks/calibration_sim.py --looks``,
figures in ``planning/evals/calibration-method.md``.

Everything here works on numpy arrays of counts as well as on single numbers,
so the simulation runs the very functions ``pmos metrics`` runs.
"""

from __future__ import annotations

from statistics import NormalDist
from typing import Any

#: The total one-sided false-calibration rate spent over all looks.
ALPHA = 0.05
#: An upper bound of sum over j >= 2 of 1 / (j ln(j)^2) (2.10974...).
SPENDING_SUM = 2.11
#: Half a pair added to each cell before the standard error is computed.
SMOOTHING = 0.5

SEQUENTIAL_METHOD = (
    f"alpha spending over every look: look k = n - first + 1 (first = max(min_pairs, "
    f"2 min_per_class)) gets one-sided alpha_k = {ALPHA} / ({SPENDING_SUM} (k + 1) "
    "ln(k + 1)^2), summing to at most "
    f"{ALPHA}; bound = kappa - z(alpha_k) * se, se the Fleiss-Cohen-Everitt large-sample "
    f"standard error on the table with {SMOOTHING} added to each cell"
)


def first_look(min_pairs: int, min_per_class: int) -> int:
    """The fewest pairs at which any table could be calibrated: looks before it
    need no share of the error."""
    return max(min_pairs, 2 * min_per_class)


def look_alpha(n: Any, first: int) -> Any:
    """alpha_k of the look at ``n`` pairs (k = n - first + 1, at least 1)."""
    # Deferred: numpy (about 0.2 s), for the statistics alone.
    import numpy as np

    k = np.maximum(np.asarray(n, dtype=float) - first + 1.0, 1.0)
    return ALPHA / (SPENDING_SUM * (k + 1.0) * np.log(k + 1.0) ** 2)


def kappa_se(tp: Any, fn: Any, fp: Any, tn: Any) -> Any:
    """Fleiss, Cohen and Everitt's (1969) large-sample standard error of kappa, on the
    table with :data:`SMOOTHING` added to each cell (never 0, even at perfect agreement)."""
    # Deferred: numpy (about 0.2 s), for the statistics alone.
    import numpy as np

    a, b, c, d = (np.asarray(x, dtype=float) + SMOOTHING for x in (tp, fn, fp, tn))
    n = a + b + c + d
    # m[gate][pm]: gate pass row (tp, fp), gate fail row (fn, tn).
    m11, m12, m21, m22 = a / n, c / n, b / n, d / n
    g1, g2, q1, q2 = m11 + m12, m21 + m22, m11 + m21, m12 + m22
    po, pe = m11 + m22, g1 * q1 + g2 * q2
    k = (po - pe) / (1.0 - pe)
    inner = m11 * (1.0 - (g1 + q1) * (1.0 - k)) ** 2 + m22 * (1.0 - (g2 + q2) * (1.0 - k)) ** 2
    outer = (1.0 - k) ** 2 * (m12 * (q1 + g2) ** 2 + m21 * (q2 + g1) ** 2)
    variance = (inner + outer - (k - pe * (1.0 - k)) ** 2) / (n * (1.0 - pe) ** 2)
    return np.sqrt(np.maximum(variance, 0.0))


def lower_bound(kappa: Any, tp: Any, fn: Any, fp: Any, tn: Any, first: int, se: Any = None) -> Any:
    """Kappa's lower bound at the look its table is (n = tp + fn + fp + tn pairs):
    ``kappa - z(alpha_k) * se``. ``kappa`` is the table's own (NaN where undefined);
    ``se`` its :func:`kappa_se`, when the caller has it already."""
    # Deferred: numpy (about 0.2 s), for the statistics alone.
    import numpy as np

    n = np.asarray(tp + fn + fp + tn, dtype=float)
    sizes, where = np.unique(n, return_inverse=True)
    normal = NormalDist()
    z = np.array([-normal.inv_cdf(a) for a in np.atleast_1d(look_alpha(sizes, first)).tolist()])
    if se is None:
        se = kappa_se(tp, fn, fp, tn)
    return kappa - z[where].reshape(n.shape) * se


def lower_bound_of(
    kappa: float, tp: int, fn: int, fp: int, tn: int, first: int
) -> tuple[float, float]:
    """(the lower bound, the look's alpha_k) of one table, as the report gives them."""
    bound = float(lower_bound(kappa, tp, fn, fp, tn, first))
    return max(-1.0, bound), float(look_alpha(tp + fn + fp + tn, first))
