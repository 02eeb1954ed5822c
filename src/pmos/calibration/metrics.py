"""Pairing the gate's verdicts with the PM's labels, and the calibration report.

The review gate is advisory until its verdicts agree with the PM's labels well
enough, measured like a classifier: pass is the positive class, each run is
one pair (its latest non-SKIPPED verdict against its latest PM label), and the
agreement is reported overall and per evaluator model, since swapping the
model behind the gate resets what its past agreement says.

Both ledgers are streamed once through the chain-checked reader (on a large
kit, the eval ledger in a child process while this one reads the labels);
what is kept is one small entry per distinct run, so memory grows with runs,
not records. The statistics themselves live in :mod:`pmos.stats`.
"""

from __future__ import annotations

import os
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from pmos.calibration import stats
from pmos.errors import BadInput, LedgerCorrupt
from pmos.gate.pass_fraction import MAX_WINDOW, PassFraction
from pmos.kit import Config, Kit
from pmos.store.layout import Store
from pmos.store.read import records
from pmos.store.rows import row_type
from pmos.store.vocabulary import PASS_SIDE, SKIPPED
from pmos.timestamps import parse_instant

#: Float outputs are rounded to this many decimals (the pass fraction on records uses 6 too).
DIGITS = 6


@dataclass(frozen=True)
class Scope:
    """Which runs a report covers. Filters apply to runs after pairing, so a
    run re-evaluated by another model counts for the model of its latest
    verdict only, exactly as in ``by_model``."""

    initiative: str | None = None
    model: str | None = None
    since: datetime | None = None

    @property
    def everything(self) -> bool:
        return self.initiative is None and self.model is None and self.since is None


def parse_since(text: str) -> datetime:
    """A date (``2026-01-31``, midnight UTC) or an RFC 3339 date-time; naive means UTC."""
    value = text.strip()
    try:
        if len(value) == 10:
            day = date.fromisoformat(value)
            return datetime(day.year, day.month, day.day, tzinfo=UTC)
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise BadInput(
            f"since: {text!r} is not a date; expected YYYY-MM-DD or an RFC 3339 date-time "
            "such as 2026-01-31T09:00:00Z"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


# ---------------------------------------------------------------- reading


@dataclass
class Verdicts:
    """What the eval-ledger reader keeps: the latest verdicts per run.

    ``latest`` maps a run to ``model code * 2 + (1 if the gate passed it)`` for
    its latest non-SKIPPED verdict, ``models[code]`` naming the evaluator
    model: a small int per run is the cheapest value to keep and to replace
    a million times. ``details`` (run -> initiative_id, recorded_at of that
    verdict) is kept only when a filter needs it. ``skips`` holds the latest
    SKIPPED verdict per run as (evaluator_model, initiative_id, recorded_at),
    the last two None unless a filter needs them.
    """

    models: list[str]
    latest: dict[str, int]
    details: dict[str, tuple[str, str]] | None
    skips: dict[str, tuple[str | None, str | None, str | None]]
    pass_fraction: PassFraction
    pass_fraction_by_model: dict[str, PassFraction]


@dataclass
class Labels:
    """The latest PM label per run (True for pass); ``details`` (run ->
    initiative_id or None, recorded_at) only when a filter needs it."""

    latest: dict[str, bool]
    details: dict[str, tuple[str | None, str]] | None


#: The fields each reader decodes (see :mod:`pmos.rows`); a filtered report also
#: needs where and when, which an unfiltered one does not pay for.
VERDICT_FIELDS = ("run_id", "verdict", "evaluator_model")
LABEL_FIELDS = ("run_id", "label")
FILTER_FIELDS = ("initiative_id", "recorded_at")


def read_verdicts(store: Store, scope: Scope, window: int) -> Verdicts:
    """Stream the eval ledger once; a later verdict of a run supersedes an earlier one.

    This loop runs once per record of the largest file pmos has, so it keeps
    to plain dict, list and deque operations; the pass fraction only needs the
    last ``window`` judged verdicts in scope, which are buffered and handed to
    :class:`PassFraction` (the one definition of the rule) at the end.
    """
    models: list[str] = []
    codes: dict[str, int] = {}
    latest: dict[str, int] = {}
    details: dict[str, tuple[str, str]] | None = None if scope.everything else {}
    skips: dict[str, tuple[str | None, str | None, str | None]] = {}
    recent: deque[str] = deque(maxlen=window)
    recent_by_model: list[deque[str]] = []
    pass_side = PASS_SIDE
    wanted = _record_filter(scope)
    fields = VERDICT_FIELDS if wanted is None else VERDICT_FIELDS + FILTER_FIELDS
    for row in records(store, "evals", row=row_type("evals", fields)):
        verdict = row.verdict
        run = row.run_id
        model = row.evaluator_model
        if verdict == SKIPPED:
            skips[run] = (
                (model, None, None)
                if wanted is None
                else (model, row.initiative_id, row.recorded_at)
            )
            continue
        code = codes.get(model)  # type: ignore[arg-type]
        if code is None:
            if model is None:  # the schema requires it of every judged verdict
                raise LedgerCorrupt(
                    str(store.path("evals")),
                    None,
                    f"a {verdict} verdict of run {run} names no evaluator_model",
                )
            code = codes[model] = len(models)
            models.append(model)
            recent_by_model.append(deque(maxlen=window))
        latest[run] = code * 2 + (verdict in pass_side)
        if wanted is not None:
            initiative, at = row.initiative_id, row.recorded_at
            details[run] = (initiative, at)  # type: ignore[index]
            if not wanted(model, initiative, at):
                continue
        recent.append(verdict)
        recent_by_model[code].append(verdict)
    return Verdicts(
        models,
        latest,
        details,
        skips,
        PassFraction.of(recent, window),
        {
            models[code]: PassFraction.of(buffer, window)
            for code, buffer in enumerate(recent_by_model)
            if buffer
        },
    )


def read_labels(store: Store, detailed: bool) -> Labels:
    """Stream the acceptance ledger once; a later label of a run supersedes an earlier one."""
    latest: dict[str, bool] = {}
    if not detailed:
        for row in records(store, "acceptances", row=row_type("acceptances", LABEL_FIELDS)):
            latest[row.run_id] = row.label == "pass"
        return Labels(latest, None)
    details: dict[str, tuple[str | None, str]] = {}
    detailed_row = row_type("acceptances", LABEL_FIELDS + FILTER_FIELDS)
    for row in records(store, "acceptances", row=detailed_row):
        run = row.run_id
        latest[run] = row.label == "pass"
        details[run] = (row.initiative_id, row.recorded_at)
    return Labels(latest, details)


def _record_filter(scope: Scope) -> Callable[[str | None, str | None, str], bool] | None:
    """Predicate (model, initiative, recorded_at) for a scope; None when it takes all."""
    if scope.everything:
        return None

    def wanted(model: str | None, initiative: str | None, recorded_at: str) -> bool:
        if scope.model is not None and model != scope.model:
            return False
        if scope.initiative is not None and initiative != scope.initiative:
            return False
        return scope.since is None or parse_instant(recorded_at) >= scope.since

    return wanted


#: An eval ledger at least this large is read in a child process while this
#: process reads the acceptances (and loads scikit-learn): two cores, about half
#: the wall time. Below it a fork costs more than it saves.
PARALLEL_MIN_BYTES = 16 << 20


def _read_and_pair(kit: Kit, scope: Scope, window: int) -> Paired:
    store = kit.store
    detailed = not scope.everything
    try:
        size = store.path("evals").stat().st_size
    except FileNotFoundError:
        size = 0
    if size < PARALLEL_MIN_BYTES or not hasattr(os, "fork"):
        return _pair(read_verdicts(store, scope, window), read_labels(store, detailed), scope)
    from pmos.store.forked import ForkedCall

    # The child reads the larger ledger, receives the labels read here, pairs
    # and sends back only the counts; this process loads scikit-learn meanwhile.
    child = ForkedCall(_read_verdicts_and_pair, store, scope, window, inbox=True)
    try:
        child.send(read_labels(store, detailed))
        stats.preload()
        return child.result()
    finally:
        child.cancel()


def _read_verdicts_and_pair(
    receive: Callable[[], Labels], store: Store, scope: Scope, window: int
) -> Paired:
    judged = read_verdicts(store, scope, window)
    return _pair(judged, receive(), scope)


# ---------------------------------------------------------------- pairing


class _Tally:
    """Counts for one group of runs (all, or one evaluator model)."""

    __slots__ = ("fn", "fp", "skipped", "tn", "tp", "unlabelled", "unlabelled_pass")

    def __init__(self) -> None:
        self.tp = self.fn = self.fp = self.tn = 0
        self.unlabelled = self.unlabelled_pass = self.skipped = 0

    def pair(self, gate_pass: int, pm_pass: bool, n: int = 1) -> None:
        if pm_pass:
            if gate_pass:
                self.tp += n
            else:
                self.fn += n
        elif gate_pass:
            self.fp += n
        else:
            self.tn += n

    def confusion(self) -> stats.Confusion:
        return stats.Confusion(tp=self.tp, fn=self.fn, fp=self.fp, tn=self.tn)


@dataclass
class Settings:
    kappa_threshold: float
    min_pairs: int
    window: int
    alarm: float


def compute_metrics(
    kit: Kit,
    *,
    window: int | None = None,
    initiative: str | None = None,
    model: str | None = None,
    since: datetime | None = None,
) -> dict[str, Any]:
    """The calibration report (see the README's "Calibration metrics" for every key)."""
    settings = settings_for(kit.config, window)
    scope = Scope(initiative, model, since)
    return metrics_report(_read_and_pair(kit, scope, settings.window), settings)


def metrics_from_readings(
    judged: Verdicts,
    labelled: Labels,
    config: Config,
    *,
    window: int | None = None,
    initiative: str | None = None,
    model: str | None = None,
    since: datetime | None = None,
) -> dict[str, Any]:
    """The calibration report from per-run readings made elsewhere (``pmos metrics
    --db`` builds them from SQL): the same pairing and statistics as :func:`compute_metrics`."""
    settings = settings_for(config, window)
    scope = Scope(initiative, model, since)
    return metrics_report(_pair(judged, labelled, scope), settings)


def settings_for(config: Config, window: int | None) -> Settings:
    """The settings a report uses: ``config``'s, with ``window`` (checked) if given."""
    if window is None:
        window = config.pass_fraction_window
    if isinstance(window, bool) or not isinstance(window, int) or not 1 <= window <= MAX_WINDOW:
        raise BadInput(
            f"window: must be a whole number of verdicts from 1 to {MAX_WINDOW:,}; got {window!r}"
        )
    return Settings(config.kappa_threshold, config.min_pairs, window, config.goodhart_alarm)


def metrics_report(paired: Paired, settings: Settings) -> dict[str, Any]:
    """Every key of the report, computed from the paired counts."""
    window = settings.window
    report = _group_report(paired.total, paired.pass_fraction, settings)
    report["kappa_threshold"] = settings.kappa_threshold
    report["pass_fraction_window"] = window
    report["labels_without_verdict"] = paired.labels_without_verdict
    report["by_model"] = {
        name: _group_report(
            tally,
            paired.pass_fraction_by_model.get(name) or PassFraction(window),
            settings,
        )
        for name, tally in sorted(paired.per_model.items())
    }
    order = [
        "pairs",
        "confusion",
        "observed_agreement",
        "kappa",
        "kappa_ci95",
        "kappa_ci_method",
        "tpr",
        "tnr",
        "pabak",
        "ac1",
        "pass_fraction",
        "pass_fraction_window",
        "goodhart_alarm",
        "kappa_threshold",
        "calibrated",
        "calibration_reason",
        "skipped",
        "unlabeled_verdicts",
        "labels_without_verdict",
        "corrected_pass_rate",
        "by_model",
        "undefined",
    ]
    return {key: report[key] for key in order}


@dataclass
class Paired:
    """What the report is computed from: the overall tally, one tally per
    evaluator model (a model appears when any run, skip or pass-fraction
    verdict in scope is its), the number of labelled runs without a
    non-SKIPPED verdict, and the pass fractions."""

    total: _Tally
    per_model: dict[str, _Tally]
    labels_without_verdict: int
    pass_fraction: PassFraction
    pass_fraction_by_model: dict[str, PassFraction]


def _pair(judged: Verdicts, labelled: Labels, scope: Scope) -> Paired:
    """Count every run in scope: its pair, or why it has none."""
    wanted = _record_filter(scope)
    total = _Tally()
    per_model: dict[str, _Tally] = {}

    def tally_of(name: str) -> _Tally:
        found = per_model.get(name)
        if found is None:
            found = per_model[name] = _Tally()
        return found

    models = judged.models
    labels = labelled.latest
    in_scope = judged.latest
    if wanted is not None:
        details = judged.details
        in_scope = {
            run: code
            for run, code in in_scope.items()
            if wanted(models[code >> 1], *details[run])  # type: ignore[index]
        }
    # One count per (model code and gate side, PM label or None): a few dozen
    # keys however many runs, counted in C rather than a Python loop per run.
    counts = Counter(zip(in_scope.values(), map(labels.get, in_scope), strict=True))
    for (code, label), n in counts.items():
        gate_pass = code & 1
        for t in (total, tally_of(models[code >> 1])):
            if label is None:
                t.unlabelled += n
                t.unlabelled_pass += gate_pass * n
            else:
                t.pair(gate_pass, label, n)
    for run, (skip_model, skip_initiative, at) in judged.skips.items():
        if run in judged.latest:
            continue
        if wanted is not None and not wanted(skip_model, skip_initiative, at):
            continue
        total.skipped += 1
        if skip_model is not None:
            tally_of(skip_model).skipped += 1
    unpaired = labels.keys() - judged.latest.keys()
    labels_without_verdict = len(unpaired)
    if wanted is not None:
        for run in unpaired:
            label_initiative, at = labelled.details[run]  # type: ignore[index]
            skip = judged.skips.get(run)
            label_model = skip[0] if skip else None
            initiative_of = label_initiative or (skip[1] if skip else None)
            labels_without_verdict -= not wanted(label_model, initiative_of, at)
    for name in judged.pass_fraction_by_model:
        tally_of(name)
    return Paired(
        total,
        per_model,
        labels_without_verdict,
        judged.pass_fraction,
        judged.pass_fraction_by_model,
    )


def _rounded(value: float) -> float:
    return round(value, DIGITS) + 0.0  # + 0.0 turns -0.0 into 0.0


def _group_report(tally: _Tally, fraction: PassFraction, settings: Settings) -> dict[str, Any]:
    """Every statistic of one group of runs; undefined ones are None with a reason."""
    c = tally.confusion()
    undefined: dict[str, str] = {}

    def attempt(name: str, compute: Callable[[], Any]) -> Any:
        try:
            return compute()
        except stats.Undefined as exc:
            undefined[name] = str(exc)
            return None

    kappa = attempt("kappa", lambda: stats.cohen_kappa(c))
    ci = None
    if kappa is None:
        undefined["kappa_ci95"] = "kappa is undefined"
    else:
        interval = attempt("kappa_ci95", lambda: stats.kappa_ci95(c, kappa))
        ci = None if interval is None else [_rounded(v) for v in interval]
    observed = attempt("observed_agreement", lambda: stats.observed_agreement(c))
    tpr = attempt("tpr", lambda: stats.tpr(c))
    tnr = attempt("tnr", lambda: stats.tnr(c))
    pabak = attempt("pabak", lambda: stats.pabak(c))
    ac1 = attempt("ac1", lambda: stats.gwet_ac1(c))
    corrected = attempt(
        "corrected_pass_rate",
        lambda: stats.corrected_pass_rate(tally.unlabelled_pass, tally.unlabelled, c),
    )
    pass_fraction = fraction.value
    if pass_fraction is None:
        undefined["pass_fraction"] = "no non-SKIPPED verdict in scope yet"
    alarm = pass_fraction is not None and fraction.full and pass_fraction >= settings.alarm
    calibrated, reason = _calibration(c, kappa, settings)
    return {
        "pairs": c.n,
        "confusion": c.as_dict(),
        "observed_agreement": _maybe(observed),
        "kappa": _maybe(kappa),
        "kappa_ci95": ci,
        "kappa_ci_method": stats.KAPPA_CI_METHOD,
        "tpr": _maybe(tpr),
        "tnr": _maybe(tnr),
        "pabak": _maybe(pabak),
        "ac1": _maybe(ac1),
        "pass_fraction": pass_fraction,
        "goodhart_alarm": alarm,
        "calibrated": calibrated,
        "calibration_reason": reason,
        "skipped": tally.skipped,
        "unlabeled_verdicts": tally.unlabelled,
        "corrected_pass_rate": None
        if corrected is None
        else {
            "value": _rounded(corrected.value),
            "ci95": [_rounded(v) for v in corrected.ci95],
            "apparent_pass_rate": _rounded(corrected.apparent),
            "unlabeled_runs": tally.unlabelled,
            "method": stats.corrected_rate_method(),
        },
        "undefined": undefined,
    }


def _maybe(value: float | None) -> float | None:
    return None if value is None else _rounded(value)


def _calibration(c: stats.Confusion, kappa: float | None, s: Settings) -> tuple[bool, str]:
    """The gate is calibrated only when kappa >= threshold, both PM classes occur
    and there are at least min_pairs pairs; otherwise say every condition that fails."""
    failing: list[str] = []
    if c.n == 0:
        failing.append("no labelled pairs yet")
    else:
        if c.pm_fail == 0:
            failing.append(
                "no negative class yet: TNR is undefined (every PM label among the pairs is pass)"
            )
        if c.pm_pass == 0:
            failing.append(
                "no positive class yet: TPR is undefined (every PM label among the pairs is fail)"
            )
        if c.n < s.min_pairs:
            failing.append(f"only {c.n} pair(s), at least {s.min_pairs} are needed")
        if kappa is not None and kappa < s.kappa_threshold:
            failing.append(f"kappa {kappa:.3f} is below the threshold {s.kappa_threshold:.2f}")
    if failing:
        return False, "; ".join(failing) + "."
    return True, (
        f"kappa {kappa:.3f} >= {s.kappa_threshold:.2f} over {c.n} pairs with both pass and "
        "fail PM labels."
    )
