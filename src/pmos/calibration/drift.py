"""Drift against a frozen baseline: a CUSUM on disagreements since the gate became calibrated.

The earlier drift flag compared the latest month with every earlier month
pooled, so a lasting drop faded: the bad months joined the baseline (a drop
from kappa 0.85 to 0.30 was flagged at month 4 in 46% of kits, at month 6 in
18.5%, issue 26). Here the baseline is frozen:

* the pairs of a group (all, or one evaluator model) are taken in the order
  the PM labelled them; the **baseline** is the pairs up to the first look at
  which the calibration rule holds (:func:`first_calibrated`, the decision
  ``pmos metrics`` makes, on those pairs alone);
* after it, a one-sided Bernoulli **CUSUM** watches the disagreements (gate
  side != PM label): S = max(0, S + log(p1/p0)) on a disagreement and
  max(0, S + log((1 - p1)/(1 - p0))) on an agreement, where p0 is the
  baseline's disagreement rate (one disagreement and one agreement added, so
  that a perfect baseline still has one, which also offsets a baseline looking
  its best at the look where it first passed) and p1 = (1 - threshold)(1 - p_e),
  the disagreement rate of a gate whose kappa had fallen to the threshold at the
  baseline's chance agreement p_e. An alarm is S >= :data:`DECISION_INTERVAL`;
* an alarm **stays raised until the gate is recalibrated**: the pairs after it
  start a new baseline, and only when the rule holds on them alone is a new
  baseline frozen and the watch resumed. A lasting drop therefore stays
  flagged however long it lasts.

The false-alarm rate on a stationary kit and the delay to detect a drop are
measured by ``benchmarks/calibration_sim.py --drift``
(calibration-method.md, "Trend and drift").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pmos.calibration import intervals, sequential
from pmos.calibration.agreement import rounded, table_reports
from pmos.calibration.decision import CalibrationRule, Rule
from pmos.calibration.stats import Confusion

#: The CUSUM's decision interval h: an alarm when the log-likelihood ratio of
#: "kappa fell to the threshold" against "as in the baseline" reaches it.
DECISION_INTERVAL = 8.0
#: Candidate looks decided at once while looking for the first calibrated one.
_BATCH = 32
#: Looks examined at once.
_STRETCH = 4096

METHOD = (
    "one-sided Bernoulli CUSUM on disagreements after a frozen baseline (the pairs up to the "
    "first look at which the calibration rule held), p1 = (1 - threshold)(1 - p_e) against the "
    f"baseline's rate p0, alarm at {DECISION_INTERVAL:g}; an alarm stays until the rule holds "
    "again on the pairs after it"
)


def cumulative_tables(gate: np.ndarray, pm: np.ndarray) -> np.ndarray:
    """(tp, fn, fp, tn) after each pair, (n, 4), of pairs in order."""
    gate, pm = np.asarray(gate, dtype=bool), np.asarray(pm, dtype=bool)
    cells = np.stack([gate & pm, ~gate & pm, gate & ~pm, ~gate & ~pm], axis=-1)
    return cells.cumsum(axis=0, dtype=np.int64)


def necessary(tables: np.ndarray, rule: Rule) -> np.ndarray:
    """Per table (..., 4), whether it meets conditions every calibrated table meets
    (enough pairs of each class, kappa at the threshold, and under the sequential
    rule its bound): only those need the full decision."""
    tp, fn, fp, tn = (tables[..., i] for i in range(4))
    n = tables.sum(axis=-1)
    kappa = intervals.kappa_of_cells(tables.astype(float))
    with np.errstate(invalid="ignore"):
        ok: np.ndarray = (
            (n >= rule.min_pairs)
            & (tp + fn >= 1)
            & (fp + tn >= 1)
            & (kappa >= rule.kappa_threshold - 1e-9)
        )
        if rule.rule is not CalibrationRule.POINT:
            ok &= (tp + fn >= rule.min_per_class) & (fp + tn >= rule.min_per_class)
        if rule.rule is CalibrationRule.SEQUENTIAL and ok.any():
            first = sequential.first_look(rule.min_pairs, rule.min_per_class)
            rows = np.flatnonzero(ok)  # the bound only where the rest holds: it costs more
            bound = sequential.lower_bound(
                kappa[rows], tp[rows], fn[rows], fp[rows], tn[rows], first
            )
            ok[rows] = bound >= rule.kappa_threshold - 1e-6
    return ok


def first_calibrated(
    tables: np.ndarray, rule: Rule, decided: dict[tuple[int, ...], bool] | None = None
) -> int | None:
    """The number of pairs at the first look at which ``rule`` holds on cumulative
    ``tables`` (n, 4), decided by :func:`~pmos.calibration.agreement.table_reports`
    (the decision ``pmos metrics`` makes); None when it never does. ``decided``
    caches decisions by table across calls."""
    decided = {} if decided is None else decided
    # In stretches, so that a gate calibrated early costs little on a long record.
    for offset in range(0, len(tables), _STRETCH):
        stretch = tables[offset : offset + _STRETCH]
        candidates = np.flatnonzero(necessary(stretch, rule))
        for start in range(0, len(candidates), _BATCH):
            rows = candidates[start : start + _BATCH]
            keys = [tuple(int(v) for v in stretch[i]) for i in rows.tolist()]
            todo = sorted({key for key in keys if key not in decided})
            if todo:
                reports = table_reports([Confusion(*key) for key in todo], rule, project=False)
                decided.update((key, r["calibrated"]) for key, r in zip(todo, reports, strict=True))
            for i, key in zip(rows.tolist(), keys, strict=True):
                if decided[key]:
                    return offset + int(i) + 1
    return None


@dataclass
class Drift:
    """The detector's state after the last pair."""

    #: True: an alarm not yet followed by recalibration; None: never calibrated.
    drift: bool | None
    basis: dict[str, Any] | None
    #: Why drift is undefined, when it is.
    undefined: str | None = None
    #: ("calibrated" | "alarm", pair number) in order: the detector is causal, so
    #: the flag after any earlier pair is read off these (:meth:`flag_after`).
    events: list[tuple[str, int]] = field(default_factory=list)

    def flag_after(self, pairs: int) -> bool | None:
        """The drift flag a report made after the first ``pairs`` pairs would show."""
        last = None
        for kind, at in self.events:
            if at <= pairs:
                last = kind
        return None if last is None else last == "alarm"


def detect(
    gate: Any, pm: Any, rule: Rule, decided: dict[tuple[int, ...], bool] | None = None
) -> Drift:
    """Run the detector (module docstring) over pairs in the order the PM labelled them."""
    gate, pm = np.asarray(gate, dtype=bool), np.asarray(pm, dtype=bool)
    decided = {} if decided is None else decided
    start, alarm_at = 0, None
    baseline: dict[str, object] = {}  # set with the first calibration, before any alarm
    events: list[tuple[str, int]] = []
    while True:
        tables = cumulative_tables(gate[start:], pm[start:])
        size = first_calibrated(tables, rule, decided) if len(tables) else None
        if size is None:
            if alarm_at is None:
                return Drift(None, None, "the gate has not been calibrated yet: no baseline")
            basis = {**baseline, "alarm_at_pair": alarm_at, "recalibrated": False}
            return Drift(True, basis, events=events)
        end = start + size
        events.append(("calibrated", end))
        c = Confusion(*(int(v) for v in tables[size - 1]))
        p0 = (c.fn + c.fp + 1.0) / (c.n + 2.0)
        chance = ((c.tp + c.fp) * (c.tp + c.fn) + (c.fn + c.tn) * (c.fp + c.tn)) / c.n**2
        p1 = (1.0 - rule.kappa_threshold) * (1.0 - chance)
        if p1 <= p0:  # a baseline this close to the threshold: watch for any rise
            p1 = p0 + (1.0 - p0) / 2.0
        up, down = math.log(p1 / p0), math.log((1.0 - p1) / (1.0 - p0))
        steps = np.where(gate[end:] != pm[end:], up, down)
        # S_i = max(0, S_(i-1) + step_i) is C_i - min(0, min over j <= i of C_j), C the
        # running sum: the whole CUSUM path in array operations.
        running = np.cumsum(steps)
        path = running - np.minimum(np.minimum.accumulate(running), 0.0) if len(steps) else running
        crossed = np.flatnonzero(path >= DECISION_INTERVAL)
        alarm = int(crossed[0]) if len(crossed) else None
        s = float(path[alarm if alarm is not None else -1]) if len(steps) else 0.0
        baseline = {
            "method": METHOD,
            "baseline_pairs": c.n,
            "baseline_start_pair": start + 1,
            "baseline_kappa": _kappa(c),
            "baseline_disagreement": rounded(p0),
            "alarm_disagreement": rounded(p1),
            "decision_interval": DECISION_INTERVAL,
            "pairs_since_baseline": len(steps) if alarm is None else alarm + 1,
            "cusum": rounded(s),
        }
        if alarm is None:
            basis = {**baseline, "alarm_at_pair": None, "recalibrated": alarm_at is not None}
            return Drift(False, basis, events=events)
        alarm_at = end + alarm + 1
        events.append(("alarm", alarm_at))
        start = alarm_at


def _kappa(c: Confusion) -> float | None:
    value = float(intervals.kappa_of_cells(np.asarray([c.tp, c.fn, c.fp, c.tn], dtype=float)))
    return None if value != value else rounded(value)
