"""Every agreement statistic pmos reports for one 2x2 table, with intervals and the decision.

One function serves ``pmos metrics`` (the overall table, each evaluator
model's, each period's) and ``pmos stats agreement`` (tables a team types in
to plan), so the two can never disagree about a table. It takes many tables
at once because the kappa interval is computed for all of them in one
vectorised pass (:func:`pmos.calibration.intervals.kappa_intervals`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import orjson

from pmos.calibration import intervals, sequential, stats
from pmos.calibration.decision import (
    Evidence,
    Plan,
    Rule,
    decide,
    first_look,
    labels_needed,
    point_meets_threshold,
)
from pmos.calibration.stats import Confusion, Undefined
from pmos.errors import BadInput

#: Float outputs are rounded to this many decimals (the pass fraction on records uses 6 too).
DIGITS = 6

#: The keys of one table's report, in output order.
TABLE_KEYS = (
    "pairs",
    "confusion",
    "observed_agreement",
    "kappa",
    "kappa_ci95",
    "kappa_ci_method",
    "kappa_point_meets_threshold",
    "kappa_sequential_low",
    "kappa_sequential_alpha",
    "tpr",
    "tpr_ci95",
    "tnr",
    "tnr_ci95",
    "pabak",
    "ac1",
    "calibrated",
    "calibration_reason",
    "labels_needed",
    "undefined",
)


def rounded(value: float) -> float:
    return round(value, DIGITS) + 0.0  # + 0.0 turns -0.0 into 0.0


def maybe(value: float | None) -> float | None:
    return None if value is None else rounded(value)


def pair_of(interval: tuple[float, float] | None) -> list[float] | None:
    return None if interval is None else [rounded(interval[0]), rounded(interval[1])]


def table_reports(
    tables: Sequence[Confusion], rule: Rule, *, project: bool = True
) -> list[dict[str, Any]]:
    """The report of each table (keys :data:`TABLE_KEYS`); undefined values are None
    with their reason under ``undefined``. ``project=False`` leaves ``labels_needed``
    out (None, :data:`NOT_PROJECTED`): the projection costs milliseconds a table, and
    a caller that reads only the decision (drift, periods, simulations) needs none."""
    kappas: list[float | None] = []
    reasons: list[dict[str, str]] = []
    for c in tables:
        undefined: dict[str, str] = {}
        kappas.append(_attempt(undefined, "kappa", partial(stats.cohen_kappa, c)))
        reasons.append(undefined)
    defined = [
        (c.tp, c.fn, c.fp, c.tn) for c, k in zip(tables, kappas, strict=True) if k is not None
    ]
    found = dict(zip(defined, intervals.kappa_intervals(defined), strict=True))
    return [
        _one(c, kappa, found.get((c.tp, c.fn, c.fp, c.tn)), undefined, rule, project)
        for c, kappa, undefined in zip(tables, kappas, reasons, strict=True)
    ]


def table_report(c: Confusion, rule: Rule) -> dict[str, Any]:
    return table_reports([c], rule)[0]


#: ``labels_needed``'s reason in a report made with ``project=False``.
NOT_PROJECTED = "not projected for this table"


def evidence_of(report: dict[str, Any], undefined: dict[str, str]) -> Evidence:
    """What the decision read for a report of :func:`table_reports`, from the report
    and its reasons (its ``undefined``)."""
    ci, tnr_ci = report["kappa_ci95"], report["tnr_ci95"]
    return Evidence(
        Confusion(**report["confusion"]),
        report["kappa"],
        None if ci is None else (ci[0], ci[1]),
        report["tnr"],
        None if tnr_ci is None else (tnr_ci[0], tnr_ci[1]),
        undefined.get("kappa"),
        report["kappa_sequential_low"],
        report["kappa_sequential_alpha"],
    )


def planned_labels_needed(
    report: dict[str, Any], undefined: dict[str, str], rule: Rule, plan: Plan
) -> None:
    """Redo a report's ``labels_needed`` for labels to come under ``plan`` (in labels,
    not effective pairs), its reason into ``undefined``: kept where it is 0 or
    undefined, which the plan does not change."""
    if not report["labels_needed"]:
        return
    evidence = evidence_of(report, undefined)
    report["labels_needed"] = _attempt(
        undefined, "labels_needed", lambda: labels_needed(rule, evidence, plan)
    )


def _attempt(undefined: dict[str, str], name: str, compute: Callable[[], Any]) -> Any:
    try:
        return compute()
    except Undefined as exc:
        undefined[name] = str(exc)
        return None


def _wilson(
    undefined: dict[str, str], name: str, hits: int, total: int, rate: float | None
) -> list[float] | None:
    if rate is None:
        undefined[name] = f"{name.removesuffix('_ci95').upper()} is undefined"
        return None
    return pair_of(intervals.wilson(hits, total))


def _one(
    c: Confusion,
    kappa: float | None,
    interval: tuple[float, float] | None,
    undefined: dict[str, str],
    rule: Rule,
    project: bool = True,
) -> dict[str, Any]:
    kappa = maybe(kappa)
    kappa_ci = pair_of(interval)
    if kappa is None:
        undefined["kappa_ci95"] = "kappa is undefined"
    tpr = maybe(_attempt(undefined, "tpr", lambda: stats.tpr(c)))
    tnr = maybe(_attempt(undefined, "tnr", lambda: stats.tnr(c)))
    tpr_ci = _wilson(undefined, "tpr_ci95", c.tp, c.pm_pass, tpr)
    tnr_ci = _wilson(undefined, "tnr_ci95", c.tn, c.pm_fail, tnr)
    meets = point_meets_threshold(rule, kappa)
    if meets is None:
        undefined["kappa_point_meets_threshold"] = "kappa is undefined"
    bound = alpha = None
    if kappa is None:
        undefined["kappa_sequential_low"] = "kappa is undefined"
    else:
        bound, alpha = sequential.lower_bound_of(kappa, c.tp, c.fn, c.fp, c.tn, first_look(rule))
        bound, alpha = rounded(bound), float(f"{alpha:.6g}")
    evidence = Evidence(
        c,
        kappa,
        None if kappa_ci is None else (kappa_ci[0], kappa_ci[1]),
        tnr,
        None if tnr_ci is None else (tnr_ci[0], tnr_ci[1]),
        undefined.get("kappa"),
        bound,
        alpha,
    )
    calibrated, reason = decide(rule, evidence)
    if project:
        needed = _attempt(undefined, "labels_needed", lambda: labels_needed(rule, evidence))
    else:
        needed, undefined["labels_needed"] = None, NOT_PROJECTED
    report = {
        "pairs": c.n,
        "confusion": c.as_dict(),
        "observed_agreement": maybe(
            _attempt(undefined, "observed_agreement", lambda: stats.observed_agreement(c))
        ),
        "kappa": kappa,
        "kappa_ci95": kappa_ci,
        "kappa_ci_method": intervals.KAPPA_CI_METHOD,
        "kappa_point_meets_threshold": meets,
        "kappa_sequential_low": bound,
        "kappa_sequential_alpha": alpha,
        "tpr": tpr,
        "tpr_ci95": tpr_ci,
        "tnr": tnr,
        "tnr_ci95": tnr_ci,
        "pabak": maybe(_attempt(undefined, "pabak", lambda: stats.pabak(c))),
        "ac1": maybe(_attempt(undefined, "ac1", lambda: stats.gwet_ac1(c))),
        "calibrated": calibrated,
        "calibration_reason": reason,
        "labels_needed": needed,
    }
    report["undefined"] = undefined
    return report


#: The cells a table line must give, and nothing else.
CELLS = ("tp", "fn", "fp", "tn")
#: The largest count accepted in a cell: far beyond any kit, small enough that
#: every statistic stays exact in floating point.
MAX_COUNT = 10**12


def parse_tables(data: bytes, *, source: str) -> list[tuple[int, Confusion]]:
    """(line number, table) for each JSON line ``{"tp": .., "fn": .., "fp": .., "tn": ..}``;
    blank lines are skipped. Any bad line is refused (BadInput naming it):
    nothing is computed from an input that is partly wrong."""
    tables: list[tuple[int, Confusion]] = []
    problems: list[str] = []
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            problems.append(f"line {number}: not JSON: {exc}")
            continue
        if not isinstance(value, dict):
            problems.append(f"line {number}: expected an object with {', '.join(CELLS)}")
            continue
        missing = [k for k in CELLS if k not in value]
        unknown = sorted(str(k) for k in value if k not in CELLS)
        wrong = [
            k
            for k in CELLS
            if k in value
            and (
                not isinstance(value[k], int)
                or isinstance(value[k], bool)
                or not 0 <= value[k] <= MAX_COUNT
            )
        ]
        if missing or unknown or wrong:
            parts = []
            if missing:
                parts.append(f"missing {', '.join(missing)}")
            if unknown:
                parts.append(f"unknown key(s) {', '.join(unknown)}")
            if wrong:
                parts.append(f"{', '.join(wrong)} must be whole numbers from 0 to {MAX_COUNT:,}")
            problems.append(f"line {number}: {'; '.join(parts)}")
            continue
        tables.append((number, Confusion(**{k: value[k] for k in CELLS})))
    if problems:
        shown = problems[:20]
        more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
        lines = "\n".join(f"  - {p}" for p in shown)
        raise BadInput(f"{source}: {len(problems)} bad table line(s):\n{lines}{more}")
    if not tables:
        raise BadInput(f"{source}: no tables; give one JSON object per line, {_EXAMPLE}")
    return tables


_EXAMPLE = '{"tp": 12, "fn": 1, "fp": 2, "tn": 9}'
