"""Weighted agreement under the labelling plan, and the table the decision reads.

Under the plan (:mod:`pmos.gate.plan`) the PM labels every run the gate
failed and a share of those it passed, so the labelled pairs over-represent
the FAIL side: their plain table would put the gate's verdicts in the wrong
proportions and bias kappa. Each pair carries its weight, 1 / its inclusion
probability (as re-derived when pairing), and the estimates weigh by it
(Horvitz-Thompson): scikit-learn's ``confusion_matrix`` and
``cohen_kappa_score`` with ``sample_weight``.

The decision rule's intervals are for a table of n independent pairs drawn
uniformly. The weighted table is turned into one: its cell shares, times an
*effective number of pairs*, the size of a uniform sample whose kappa would be
as precise as the plan's estimate. That precision comes from the delta method
on the two strata (gate pass, gate fail): kappa is a function of the PM's
pass share q_h in each stratum h, whose share W_h of the runs is the weighted
one, and var(kappa) = sum over h of (dk/dq_h)^2 q_h (1 - q_h) / n_h with n_h the
labels in h (q_h smoothed by half a pair each way). A uniform sample of m
pairs has n_h = m W_h, hence m = sum_h g_h / W_h / sum_h g_h / n_h with
g_h = (dk/dq_h)^2 q_h (1 - q_h). Over-sampling a small, informative FAIL side
buys more precision per label, so m can exceed the labels; a plan that
samples the wrong side buys less. The effective table, rounded to whole
pairs, is what the rule (intervals, classes, TNR, the sequential bound)
reads; ``labels_needed`` projects labels to come under the plan
(:class:`pmos.calibration.decision.Plan`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from pmos.calibration.stats import Confusion, kappa_formula

#: What the report's ``weighting.method`` says.
WEIGHTING_METHOD = (
    "each pair weighs 1 / its inclusion probability under the labelling plan "
    "(Horvitz-Thompson); scikit-learn confusion_matrix and cohen_kappa_score with "
    "sample_weight; the decision reads the weighted table scaled to the effective number "
    "of pairs (stratified delta method on the gate's two sides)"
)
#: Half a pair added to each side of a stratum's PM share before its variance.
SMOOTHING = 0.5


@dataclass(frozen=True)
class Weighted:
    """A group's weighted estimates (``cells`` as floats: tp, fn, fp, tn)."""

    cells: tuple[float, float, float, float]
    kappa: float | None
    effective_pairs: float
    #: The weighted table scaled to ``effective_pairs``, in whole pairs.
    effective: Confusion


def is_weighted(weight: Any) -> bool:
    """Whether any pair weighs other than 1 (else the plain table is the estimate)."""
    return bool(len(weight)) and bool(np.any(np.asarray(weight) != 1.0))


def weighted(gate: Any, pm: Any, weight: Any) -> Weighted:
    """The weighted estimates of one group of pairs (at least one pair)."""
    # scikit-learn is heavy and needed only for a report: loaded when one is made.
    from sklearn.metrics import cohen_kappa_score, confusion_matrix

    gate, pm = np.asarray(gate, dtype=bool), np.asarray(pm, dtype=bool)
    weight = np.asarray(weight, dtype=float)
    # Rows: the PM's label (the truth); columns: the gate; pass first.
    matrix = confusion_matrix(pm, gate, labels=[True, False], sample_weight=weight)
    tp, fn, fp, tn = (float(v) for v in (matrix[0, 0], matrix[0, 1], matrix[1, 0], matrix[1, 1]))
    kappa: float | None = None
    if len(set(gate.tolist()) | set(pm.tolist())) > 1:
        value = float(cohen_kappa_score(pm, gate, labels=[True, False], sample_weight=weight))
        kappa = None if math.isnan(value) else value
    size = _effective_pairs(gate, pm, weight, (tp, fn, fp, tn))
    return Weighted((tp, fn, fp, tn), kappa, size, effective_table((tp, fn, fp, tn), size))


def _effective_pairs(
    gate: np.ndarray, pm: np.ndarray, weight: np.ndarray, cells: tuple[float, ...]
) -> float:
    """The uniform sample size as precise as the plan's kappa (module docstring);
    Kish's (sum w)^2 / sum w^2 where the strata give no gradient."""
    kish = float(weight.sum() ** 2 / (weight**2).sum())
    raw = [
        int((gate & pm).sum()),
        int((~gate & pm).sum()),
        int((gate & ~pm).sum()),
        int((~gate & ~pm).sum()),
    ]
    return float(effective_pairs(np.array(cells, dtype=float), np.array(raw), np.array(kish)))


def effective_pairs(weighted_cells: Any, raw_cells: Any, kish: Any) -> Any:
    """The effective number of pairs, on arrays of tables (..., 4: tp, fn, fp, tn) as
    well as one: the weighted cells give each side's share W_h and the PM's pass
    share q_h in it, the raw cells the labels n_h and the smoothed shares whose
    variance counts; ``kish`` where a side is empty or gives no gradient."""
    w = np.asarray(weighted_cells, dtype=float)
    r = np.asarray(raw_cells, dtype=float)
    tp, fn, fp, tn = (w[..., i] for i in range(4))
    total = tp + fn + fp + tn
    with np.errstate(divide="ignore", invalid="ignore"):
        shares = ((tp + fp) / total, (fn + tn) / total)
        counts = (r[..., 0] + r[..., 2], r[..., 1] + r[..., 3])
        q = (tp / (tp + fp), fn / (fn + tn))
        smoothed = [
            (r[..., 0] + SMOOTHING) / (counts[0] + 2 * SMOOTHING),
            (r[..., 1] + SMOOTHING) / (counts[1] + 2 * SMOOTHING),
        ]
        step = 1e-5

        def kappa_at(qp: Any, qf: Any) -> Any:
            w_p, w_f = shares
            return kappa_formula(w_p * qp, w_f * qf, w_p * (1 - qp), w_f * (1 - qf))

        slopes = []
        for h in (0, 1):
            up, down = list(q), list(q)
            up[h], down[h] = np.minimum(1.0, q[h] + step), np.maximum(0.0, q[h] - step)
            slopes.append((kappa_at(*up) - kappa_at(*down)) / (up[h] - down[h]))
        terms = [g * g * s * (1 - s) for g, s in zip(slopes, smoothed, strict=True)]
        plan = terms[0] / counts[0] + terms[1] / counts[1]
        uniform = terms[0] / shares[0] + terms[1] / shares[1]
        size = uniform / plan
    good = np.isfinite(size) & (plan > 0) & (counts[0] > 0) & (counts[1] > 0)
    return np.where(good, size, kish)


def effective_table(weighted_cells: Any, size: float) -> Confusion:
    """The weighted cells scaled to ``size`` pairs, in whole pairs: what the rule reads."""
    cells = [float(v) for v in weighted_cells]
    total = sum(cells)
    return Confusion(*(round(v * size / total) for v in cells))
