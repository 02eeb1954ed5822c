"""When the review gate counts as calibrated, and how many more labels it needs.

The old rule declared a gate calibrated when the point estimate of kappa over
20 pairs reached 0.60; in simulation a gate whose true kappa is 0.50 passed
that rule 31% of the time at n = 20. The default rule here asks the lower end
of kappa's 95% interval to reach the threshold, each PM label class to have
``min_per_class`` pairs, and the lower end of TNR's Wilson interval to reach
``min_tnr``: its measured false-calibration rate is in calibration-method.md.
The point rule stays available as ``calibration_rule: point`` for a team that
chooses it, never by default. The default, ``sequential``, is the interval rule
plus kappa's alpha-spending bound (:mod:`pmos.calibration.sequential`), which
keeps the false-calibration rate at most 5% for a team that checks after every
label; ``interval`` alone is safe for one reading only.

:func:`decide` works on the numbers as reported (rounded), so a reader can redo
every decision by hand from the JSON. ``labels_needed`` is a posterior-predictive
projection (:func:`labels_needed`): seeded by the table, so it is the same on every
run, and checked by simulation (``benchmarks/calibration_sim.py --plan``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np

from pmos.calibration import sequential
from pmos.calibration.intervals import KAPPA_PRIORS, kappa_of_cells, wilson_lower
from pmos.calibration.stats import Z95, Confusion, Undefined
from pmos.calibration.weighting import effective_pairs


class CalibrationRule(StrEnum):
    """``calibration_rule`` in pmos.yaml."""

    #: The default: the interval rule, and kappa's alpha-spending bound
    #: (:mod:`pmos.calibration.sequential`) at the threshold: safe for a team
    #: that looks after every label.
    SEQUENTIAL = "sequential"
    #: One reading's rule: safe for a single look, not under repeated looks.
    INTERVAL = "interval"
    POINT = "point"


@dataclass(frozen=True)
class Rule:
    """The settings the decision reads from pmos.yaml (these are its defaults)."""

    kappa_threshold: float = 0.60
    min_pairs: int = 20
    min_per_class: int = 10
    min_tnr: float = 0.50
    rule: CalibrationRule = CalibrationRule.SEQUENTIAL
    #: ``calibration.decision_probability``: the chance of a decision that
    #: ``labels_needed`` more labels give (0.5: the median, the earlier projection).
    decision_probability: float = 0.8

    @classmethod
    def from_config(cls, config: Any) -> Rule:
        return cls(
            kappa_threshold=config.kappa_threshold,
            min_pairs=config.min_pairs,
            min_per_class=config.min_per_class,
            min_tnr=config.min_tnr,
            rule=CalibrationRule(config.calibration_rule),
            decision_probability=config.decision_probability,
        )


@dataclass(frozen=True)
class Evidence:
    """What the decision is made from, as reported (None where undefined)."""

    c: Confusion
    kappa: float | None
    kappa_ci: tuple[float, float] | None
    tnr: float | None
    tnr_ci: tuple[float, float] | None
    #: Why kappa is undefined, when it is.
    kappa_undefined: str | None = None
    #: Kappa's alpha-spending lower bound at this look, and the look's alpha
    #: (:mod:`pmos.calibration.sequential`); None where kappa is undefined.
    kappa_sequential: float | None = None
    sequential_alpha: float | None = None


def decide(rule: Rule, e: Evidence) -> tuple[bool, str]:
    """(calibrated, calibration_reason): the reason names every condition that fails,
    or, when none does, the figures that met them."""
    if rule.rule is CalibrationRule.POINT:
        return _point_rule(rule, e)
    if rule.rule is CalibrationRule.SEQUENTIAL:
        return _sequential_rule(rule, e)
    return _interval_rule(rule, e)


def first_look(rule: Rule) -> int:
    """The fewest pairs at which the rule could hold (the sequential rule's first look)."""
    return sequential.first_look(rule.min_pairs, rule.min_per_class)


def _sequential_rule(rule: Rule, e: Evidence) -> tuple[bool, str]:
    """The interval rule, and kappa's alpha-spending bound at the threshold."""
    calibrated, reason = _interval_rule(rule, e)
    bound, alpha = e.kappa_sequential, e.sequential_alpha
    if bound is None or alpha is None or e.c.n == 0:
        return calibrated, reason
    t = rule.kappa_threshold
    if bound >= t:
        if not calibrated:
            return calibrated, reason
        return True, reason.removesuffix(".") + (
            f"; kappa's bound for repeated looks, {bound:.3f} (alpha {alpha:.2g} at "
            f"{e.c.n} pairs), reaches it too."
        )
    why = (
        f"kappa's bound for repeated looks, {bound:.3f} (alpha {alpha:.2g} at {e.c.n} pairs, "
        f"so that checking after every label calls a gate at the threshold calibrated at most "
        f"{sequential.ALPHA:.0%} of the time), is below the threshold {t:.2f}"
    )
    if calibrated:
        return False, why + "."
    return False, reason.removesuffix(".") + "; " + why + "."


def _class_presence(c: Confusion) -> list[str]:
    failing = []
    if c.pm_fail == 0:
        failing.append(
            "no negative class yet: TNR is undefined (every PM label among the pairs is pass)"
        )
    if c.pm_pass == 0:
        failing.append(
            "no positive class yet: TPR is undefined (every PM label among the pairs is fail)"
        )
    return failing


def _point_rule(rule: Rule, e: Evidence) -> tuple[bool, str]:
    """The earlier rule: kappa >= threshold, both classes, at least min_pairs pairs."""
    c, kappa = e.c, e.kappa
    if c.n == 0:
        return False, "no labelled pairs yet."
    failing = _class_presence(c)
    if c.n < rule.min_pairs:
        failing.append(f"only {c.n} pair(s), at least {rule.min_pairs} are needed")
    if kappa is not None and kappa < rule.kappa_threshold:
        failing.append(f"kappa {kappa:.3f} is below the threshold {rule.kappa_threshold:.2f}")
    if failing:
        return False, "; ".join(failing) + "."
    return True, (
        f"kappa {kappa:.3f} >= {rule.kappa_threshold:.2f} over {c.n} pairs with both pass and "
        "fail PM labels (point rule: the estimate, not its interval)."
    )


def _interval_rule(rule: Rule, e: Evidence) -> tuple[bool, str]:
    c = e.c
    if c.n == 0:
        return False, "no labelled pairs yet."
    t = rule.kappa_threshold
    failing = _class_presence(c)
    for name, count in (("PM pass", c.pm_pass), ("PM fail", c.pm_fail)):
        if 0 < count < rule.min_per_class:
            failing.append(
                f"only {count} {name} label(s) among the pairs, at least "
                f"{rule.min_per_class} of each class are needed"
            )
    if c.n < rule.min_pairs:
        failing.append(f"only {c.n} pair(s), at least {rule.min_pairs} are needed")
    if e.kappa is None:
        if e.kappa_undefined and c.pm_fail and c.pm_pass:
            failing.append(f"kappa is undefined: {e.kappa_undefined}")
    elif e.kappa_ci is None or e.kappa_ci[0] < t:
        low = "undefined" if e.kappa_ci is None else f"{e.kappa_ci[0]:.3f}"
        failing.append(
            f"the lower end of kappa's 95% interval, {low}, is below the threshold {t:.2f} "
            f"(kappa {e.kappa:.3f})"
        )
    if rule.min_tnr > 0 and e.tnr_ci is not None and e.tnr_ci[0] < rule.min_tnr:
        failing.append(
            f"the lower end of TNR's 95% interval, {e.tnr_ci[0]:.3f}, is below min_tnr "
            f"{rule.min_tnr:.2f} (TNR {e.tnr:.3f})"
        )
    if failing:
        return False, "; ".join(failing) + "."
    assert e.kappa is not None and e.kappa_ci is not None
    tnr_part = (
        f"; TNR's lower end {e.tnr_ci[0]:.3f} >= min_tnr {rule.min_tnr:.2f}"
        if rule.min_tnr > 0 and e.tnr_ci is not None
        else ""
    )
    return True, (
        f"the lower end of kappa's 95% interval, {e.kappa_ci[0]:.3f}, reaches the threshold "
        f"{t:.2f} (kappa {e.kappa:.3f}) over {c.n} pairs, {c.pm_pass} PM pass and "
        f"{c.pm_fail} PM fail (at least {rule.min_per_class} each){tnr_part}."
    )


def require_blind(
    min_blind_labels: int, blind_pairs: int, calibrated: bool, reason: str
) -> tuple[bool, str]:
    """pmos.yaml ``calibration.min_blind_labels``: a decision also needs that many pairs
    whose label was given without the verdict in view (anchoring inflates agreement)."""
    if blind_pairs >= min_blind_labels:
        return calibrated, reason
    why = (
        f"only {blind_pairs} blind label(s) among the pairs, at least {min_blind_labels} are "
        "needed (calibration.min_blind_labels; 'pmos label next --blind')"
    )
    if calibrated:
        return False, why + "."
    return False, reason.removesuffix(".") + "; " + why + "."


def point_meets_threshold(rule: Rule, kappa: float | None) -> bool | None:
    """Whether the point estimate alone reaches the threshold (None when kappa is undefined)."""
    return None if kappa is None else kappa >= rule.kappa_threshold


#: Posterior draws of the truth behind one projection, half under each of the kappa
#: interval's priors (:data:`pmos.calibration.intervals.KAPPA_PRIORS`).
PROJECTION_DRAWS = 200
#: With the counts it projects from, the seed of a projection's draws: the same kit
#: gets the same ``labels_needed`` on every run, in ``pmos metrics`` and the board alike.
PROJECTION_SEED = 20261202
#: The most labels a projection looks at (2^20, about a million).
MAX_LABELS = 1 << 20


@dataclass(frozen=True)
class Plan:
    """The labelling plan the labels to come are taken under, and the labels so far:
    what :func:`labels_needed` needs when the rule reads a weighted table
    (:mod:`pmos.calibration.weighting`)."""

    #: ``calibration.plan_pass_side_rate``: a pass-side run's chance of being asked for.
    rate: float
    #: The labelled pairs, unweighted (tp, fn, fp, tn).
    raw: tuple[int, int, int, int]
    #: Their weighted cells.
    weighted: tuple[float, float, float, float]
    #: The sum of the weights and of their squares (Kish's effective size).
    weight_sum: float
    weight_squares: float


def labels_needed(rule: Rule, e: Evidence, plan: Plan | None = None) -> int:
    """How many more labels make the rule hold with probability p
    (``rule.decision_probability``): a posterior-predictive projection.

    Today's estimates are not the truth, so the projection does not grow today's
    table in its proportions. It draws :data:`PROJECTION_DRAWS` plausible true tables
    (cell probabilities) from their Dirichlet posterior given the table the rule
    reads, under the kappa interval's own priors (half the draws each), simulates
    the labels to come from each (under ``plan``, the pass side sampled at its rate
    and each such label weighing 1 / rate, the weighted table turned into the
    effective one as :mod:`pmos.calibration.weighting` does), applies the rule
    (:func:`holds`: the conditions of :func:`decide`, the sequential bound
    included when it is in force) at each candidate number m of labels, and
    returns the fewest m at which it holds in at least p of the draws. m is
    found by doubling, then by trying four sizes at a time within the bracket
    found, each draw's labels lying on one path (more labels add multinomial
    steps to fewer), with a generator seeded by the counts (and the plan's), so
    the answer is the same on every run.

    0 when the rule holds now. Raises :class:`Undefined` (the reason) when kappa
    or TNR is not above its threshold (more labels narrow an interval around the
    estimate, they do not raise it), a PM class is missing, there are no pairs,
    or not even :data:`MAX_LABELS` more labels make a decision that likely.
    """
    c = e.c
    if c.n == 0:
        raise Undefined("no labelled pairs: there is no agreement to project")
    if e.kappa is None:
        raise Undefined("kappa is undefined, so there is no agreement to project")
    t = rule.kappa_threshold
    if e.kappa <= t:
        raise Undefined(
            f"cannot at the current agreement: kappa {e.kappa:.3f} is not above the threshold "
            f"{t:.2f}; more pairs narrow its interval around it but do not raise it"
        )
    if c.pm_fail == 0 or c.pm_pass == 0:
        missing = "fail" if c.pm_fail == 0 else "pass"
        raise Undefined(
            f"cannot at the current class balance: there is no PM {missing} label among the "
            f"pairs, and more pairs in the same balance would add none"
        )
    if e.kappa_ci is None:
        raise Undefined("kappa has no interval to project")
    if decide(rule, e)[0]:
        return 0
    if rule.min_tnr > 0:
        assert e.tnr is not None
        if e.tnr <= rule.min_tnr:
            raise Undefined(
                f"cannot at the current agreement: TNR {e.tnr:.3f} is not above min_tnr "
                f"{rule.min_tnr:.2f}; more pairs narrow its interval but do not raise it"
            )
    return _Projection(rule, e, plan).search()


def holds(rule: Rule, tables: Any, spread: Any, spread_at: Any) -> Any:
    """Whether the rule holds on each table (..., 4: tp, fn, fp, tn, whole pairs):
    :func:`decide`'s conditions on arrays, for the projection's thousands of tables.

    The one part not computed as :func:`decide` reads it is kappa's 95% Dirichlet
    interval (Monte Carlo, too slow for thousands of tables): its lower end is taken
    as kappa - s se, se the large-sample standard error
    (:func:`pmos.calibration.sequential.kappa_se`), with s the ratio ``spread`` measured
    on a table of ``spread_at`` pairs (today's: (kappa - low) / se), going to 1.96 as
    1 / sqrt(pairs). Given each table's own ratio at its own size it is
    :func:`decide` exactly (the tests check it)."""
    tables = np.asarray(tables, dtype=float)
    tp, fn, fp, tn = (tables[..., i] for i in range(4))
    n, pm_pass, pm_fail = tables.sum(axis=-1), tp + fn, fp + tn
    t = rule.kappa_threshold
    kappa = kappa_of_cells(tables)
    with np.errstate(invalid="ignore", divide="ignore"):
        if rule.rule is CalibrationRule.POINT:
            ok: Any = (n >= rule.min_pairs) & (pm_pass > 0) & (pm_fail > 0) & (kappa >= t)
            return ok
        least = max(rule.min_per_class, 1)
        ok = (n >= rule.min_pairs) & (pm_pass >= least) & (pm_fail >= least)
        stretch = Z95 + (np.asarray(spread) - Z95) * np.sqrt(np.asarray(spread_at) / n)
        se = sequential.kappa_se(tp, fn, fp, tn)
        ok &= np.maximum(kappa - stretch * se, -1.0) >= t
        if rule.min_tnr > 0:
            ok &= wilson_lower(tn, pm_fail) >= rule.min_tnr
        if rule.rule is CalibrationRule.SEQUENTIAL:
            bound = sequential.lower_bound(kappa, tp, fn, fp, tn, first_look(rule), se)
            ok &= np.maximum(bound, -1.0) >= t
    return ok


class _Projection:
    """The draws and the labels to come of one :func:`labels_needed` (its docstring)."""

    def __init__(self, rule: Rule, e: Evidence, plan: Plan | None) -> None:
        assert e.kappa is not None and e.kappa_ci is not None
        c = e.c
        self.rule, self.plan = rule, plan
        cells = np.array([c.tp, c.fn, c.fp, c.tn], dtype=float)
        key = [PROJECTION_SEED, c.tp, c.fn, c.fp, c.tn]
        if plan is not None:
            key += [round(plan.rate * 1_000_000), *plan.raw]
        self.rng = np.random.default_rng(key)
        # The truth: the posterior of the table the rule reads, under each prior in turn.
        priors = np.repeat(np.asarray(KAPPA_PRIORS), PROJECTION_DRAWS // len(KAPPA_PRIORS))
        truth = self.rng.standard_gamma(cells[None, :] + priors[:, None])
        truth /= truth.sum(axis=1, keepdims=True)
        self.now = cells
        self.spread = (e.kappa - e.kappa_ci[0]) / float(sequential.kappa_se(*cells))
        self.spread_at = float(c.n)
        if plan is None:
            self.per_label = truth
        else:
            # A label to come is a run the plan asks for: the pass side at its rate.
            self.weights = np.array([1 / plan.rate, 1.0, 1 / plan.rate, 1.0])
            asked = truth * np.array([plan.rate, 1.0, plan.rate, 1.0])
            self.per_label = asked / asked.sum(axis=1, keepdims=True)

    def tables(self, added: Any) -> Any:
        """The tables the rule reads after ``added`` labels (..., draws, 4)."""
        plan = self.plan
        if plan is None:
            return self.now + added
        raw = np.asarray(plan.raw, dtype=float) + added
        cells = np.asarray(plan.weighted, dtype=float) + added * self.weights
        passing, failing = added[..., 0] + added[..., 2], added[..., 1] + added[..., 3]
        total = plan.weight_sum + passing / plan.rate + failing
        squares = plan.weight_squares + passing / plan.rate**2 + failing
        size = effective_pairs(cells, raw, total**2 / squares)
        return np.rint(cells * (size / cells.sum(axis=-1))[..., None])

    def shares(self, sizes: Any, start: Any) -> tuple[Any, Any]:
        """(the share of draws in which the rule holds, the draws' labels) at each of
        ``sizes`` more labels than ``start`` (draws, 4) holds: one path per draw, each
        size's labels adding to the previous size's."""
        steps = np.diff(np.concatenate([[0], sizes]))
        added = start + np.cumsum(self.rng.multinomial(steps[:, None], self.per_label), axis=0)
        ok = holds(self.rule, self.tables(added), self.spread, self.spread_at)
        return ok.mean(axis=-1), added

    def search(self) -> int:
        """The fewest labels m at which the rule holds in at least p of the draws:
        doubling from 1 to :data:`MAX_LABELS`, then within the bracket found, sizes
        :data:`_GRID` at a time on the same paths, until m is exact."""
        p = self.rule.decision_probability
        start = np.zeros((len(self.per_label), 4), dtype=np.int64)
        reached: Any = ()
        done = 0
        # Doubling, in two stretches: most answers lie below the first one's end.
        for stop in (_DOUBLING_FIRST, MAX_LABELS.bit_length()):
            doubling = 1 << np.arange(done, stop)
            share, added = self.shares(doubling - (0 if done == 0 else 1 << (done - 1)), start)
            reached = np.flatnonzero(share >= p)
            if len(reached):
                break
            start, done = added[-1], stop
        if not len(reached):
            rule = self.rule
            tnr = f" and TNR above min_tnr {rule.min_tnr:.2f}" if rule.min_tnr > 0 else ""
            raise Undefined(
                f"cannot with probability {p:.2f} at the current evidence: even "
                f"{MAX_LABELS:,} more labels make the rule hold in only {share.max():.0%} of "
                f"the futures the labels so far allow (a kappa above the threshold "
                f"{rule.kappa_threshold:.2f}{tnr} is not that likely for this gate yet)"
            )
        first = int(reached[0])
        high = int(doubling[first])
        if first:
            low, start = high // 2, added[first - 1]
        else:
            low = 0 if done == 0 else 1 << (done - 1)
        while high - low > 1:
            sizes = np.unique(np.linspace(low, high, _GRID + 1)[1:].round().astype(np.int64))
            share, added = self.shares(sizes - low, start)
            reached = np.flatnonzero(share >= p)
            if not len(reached):  # the paths' noise: the bracket's top it is
                return high
            first = int(reached[0])
            high = int(sizes[first])
            if first:
                low, start = int(sizes[first - 1]), added[first - 1]
        return high


#: Sizes tried at once within a bracket (each round narrows it this many times).
_GRID = 4
#: The doubling's first stretch: 1 to 2^(this - 1) more labels.
_DOUBLING_FIRST = 12
