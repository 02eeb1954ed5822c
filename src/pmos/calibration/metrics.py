"""The calibration report: the gate's verdicts measured against the PM's labels.

The review gate is advisory until its verdicts agree with the PM's labels well
enough, measured like a classifier: pass is the positive class, each labelled
run is one pair (its label and the verdict that label judged, see
:mod:`pmos.calibration.pairs`), and the agreement is reported overall, per
evaluator model (swapping the model behind the gate resets what its past
agreement says) and, on request, per period.

Reading and pairing live in :mod:`pmos.calibration.pairs`; each table's
statistics, intervals and decision in :mod:`pmos.calibration.agreement`
(shared with ``pmos stats agreement``); the score statistics in
:mod:`pmos.calibration.scores`. This module assembles them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from pmos.calibration import drift, stats
from pmos.calibration.agreement import (
    TABLE_KEYS,
    maybe,
    pair_of,
    planned_labels_needed,
    rounded,
    table_reports,
)
from pmos.calibration.decision import Plan, Rule, require_blind
from pmos.calibration.pairs import Paired, Scope, ScoredPair, read_and_pair
from pmos.calibration.periods import MONTH, WEEK, By
from pmos.calibration.plan import recommended_rate
from pmos.calibration.scores import SCORE_KEYS, score_report
from pmos.calibration.weighting import (
    WEIGHTING_METHOD,
    Weighted,
    is_weighted,
    weighted,
)
from pmos.errors import BadInput
from pmos.gate.pass_fraction import MAX_WINDOW, PassFraction
from pmos.gate.rubric import load_rubric
from pmos.gate.signing import settings
from pmos.kit import Config, Kit
from pmos.store.read import batches
from pmos.store.rows import row_type

__all__ = [
    "DECISION_KEYS",
    "REPORT_KEYS",
    "ScoredPair",
    "calibration_decision",
    "compute_metrics",
    "parse_since",
    "report_and_pairs",
    "scored_pairs",
]


def _spliced(base: tuple[str, ...], before: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """``base`` with ``before[key]`` inserted ahead of each ``key`` of it.

    The report shares its table keys, in their order, with ``pmos stats
    agreement``; building the report's list from :data:`TABLE_KEYS` keeps that
    order in one place, and a key :data:`TABLE_KEYS` gains appears in both.
    """
    unknown = set(before) - set(base)
    if unknown:
        raise ValueError(f"not table keys: {sorted(unknown)}")
    return tuple(key for table_key in base for key in (*before.get(table_key, ()), table_key))


#: Keys of the whole report, in output order: :data:`TABLE_KEYS` with the
#: report's own keys in between. Each ``by_model`` entry has
#: :data:`GROUP_KEYS`, the same less the settings and the kit-wide counts.
REPORT_KEYS = (
    *_spliced(
        TABLE_KEYS,
        {
            "confusion": ("short_form_pairs",),
            "calibrated": (
                "pass_fraction",
                "pass_fraction_window",
                "goodhart_alarm",
                "kappa_threshold",
                "min_per_class",
                "min_tnr",
                "calibration_rule",
                "min_blind_labels",
                "plan_pass_side_rate",
                "decision_probability",
                "model",
                "model_source",
            ),
            "undefined": (
                "skipped",
                "unlabeled_verdicts",
                "labels_without_verdict",
                "labels_superseded",
                "acceptance_debt",
                "seeded_pairs",
                "seeded_caught",
                "blind_pairs",
                "blind_observed_agreement",
                "blind_kappa",
                "weighting",
                "corrected_pass_rate",
                *SCORE_KEYS,
                "periods",
                "drift",
                "drift_basis",
                "by_model",
            ),
        },
    ),
    "unsigned_labels",
    "excluded_records",
)
_KIT_WIDE = (
    "pass_fraction_window",
    "kappa_threshold",
    "min_per_class",
    "min_tnr",
    "calibration_rule",
    "min_blind_labels",
    "plan_pass_side_rate",
    "decision_probability",
    "model",
    "model_source",
    "labels_without_verdict",
    "by_model",
    "unsigned_labels",
    "excluded_records",
)
GROUP_KEYS = tuple(key for key in REPORT_KEYS if key not in _KIT_WIDE)


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


def _check_by(by: Any) -> By | None:
    if by is None or by in (WEEK, MONTH):
        named: str | None = by
        return named
    if isinstance(by, int) and not isinstance(by, bool) and by >= 1:
        return by
    raise BadInput(f"by: expected week, month or a whole number of pairs (at least 1); got {by!r}")


@dataclass
class _Columns:
    """The pairs as numpy columns, and what each group of them is."""

    model: Any
    gate: Any
    pm: Any
    full: Any
    score: Any
    period: Any
    blind: Any
    #: Each pair's weight under the labelling plan (1 without one).
    weight: Any = None


def compute_metrics(
    kit: Kit,
    *,
    window: int | None = None,
    initiative: str | None = None,
    model: str | None = None,
    since: datetime | None = None,
    by: By | None = None,
) -> dict[str, Any]:
    """The calibration report (see the README's "Calibration metrics" for every key).

    ``by`` (``"week"``, ``"month"`` or a number of pairs N) adds ``periods``,
    oldest first; without it ``periods`` is None and ``drift`` compares months.
    """
    config = kit.config
    window = _check_window(config, window)
    by = _check_by(by)
    paired = read_and_pair(kit, Scope(initiative, model, since), window, by)
    report = _report(paired, config, window, by, _rubric_threshold(kit), model)
    report["unsigned_labels"] = unsigned_pairs(kit, paired)
    return report


def unsigned_pairs(kit: Kit, paired: Paired) -> int | None:
    """How many pairs count a PM label with no signature: labels in the kit at
    signing's switch commit (``signing.required_since``, :mod:`pmos.gate.signing`),
    valid and counted, and shown as unsigned. None when the kit does not set
    ``required_since`` (with ``required: true`` every counted label is signed;
    without signing none is). A pair's label is known by its run and time, so
    only the run id, time and signature of each label are read, in one pass of
    the fast reader, and only in a kit that switched."""
    if settings(kit.config).required_since is None:
        return None
    wanted = set(zip(paired.label_runs, paired.label_ats, strict=True))
    if not wanted:
        return 0
    row = row_type("acceptances", ("run_id", "recorded_at", "signature"))
    unsigned: set[tuple[str, str]] = set()
    for batch in batches(kit.store, "acceptances", row=row):
        for label in batch:
            if label.signature is None and (label.run_id, label.recorded_at) in wanted:
                unsigned.add((label.run_id, label.recorded_at))
    return len(unsigned)


def metrics_from_rows(
    verdict_rows: Iterable[Any],
    label_rows: Iterable[Any],
    config: Config,
    *,
    window: int | None = None,
    initiative: str | None = None,
    model: str | None = None,
    since: datetime | None = None,
    by: By | None = None,
    rubric_threshold: float | None = None,
) -> dict[str, Any]:
    """The same report as :func:`compute_metrics`, from verdict and label rows read
    elsewhere (``pmos metrics --db`` reads them from SQL): the fields of
    :data:`pmos.gate.latest.VERDICT_FIELDS` and ``LABEL_FIELDS`` (plus the
    initiative when a scope filters), each oldest first. Pairing and every
    statistic are this module's. A database holds no rubric file: the rubric's
    threshold comes with the rows (``rubric_threshold``), or is undefined."""
    # Deferred: pmos.calibration.pairs imports numpy (about 0.2 s).
    from pmos.calibration.pairs import pair, read_labels, read_verdicts

    window = _check_window(config, window)
    by = _check_by(by)
    scope = Scope(initiative, model, since)
    judged = read_verdicts(None, scope, window, rows=verdict_rows)
    labelled = read_labels(None, not scope.everything, rows=label_rows)
    paired = pair(judged, labelled, scope, by, plan_rate=config.plan_pass_side_rate)
    rubric = (
        (float(rubric_threshold), None)
        if rubric_threshold is not None
        else (None, "no rubric threshold was synced for these kits (one kit: --kit K)")
    )
    return _report(paired, config, window, by, rubric, model)


#: What :func:`calibration_decision` returns: the headline decision and whose it is.
DECISION_KEYS = ("calibrated", "calibration_reason", "labels_needed", "model", "model_source")


def calibration_decision(
    verdict_rows: Iterable[Any], label_rows: Iterable[Any], config: Config
) -> dict[str, Any]:
    """The headline decision alone (:data:`DECISION_KEYS`), for a caller that holds the
    records of a revision (the merge gate reads the base's): verdict rows of
    :data:`pmos.calibration.judged.VERDICT_FIELDS` and label rows of ``LABEL_FIELDS``
    (``by`` included: a seeded answer key never counts as the PM's; ``blind`` when
    the rows have it), each oldest first, and that revision's pmos.yaml."""
    report = metrics_from_rows(verdict_rows, label_rows, config)
    return {key: report[key] for key in DECISION_KEYS}


def _check_window(config: Config, window: int | None) -> int:
    if window is None:
        window = config.pass_fraction_window
    if isinstance(window, bool) or not isinstance(window, int) or not 1 <= window <= MAX_WINDOW:
        raise BadInput(
            f"window: must be a whole number of verdicts from 1 to {MAX_WINDOW:,}; got {window!r}"
        )
    return window


def _report(
    paired: Paired,
    config: Config,
    window: int,
    by: By | None,
    rubric: tuple[float | None, str | None],
    scope_model: str | None = None,
) -> dict[str, Any]:
    rule = Rule.from_config(config)
    rubric_threshold, rubric_problem = rubric
    groups = _Groups(
        paired,
        rule,
        window,
        config.goodhart_alarm,
        by,
        config.min_blind_labels,
        config.plan_pass_side_rate,
    )
    report: dict[str, Any] = groups.report(None, rubric_threshold, rubric_problem)
    report["pass_fraction_window"] = window
    report["kappa_threshold"] = rule.kappa_threshold
    report["min_per_class"] = rule.min_per_class
    report["min_tnr"] = rule.min_tnr
    report["calibration_rule"] = str(rule.rule)
    report["min_blind_labels"] = config.min_blind_labels
    report["plan_pass_side_rate"] = config.plan_pass_side_rate
    report["decision_probability"] = rule.decision_probability
    report["labels_without_verdict"] = paired.labels_without_verdict
    report["excluded_records"] = [e.as_dict() for e in paired.excluded]
    report["unsigned_labels"] = None  # rows from elsewhere carry no signatures
    report["by_model"] = {
        name: groups.report(i, rubric_threshold, rubric_problem)
        for i, name in sorted(enumerate(paired.models), key=lambda item: item[1])
        if _in_scope(paired, i)
    }
    current, source = current_model(paired, config, scope_model)
    report["model"], report["model_source"] = current, source
    if current is not None:
        entry = report["by_model"].get(current)
        _headline(report, current, entry if entry and entry["pairs"] else None)
    return {key: report[key] for key in REPORT_KEYS}


#: The decision keys of the headline, taken from the current evaluator model's own table.
HEADLINE_KEYS = ("calibrated", "calibration_reason", "labels_needed")


def current_model(
    paired: Paired, config: Config, scope_model: str | None = None
) -> tuple[str | None, str | None]:
    """(the evaluator model whose own pairs decide the headline, where that came from).

    A report filtered to one model (``--model``) is that model's; else pmos.yaml's
    ``calibration.model``; else the model of the latest judged verdict in scope.
    None when no model is known (no judged verdict and no policy)."""
    if scope_model is not None:
        return scope_model, "scope"
    if config.calibration_model is not None:
        return config.calibration_model, "policy"
    if paired.latest_model is not None:
        return paired.latest_model, "latest-verdict"
    return None, None


def _headline(report: dict[str, Any], model: str, table: dict[str, Any] | None) -> None:
    """Replace the pooled decision with the current model's: a model change starts
    calibration again, so another model's pairs never make this one calibrated."""
    undefined = report["undefined"]
    undefined.pop("labels_needed", None)
    if table is None:
        report["calibrated"] = False
        report["calibration_reason"] = (
            f"evaluator model {model}: no labelled pairs of this model yet (a model change "
            "starts calibration again; other models are in by_model)."
        )
        report["labels_needed"] = None
        undefined["labels_needed"] = f"no labelled pairs of evaluator model {model} yet"
        return
    report["calibrated"] = table["calibrated"]
    report["calibration_reason"] = table["calibration_reason"]
    report["labels_needed"] = table["labels_needed"]
    if "labels_needed" in table["undefined"]:
        undefined["labels_needed"] = table["undefined"]["labels_needed"]


def _in_scope(paired: Paired, i: int) -> bool:
    """Whether evaluator model ``i`` has anything in scope: a pair, a run, a skip or a
    verdict in its pass-fraction window."""
    return (
        i in paired.model
        or any(
            column[i]
            for column in (
                paired.unlabelled,
                paired.skipped,
                paired.superseded,
                paired.seeded_pairs,
            )
        )
        or paired.models[i] in paired.pass_fraction_by_model
    )


def scored_pairs(
    kit: Kit,
    *,
    initiative: str | None = None,
    model: str | None = None,
    since: datetime | None = None,
) -> list[ScoredPair]:
    """Every labelled run in scope as its judged verdict (the one its label judges)
    and the label: the input of the score statistics, for readers such as a
    score histogram. Ordered by run id."""
    paired = read_and_pair(
        kit, Scope(initiative, model, since), kit.config.pass_fraction_window, None, with_runs=True
    )
    return _scored(paired)


def report_and_pairs(kit: Kit) -> tuple[dict[str, Any], list[ScoredPair]]:
    """:func:`compute_metrics` of the whole kit and :func:`scored_pairs`, from one read
    of its ledgers (``pmos sync`` stores both)."""
    window = _check_window(kit.config, None)
    paired = read_and_pair(kit, Scope(None, None, None), window, None, with_runs=True)
    pairs = _scored(paired)
    return _report(paired, kit.config, window, None, _rubric_threshold(kit)), pairs


def _scored(paired: Paired) -> list[ScoredPair]:
    assert paired.run_ids is not None
    found = [
        ScoredPair(
            run,
            paired.models[m],
            score,
            bool(gate),
            bool(pm),
            "full" if full else "short",
        )
        for run, m, score, gate, pm, full in zip(
            paired.run_ids,
            paired.model,
            paired.score,
            paired.gate,
            paired.pm,
            paired.full,
            strict=True,
        )
    ]
    return sorted(found, key=lambda p: p.run_id)


def _rubric_threshold(kit: Kit) -> tuple[float | None, str | None]:
    try:
        return load_rubric(kit.root, kit.config.default_rubric).threshold, None
    except BadInput as exc:
        return None, f"the default rubric cannot be read: {exc}"


class _Groups:
    """The report of every group of pairs (all, or one evaluator model), with the
    kappa intervals of all their tables computed in one batch."""

    def __init__(
        self,
        paired: Paired,
        rule: Rule,
        window: int,
        alarm: float,
        by: By | None,
        min_blind_labels: int = 0,
        plan_rate: float = 1.0,
    ):
        # Deferred: numpy (about 0.2 s), for the statistics alone.
        import numpy as np

        self.paired, self.rule, self.window, self.alarm, self.by = paired, rule, window, alarm, by
        self.min_blind_labels, self.plan_rate = min_blind_labels, plan_rate
        self.columns = _Columns(
            np.asarray(paired.model, dtype=np.int64),
            np.asarray(paired.gate, dtype=bool),
            np.asarray(paired.pm, dtype=bool),
            np.asarray(paired.full, dtype=bool),
            np.asarray([np.nan if s is None else s for s in paired.score], dtype=float),
            np.asarray(paired.period, dtype=np.int64),
            np.asarray(paired.blind or [0] * len(paired.model), dtype=bool),
            np.asarray(paired.weight or [1.0] * len(paired.model), dtype=float),
        )
        #: Per group (None: all), its weighted estimates when a plan weighs its pairs.
        self.weighted: dict[int | None, Weighted] = {}
        groups: list[int | None] = [None, *range(len(paired.models))]
        tables: list[stats.Confusion] = []
        self.where: dict[tuple[Any, ...], int] = {}

        def add(key: tuple[Any, ...], mask: Any) -> None:
            self.where[key] = len(tables)
            tables.append(_confusion(self.columns, mask))

        for group in groups:
            mask = self._mask(group)
            if is_weighted(self.columns.weight[mask]):
                # Under the plan the decision reads the weighted table, scaled to
                # its effective number of pairs (pmos.calibration.weighting).
                found = weighted(
                    self.columns.gate[mask], self.columns.pm[mask], self.columns.weight[mask]
                )
                self.weighted[group] = found
                self.where[("all", group)] = len(tables)
                tables.append(found.effective)
            else:
                add(("all", group), mask)
            add(("blind", group), mask & self.columns.blind)
            present = sorted(set(self.columns.period[mask].tolist()))
            for p in present:
                add(("period", group, p), mask & (self.columns.period == p))
        # Only each group's own table is projected (labels_needed): a blind or period
        # table's is never read, and a projection costs milliseconds.
        whole = {self.where[("all", group)] for group in groups}
        self.reports: list[dict[str, Any]] = [{} for _ in tables]
        for project in (True, False):
            chosen = [i for i in range(len(tables)) if (i in whole) is project]
            made = table_reports([tables[i] for i in chosen], rule, project=project)
            for i, made_report in zip(chosen, made, strict=True):
                self.reports[i] = made_report
        #: Decisions on tables, shared by every group's drift detector.
        self.decided: dict[tuple[int, ...], bool] = {}
        self.order: Any = None

    def _mask(self, group: int | None) -> Any:
        # Deferred: numpy (about 0.2 s), for the statistics alone.
        import numpy as np

        if group is None:
            return np.ones(len(self.columns.model), dtype=bool)
        return self.columns.model == group

    def _table(self, *key: Any) -> dict[str, Any]:
        return self.reports[self.where[key]]

    def report(
        self, group: int | None, rubric_threshold: float | None, rubric_problem: str | None
    ) -> dict[str, Any]:
        """Every statistic of one group; undefined ones are None with a reason."""
        paired = self.paired
        table = self._table("all", group)
        undefined = dict(table["undefined"])
        report = {k: v for k, v in table.items() if k != "undefined"}
        blind = self._table("blind", group)
        report["blind_pairs"] = blind["pairs"]
        report["blind_observed_agreement"] = blind["observed_agreement"]
        report["blind_kappa"] = blind["kappa"]
        if blind["kappa"] is None:
            why = blind["undefined"].get("kappa", "no blind labels among the pairs")
            undefined["blind_kappa"] = why if blind["pairs"] else "no blind labels among the pairs"
        if blind["observed_agreement"] is None:
            undefined["blind_observed_agreement"] = "no blind labels among the pairs"
        report["weighting"] = self._weighting(group, report, undefined)
        if self.min_blind_labels:
            report["calibrated"], report["calibration_reason"] = require_blind(
                self.min_blind_labels,
                blind["pairs"],
                report["calibrated"],
                report["calibration_reason"],
            )
        if group is None:
            fraction = paired.pass_fraction or PassFraction(self.window)
            skipped = sum(paired.skipped) + paired.skipped_unknown_model
            unlabelled, unlabelled_pass = sum(paired.unlabelled), sum(paired.unlabelled_pass)
            superseded = sum(paired.superseded)
            debt, seeded = sum(paired.acceptance_debt), sum(paired.seeded_pairs)
            caught = sum(paired.seeded_caught)
        else:
            name = paired.models[group]
            fraction = paired.pass_fraction_by_model.get(name) or PassFraction(self.window)
            skipped = paired.skipped[group]
            unlabelled, unlabelled_pass = paired.unlabelled[group], paired.unlabelled_pass[group]
            superseded = paired.superseded[group]
            debt, seeded = paired.acceptance_debt[group], paired.seeded_pairs[group]
            caught = paired.seeded_caught[group]
        pass_fraction = fraction.value
        if pass_fraction is None:
            undefined["pass_fraction"] = "no non-SKIPPED verdict in scope yet"
        report["pass_fraction"] = pass_fraction
        report["goodhart_alarm"] = (
            pass_fraction is not None and fraction.full and pass_fraction >= self.alarm
        )
        # Pairs whose judged verdict is of the short form (no dimensions): they count
        # in agreement like any other, and are told apart here (issue 11).
        report["short_form_pairs"] = int((self._mask(group) & ~self.columns.full).sum())
        report["skipped"] = skipped
        report["unlabeled_verdicts"] = unlabelled
        report["labels_superseded"] = superseded
        report["acceptance_debt"] = debt
        report["seeded_pairs"] = seeded
        report["seeded_caught"] = caught
        report["corrected_pass_rate"] = _corrected(
            unlabelled_pass, unlabelled, _table_confusion(table), undefined
        )
        mask = self._mask(group) & self.columns.full & ~_isnan(self.columns.score)
        report.update(
            score_report(
                self.columns.pm[mask],
                self.columns.score[mask],
                rubric_threshold,
                undefined,
                rubric_problem,
            )
        )
        report["periods"] = self._periods(group) if self.by is not None else None
        report["drift"], report["drift_basis"] = self._drift(group, undefined)
        report["undefined"] = undefined
        return {key: report[key] for key in GROUP_KEYS}

    def _weighting(
        self, group: int | None, report: dict[str, Any], undefined: dict[str, str]
    ) -> dict[str, Any]:
        """The ``weighting`` block: how the group's pairs were weighed. Under a plan (a
        pass-side rate below 1, or weighted pairs) ``labels_needed`` is projected for
        labels to come under the plan, in labels (:class:`pmos.calibration.decision.Plan`)."""
        mask = self._mask(group)
        labelled = int(mask.sum())
        paired = self.paired
        planned = sum(
            1
            for m, p in zip(paired.model, paired.planned or [], strict=False)
            if p and (group is None or m == group)
        )
        refused = sum(paired.plan_refused) if group is None else paired.plan_refused[group]
        weights = self.columns.weight[mask]
        block: dict[str, Any] = {
            "weighted": group in self.weighted,
            "method": WEIGHTING_METHOD if group in self.weighted else "unweighted",
            "labelled_pairs": labelled,
            "plan_pairs": planned,
            "plan_weights_refused": refused,
            "weight_total": rounded(float(weights.sum())),
            "effective_pairs": None,
            "confusion": None,
            "kappa": None,
            "recommended_pass_side_rate": None,
        }
        found = self.weighted.get(group)
        if labelled and (found is not None or self.plan_rate < 1.0):
            raw = _confusion(self.columns, mask)
            cells = (raw.tp, raw.fn, raw.fp, raw.tn)
            plan = Plan(
                self.plan_rate,
                cells,
                (float(raw.tp), float(raw.fn), float(raw.fp), float(raw.tn))
                if found is None
                else found.cells,
                float(weights.sum()),
                float((weights**2).sum()),
            )
            planned_labels_needed(report, undefined, self.rule, plan)
        if found is None:
            c = report["confusion"]
            block["recommended_pass_side_rate"] = recommended_rate(
                c["tp"], c["fn"], c["fp"], c["tn"]
            )
            return block
        block["recommended_pass_side_rate"] = recommended_rate(*found.cells)
        block["effective_pairs"] = rounded(found.effective_pairs)
        block["confusion"] = dict(
            zip(("tp", "fn", "fp", "tn"), (rounded(v) for v in found.cells), strict=True)
        )
        block["kappa"] = maybe(found.kappa)
        return block

    def _present(self, group: int | None) -> list[int]:
        return sorted(set(self.columns.period[self._mask(group)].tolist()))

    def _periods(self, group: int | None) -> list[dict[str, Any]]:
        out = []
        for p in self._present(group):
            table = self._table("period", group, p)
            span = self.paired.periods[p]
            c = table["confusion"]
            pairs = table["pairs"]
            out.append(
                {
                    "period": span.name,
                    "start": span.start,
                    "end": span.end,
                    "pairs": pairs,
                    "kappa": table["kappa"],
                    "kappa_ci95": table["kappa_ci95"],
                    "tpr": table["tpr"],
                    "tnr": table["tnr"],
                    "pass_fraction": rounded((c["tp"] + c["fp"]) / pairs) if pairs else None,
                }
            )
        return out

    def _drift(
        self, group: int | None, undefined: dict[str, str]
    ) -> tuple[bool | None, dict[str, Any] | None]:
        """The frozen-baseline CUSUM of :mod:`pmos.calibration.drift` over the group's
        pairs in the order the PM labelled them."""
        # Deferred: numpy (about 0.2 s), for the statistics alone.
        import numpy as np

        if self.order is None:  # every pair in label order, once for all groups
            ats, runs = self.paired.label_ats, self.paired.label_runs
            self.order = np.asarray(
                sorted(range(len(ats)), key=lambda i: (ats[i], runs[i])), dtype=np.int64
            )
        ordered = self.order[self._mask(group)[self.order]]
        found = drift.detect(
            self.columns.gate[ordered], self.columns.pm[ordered], self.rule, self.decided
        )
        if found.undefined is not None:
            undefined["drift"] = found.undefined
        return found.drift, found.basis


def _isnan(values: Any) -> Any:
    # Deferred: numpy (about 0.2 s), for the statistics alone.
    import numpy as np

    return np.isnan(values)


def _confusion(columns: _Columns, mask: Any) -> stats.Confusion:
    gate, pm = columns.gate[mask], columns.pm[mask]
    return stats.Confusion(
        tp=int((gate & pm).sum()),
        fn=int((~gate & pm).sum()),
        fp=int((gate & ~pm).sum()),
        tn=int((~gate & ~pm).sum()),
    )


def _table_confusion(table: dict[str, Any]) -> stats.Confusion:
    return stats.Confusion(**table["confusion"])


def _corrected(
    unlabelled_pass: int, unlabelled: int, c: stats.Confusion, undefined: dict[str, str]
) -> dict[str, Any] | None:
    try:
        corrected = stats.corrected_pass_rate(unlabelled_pass, unlabelled, c)
    except stats.Undefined as exc:
        undefined["corrected_pass_rate"] = str(exc)
        return None
    return {
        "value": rounded(corrected.value),
        "ci95": pair_of(corrected.ci95),
        "apparent_pass_rate": rounded(corrected.apparent),
        "unlabeled_runs": unlabelled,
        "method": stats.corrected_rate_method(),
    }
