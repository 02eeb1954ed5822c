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

Both functions work on the numbers as reported (rounded), so a reader can
redo every decision and every ``labels_needed`` by hand from the JSON.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from statistics import NormalDist
from typing import Any

import numpy as np

from pmos.calibration import sequential
from pmos.calibration.stats import Confusion, Undefined


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

    @property
    def decision_z(self) -> float:
        """The standard normal quantile of :attr:`decision_probability` (0 at 0.5)."""
        return NormalDist().inv_cdf(self.decision_probability)


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


def _ceil_ratio(numerator: float, denominator: float) -> int:
    return math.ceil(numerator / denominator - 1e-9)


#: The normal quantile a 95% interval's lower end lies below its estimate, in
#: standard errors (the scale of :func:`_grown`'s spread).
Z95 = 1.959964
#: The largest size a projection looks at.
MAX_SIZE = 10_000_000


def predictive_spread(size: Any, now: int) -> Any:
    """How far, in the standard errors of one pair, the estimate at ``size`` pairs may
    yet move from today's at ``now`` pairs: sqrt((size - now) / (size now)). Today's
    estimate is not the truth: the truth is as uncertain as today's interval says, and
    the pairs to come average only their own noise away."""
    # Deferred: numpy (about 0.2 s), for the statistics alone.
    import numpy as np

    size = np.asarray(size, dtype=float)
    return np.sqrt(np.maximum(size - now, 0.0) / (size * now))


def _grown(size: int, estimate: float, low: float, target: float, z: float = 0.0) -> int:
    """The size at which an interval's lower end, now ``low`` at ``size``, reaches
    ``target`` with probability p (``z`` = z(p); 0: the median), if its distance
    below the estimate shrinks as 1/sqrt(size): the fewest m with
    estimate - target >= s (1.96 / sqrt(m) + z sqrt((m - size) / (m size))), s the
    standard error of one pair, (estimate - low) sqrt(size) / 1.96. At z = 0,
    ceil(size ((estimate - low) / (estimate - target))^2); ``size`` when it already
    reaches it. Raises :class:`Undefined` when no size would, at probability p: the
    estimate is too uncertain today for more pairs to make a decision that likely."""
    # Deferred: numpy (about 0.2 s), for the statistics alone.
    import numpy as np

    if low >= target:
        return size
    if z <= 0.0:
        return _ceil_ratio(size * ((estimate - low) / (estimate - target)) ** 2, 1.0)
    unit = (estimate - low) * math.sqrt(size) / Z95
    sizes = np.unique(
        np.floor(np.concatenate([np.arange(size, size + 5000), np.geomspace(size, MAX_SIZE, 600)]))
    )
    needed = unit * (Z95 / np.sqrt(sizes) + z * predictive_spread(sizes, size))
    reached = np.flatnonzero(needed <= estimate - target)
    if not len(reached):
        raise Undefined(
            f"cannot with probability {NormalDist().cdf(z):.2f} at the current evidence: the "
            f"estimate {estimate:.3f} is too uncertain today for more pairs to bring its lower "
            f"bound to {target:.2f} that likely"
        )
    return int(sizes[reached[0]])


def _class_size(size: int, have: int, want: int, z: float) -> int:
    """The size at which a class now ``have`` of ``size`` holds ``want`` with
    probability p: labels only add to it, so ``size`` once it does; else size + d for
    the fewest d with d s - z sqrt(d s (1 - s) (1 + d / size)) >= want - have,
    s = have / size: the class's share of d more labels is binomial around a share
    known only to within sqrt(s (1 - s) / size). At z = 0 this is
    ceil(want * size / have), the median projection."""
    # Deferred: numpy (about 0.2 s), for the statistics alone.
    import numpy as np

    if have >= want:
        return size
    if z <= 0.0:
        return _ceil_ratio(want * size, have)
    share = have / size
    more = np.unique(np.floor(np.geomspace(1, MAX_SIZE, 2000)))
    spread = np.sqrt(more * share * (1.0 - share) * (1.0 + more / size))
    reached = np.flatnonzero(more * share - z * spread >= want - have)
    if not len(reached):
        raise Undefined(f"cannot reach {want} labels of a class now {have} of {size}")
    # The first size on the grid, then back down to the fewest that still holds.
    d = int(more[reached[0]])
    while (
        d > 1
        and (d - 1) * share - z * math.sqrt((d - 1) * share * (1 - share) * (1 + (d - 1) / size))
        >= want - have
    ):
        d -= 1
    return size + d


def labels_needed(rule: Rule, e: Evidence) -> int:
    """How many more labelled pairs, in the current proportions, the rule needs to
    hold with probability p (``rule.decision_probability``, z = z(p)).

    With n pairs now, kappa k and its interval's lower end L, TNR r with lower
    end R over f PM fail labels and p PM pass labels, the projected size is the
    largest of:

    * kappa: ceil(n ((k - L)(1 + z / 1.96) / (k - threshold))^2) (n when L already
      reaches it): the lower end must clear the threshold by z standard errors;
    * classes: the fewest m with m s - z sqrt(m s (1 - s)) >= min_per_class, for
      s = p / n and s = f / n;
    * TNR (when min_tnr > 0): the class size for f' PM fail labels, with
      f' = ceil(f ((r - R)(1 + z / 1.96) / (r - min_tnr))^2) (f when R already
      reaches min_tnr);
    * min_pairs;
    * under the sequential rule, the fewest pairs at which kappa's bound for
      repeated looks clears the threshold by z standard errors;

    and ``labels_needed`` is that size minus n (0 when the rule already holds).
    At p = 0.5 (z = 0) each is the median projection pmos used before.
    It assumes an interval's distance below its estimate shrinks as 1/sqrt(n),
    as it does for large n; the exact posterior interval at the projected size
    is checked against it in the tests. Raises :class:`Undefined` (the reason)
    when no number of pairs in the current proportions could do it.
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
    z = rule.decision_z
    sizes = [
        _grown(c.n, e.kappa, e.kappa_ci[0], t, z),
        _class_size(c.n, c.pm_pass, rule.min_per_class, z),
        _class_size(c.n, c.pm_fail, rule.min_per_class, z),
        rule.min_pairs,
    ]
    if rule.rule is CalibrationRule.SEQUENTIAL:
        reach = sequential.pairs_to_reach(
            e.kappa,
            c.tp,
            c.fn,
            c.fp,
            c.tn,
            t,
            first_look(rule),
            margin=lambda sizes, grown: (
                z * sequential.kappa_se(*grown) * np.sqrt(sizes) * predictive_spread(sizes, c.n)
            ),
        )
        if reach is None:
            raise Undefined(
                f"cannot at the current agreement: kappa {e.kappa:.3f} is too close to the "
                f"threshold {t:.2f} for the bound for repeated looks to reach it"
            )
        sizes.append(reach)
    if rule.min_tnr > 0:
        assert e.tnr is not None and e.tnr_ci is not None
        fails = _grown(c.pm_fail, e.tnr, e.tnr_ci[0], rule.min_tnr, z)
        sizes.append(_class_size(c.n, c.pm_fail, fails, z))
    return max(sizes) - c.n
