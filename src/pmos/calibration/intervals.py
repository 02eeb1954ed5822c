"""95% intervals that hold at the sample sizes a team actually has.

Three intervals, each chosen because the textbook one fails exactly where a
gate is being judged (few pairs, agreement near perfect, a rate of 0 or 1):

* **kappa**: the union of two Dirichlet posterior intervals (Jeffreys and
  Perks priors) over the four cell probabilities, by Monte Carlo with a seed
  derived from the table itself. It exists at perfect agreement, where the
  large-sample (Fleiss-Cohen-Everitt) interval has zero width, and its
  coverage was measured, not assumed (``benchmarks/calibration_sim.py``,
  figures in ``planning/evals/calibration-method.md``).
* **TPR and TNR**: Wilson score intervals, which stay inside [0, 1] and have
  non-zero width at 0/n and n/n.
* **ROC AUC**: Newcombe's score interval built on the Hanley-McNeil variance,
  which, unlike a bootstrap, still has a lower end when AUC is 1.

Everything here is vectorised with NumPy so that ``pmos stats agreement`` can
answer for ten thousand tables in one call; numpy is imported inside the
functions, so importing this module stays cheap for the writers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

from pmos.calibration.stats import Z95, kappa_formula

if TYPE_CHECKING:
    import numpy as np

#: The two reference priors of the kappa interval: Dirichlet(a, a, a, a).
#: 1/2 is Jeffreys' prior for a multinomial; 1/4 = 1/(number of cells) is Perks'.
KAPPA_PRIORS = (0.5, 0.25)
#: Monte Carlo draws of kappa per prior and table.
KAPPA_DRAWS = 4000
#: Seed of every table's draws: a table's interval depends on its four counts
#: only, so it is the same in ``pmos metrics`` and in ``pmos stats agreement``,
#: alone or among ten thousand others, run after run.
KAPPA_SEED = 20260101
#: Gamma shapes below this are drawn exactly; from it up by Wilson-Hilferty, whose
#: quantiles there are within 0.12% (relative) of the exact ones from the 0.1st
#: to the 99.9th percentile, and within 0.012% at the 2.5th.
_EXACT_BELOW = 40.0
#: Tables whose draws are held in memory at once (2 priors x draws x 4 cells x 8 bytes each).
_CHUNK = 64

KAPPA_CI_METHOD = (
    "Dirichlet posterior of the four cell probabilities, union of the central 95% "
    f"intervals under the Jeffreys (1/2) and Perks (1/4) priors, {KAPPA_DRAWS} Monte "
    f"Carlo draws each (seed {KAPPA_SEED}; the same draws for the same counts), "
    "stretched to hold the estimate"
)
WILSON_METHOD = "Wilson score interval (Wilson 1927)"
AUC_CI_METHOD = (
    "score interval inverting the Hanley-McNeil variance with N* = (m + n)/2 - 1 "
    "(Newcombe 2006, method 5)"
)


def wilson(successes: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a proportion ``successes / trials`` (Wilson 1927).

    With p = x/n: centre (p + z^2/2n) / (1 + z^2/n), half-width
    z * sqrt(p(1 - p)/n + z^2/4n^2) / (1 + z^2/n). It never leaves [0, 1] and
    keeps a non-zero width at 0/n and n/n, where the Wald interval collapses.
    """
    if trials <= 0:
        raise ValueError("the Wilson interval needs at least one trial")
    if not 0 <= successes <= trials:
        raise ValueError("successes must lie between 0 and trials")
    p = successes / trials
    z2 = z * z
    denominator = 1.0 + z2 / trials
    centre = (p + z2 / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1.0 - p) / trials + z2 / (4 * trials * trials)) / denominator
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return low, high


def wilson_lower(successes: Any, trials: Any, z: float = Z95) -> Any:
    """:func:`wilson`'s lower end on arrays (0 where there are no successes; NaN where
    there are no trials), for the projection's thousands of tables."""
    # Deferred: numpy (about 0.2 s), for the statistics alone.
    import numpy as np

    x, n = np.asarray(successes, dtype=float), np.asarray(trials, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = x / n
        z2 = z * z
        denominator = 1.0 + z2 / n
        centre = (p + z2 / (2 * n)) / denominator
        half = z * np.sqrt(p * (1.0 - p) / n + z2 / (4 * n * n)) / denominator
        low = np.maximum(centre - half, 0.0)
    return np.where(x == 0, np.where(n > 0, 0.0, np.nan), low)


def kappa_of_cells(cells: np.ndarray) -> np.ndarray:
    """Cohen's kappa of tables given on the last axis as (tp, fn, fp, tn), counts or
    proportions; NaN where chance agreement is 1.

    The formula is :func:`pmos.calibration.stats.kappa_formula`, applied to whole
    arrays of tables at once (millions of bootstrap draws).
    """
    # Deferred: numpy (about 0.2 s), for the statistics alone.
    import numpy as np

    tp, fn, fp, tn = cells[..., 0], cells[..., 1], cells[..., 2], cells[..., 3]
    with np.errstate(invalid="ignore", divide="ignore"):
        kappas: np.ndarray = kappa_formula(tp, fn, fp, tn)
    return kappas


def kappa_intervals(tables: Sequence[tuple[int, int, int, int]]) -> list[tuple[float, float]]:
    """The kappa interval (:data:`KAPPA_CI_METHOD`) of each (tp, fn, fp, tn) table.

    For each prior a in :data:`KAPPA_PRIORS`, the cell probabilities have the
    posterior Dirichlet(tp + a, fn + a, fp + a, tn + a); kappa is computed for
    each of :data:`KAPPA_DRAWS` draws and the 2.5th and 97.5th percentiles
    taken. The interval reported is the union of the two, stretched to hold the
    table's own kappa where no draw reaches it (at perfect agreement the draws
    stay below 1). The union matters: the Jeffreys prior alone pulls kappa
    towards 0 and misses high true kappas at n = 20, the Perks prior alone is
    too sure of perfect agreement at n = 50; together they cover at least 93%
    over the grid in calibration-method.md.

    The draws of a table depend on its counts only (:func:`_gamma_draws`), so
    its interval is the same alone or in any batch, and ten thousand tables
    cost array arithmetic rather than ten thousand random streams. The caller
    decides when a point kappa exists; this function answers for any table
    with at least one pair.
    """
    # Deferred: numpy (about 0.2 s), for the statistics alone.
    import numpy as np

    unique = sorted(set(tables))
    if any(sum(t) <= 0 or min(t) < 0 for t in unique):
        raise ValueError("every table needs non-negative counts and at least one pair")
    found: dict[tuple[int, int, int, int], tuple[float, float]] = {}
    priors = np.asarray(KAPPA_PRIORS)[None, :, None]
    for start in range(0, len(unique), _CHUNK):
        chunk = unique[start : start + _CHUNK]
        shapes = np.asarray(chunk, dtype=float)[:, None, :] + priors  # (tables, priors, cells)
        kappas = kappa_of_cells(_gamma_draws(shapes))  # (tables, priors, draws)
        ends = np.quantile(kappas, [0.025, 0.975], axis=2)  # (2, tables, priors)
        # The estimate itself always belongs: at perfect agreement no draw reaches 1.
        estimate = np.nan_to_num(kappa_of_cells(np.asarray(chunk, dtype=float)), nan=0.0)
        low = np.minimum(ends[0].min(axis=1), estimate)
        high = np.maximum(ends[1].max(axis=1), estimate)
        for table, lo, hi in zip(chunk, low.tolist(), high.tolist(), strict=True):
            found[table] = (max(-1.0, lo), min(1.0, hi))
    return [found[t] for t in tables]


@cache
def _normals() -> np.ndarray:
    """The fixed standard normals (priors, draws, cells) behind the draws of large shapes."""
    # Deferred: numpy (about 0.2 s), for the statistics alone.
    import numpy as np

    return np.random.default_rng(KAPPA_SEED).standard_normal((len(KAPPA_PRIORS), KAPPA_DRAWS, 4))


@cache
def _small_shape_draws(prior: int, cell: int, shape: float) -> np.ndarray:
    """Exact Gamma(shape) draws for one (prior, cell) column, from a generator keyed
    by the column and the shape: the same numbers wherever the shape occurs."""
    # Deferred: numpy (about 0.2 s), for the statistics alone.
    import numpy as np

    key = [KAPPA_SEED, prior, cell, round(shape * 4)]  # shape = count + 1/2 or 1/4
    return np.random.default_rng(key).standard_gamma(shape, KAPPA_DRAWS)


def _gamma_draws(shapes: np.ndarray) -> np.ndarray:
    """Gamma draws for shapes (tables, priors, cells), as (tables, priors, draws, cells).

    Column (prior, cell) of a table holds independent Gamma(shape) draws that
    depend on the column and the shape only, so a table gets the same draws in
    any batch. A shape below :data:`_EXACT_BELOW` (a cell with few pairs) is
    drawn exactly, from a generator keyed by the column and the shape (cached);
    a larger one by the Wilson-Hilferty transform of the column's fixed
    standard normals z: shape * (1 - 1/(9 shape) + z / (3 sqrt(shape)))^3,
    floored at 0.
    """
    # Deferred: numpy (about 0.2 s), for the statistics alone.
    import numpy as np

    a = shapes[:, :, None, :]
    draws = (1.0 - 1.0 / (9.0 * a)) + _normals()[None] * (1.0 / (3.0 * np.sqrt(a)))
    np.maximum(draws, 0.0, out=draws)
    cube: np.ndarray = draws * draws
    cube *= draws
    cube *= a
    for t, p, c in zip(*np.nonzero(shapes < _EXACT_BELOW), strict=True):
        cube[t, p, :, c] = _small_shape_draws(int(p), int(c), float(shapes[t, p, c]))
    return cube


def kappa_interval(tp: int, fn: int, fp: int, tn: int) -> tuple[float, float]:
    """:func:`kappa_intervals` of one table."""
    return kappa_intervals([(tp, fn, fp, tn)])[0]


def hanley_mcneil_variance(theta: np.ndarray, positives: int, negatives: int) -> np.ndarray:
    """Newcombe's symmetric form of the Hanley-McNeil (1982) variance of an AUC theta:

        V = theta (1 - theta) [1 + N* ((1 - theta)/(2 - theta) + theta/(1 + theta))] / (m n)

    with N* = (m + n)/2 - 1, m positives and n negatives.
    """
    star = (positives + negatives) / 2.0 - 1.0
    spread = (1.0 - theta) / (2.0 - theta) + theta / (1.0 + theta)
    return theta * (1.0 - theta) * (1.0 + star * spread) / (positives * negatives)


def auc_interval(auc: float, positives: int, negatives: int, z: float = Z95) -> tuple[float, float]:
    """Newcombe's (2006) method 5 interval for an AUC: every theta with
    (auc - theta)^2 <= z^2 V(theta), V from :func:`hanley_mcneil_variance`.

    Because V is evaluated at theta, not at the estimate, the interval keeps a
    non-zero width at AUC = 0 or 1 (a perfectly separating score on a few
    pairs is not proof of a perfect one). Its ends are found on a fine grid
    and refined by bisection.
    """
    # Deferred: numpy (about 0.2 s), for the statistics alone.
    import numpy as np

    if positives < 1 or negatives < 1:
        raise ValueError("an AUC interval needs at least one positive and one negative")

    def outside(theta: np.ndarray) -> np.ndarray:
        return (auc - theta) ** 2 > z * z * hanley_mcneil_variance(theta, positives, negatives)

    grid = np.linspace(0.0, 1.0, 4001)
    inside = ~outside(grid)
    inside[np.searchsorted(grid, auc)] = True  # the estimate itself always belongs
    where = np.flatnonzero(inside)
    ends = []
    for index, step in ((where[0], -1), (where[-1], 1)):
        if index + step < 0 or index + step >= len(grid):
            ends.append(float(grid[index]))
            continue
        good, bad = float(grid[index]), float(grid[index + step])
        for _ in range(50):
            middle = (good + bad) / 2.0
            if outside(np.asarray(middle)):
                bad = middle
            else:
                good = middle
        ends.append(good)
    return max(0.0, min(ends[0], auc)), min(1.0, max(ends[1], auc))
