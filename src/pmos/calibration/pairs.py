"""Reading both ledgers and pairing each PM label with the verdict it judged.

This is the one place that reads verdicts and labels for calibration; the
statistics never see a record. The pairing rule (calibration-method.md,
"Pairs"):

* records of a run are ordered by (``recorded_at``, ``record_id``), never by
  their position in a file;
* a run's latest label judges the verdict :func:`pmos.gate.latest.judged_by`
  says: the one its ``gate_record_id`` names, else the latest judged verdict
  recorded before it, else nothing;
* that verdict and the label are the run's pair, dated by the label (when
  the PM judged). When a newer judged verdict exists, the label is
  *superseded*: it still pairs with what the PM saw, never with the newer
  verdict, and the run is in acceptance debt until the PM labels it again
  (``labels_superseded``). A label that judged nothing while the run now has
  a judged verdict (a PM label written before the first one) pairs with
  nothing, and the run is back in acceptance debt;
* a seeded known-bad case's answer key pairs with the case's latest judged
  verdict whenever it came, and is counted apart (``seeded_pairs``), never in
  the PM's pairs.

Both ledgers are streamed once each through the calibration reader
(:mod:`pmos.calibration.judged`), which keeps one compact column per field of
the pairs, not records.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from itertools import compress
from operator import attrgetter
from typing import Any, NamedTuple, cast

import numpy as np

from pmos._util.uncollected import uncollected
from pmos.calibration.judged import (
    BLIND_FIELDS,
    FILTER_FIELDS,
    LABEL_FIELDS,
    VERDICT_FIELDS,
    InScope,
    LatestLabels,
    LatestVerdicts,
    decode,
    in_batches,
    latest_labels,
    latest_verdicts,
)
from pmos.calibration.periods import By, assign_periods
from pmos.gate.latest import judged_choice
from pmos.gate.pass_fraction import PassFraction
from pmos.gate.screen import KitScreen
from pmos.kit import Kit
from pmos.store.layout import Store
from pmos.store.read import batches, loose_recalled, loose_values
from pmos.store.rows import row_type
from pmos.store.screening import Excluded, Exclusion, Screen
from pmos.timestamps import rfc3339

_RECORD_ID = attrgetter("record_id")


class ScoredPair(NamedTuple):
    """A labelled run's judged verdict (the one its label judges) and the label."""

    run_id: str
    evaluator_model: str
    #: The verdict's 0..1 score; None only where the verdict stored none.
    score: float | None
    gate_pass: bool
    pm_pass: bool
    #: "full" (written from a complete verdict) or "short" (the positional form).
    form: str


@dataclass(frozen=True)
class Scope:
    """Which runs a report covers. Filters apply to the verdict a run is counted
    by (its paired verdict, else its latest judged verdict), so a run
    re-evaluated by another model counts for one model only, exactly as in
    ``by_model``."""

    initiative: str | None = None
    model: str | None = None
    since: datetime | None = None

    @property
    def everything(self) -> bool:
        return self.initiative is None and self.model is None and self.since is None


def _wanted(scope: Scope) -> InScope | None:
    """Predicate (model, initiative, recorded_at key) for a scope; None when it takes all."""
    if scope.everything:
        return None
    since = None if scope.since is None else rfc3339(scope.since)

    def wanted(model: str | None, initiative: str | None, at: str) -> bool:
        if scope.model is not None and model != scope.model:
            return False
        if scope.initiative is not None and initiative != scope.initiative:
            return False
        return since is None or at >= since

    return wanted


@dataclass
class Verdicts:
    """What the eval-ledger reader keeps (:class:`pmos.calibration.judged.LatestVerdicts`)
    and the pass fractions of its last judged verdicts in scope."""

    judged: LatestVerdicts
    pass_fraction: PassFraction
    pass_fraction_by_model: dict[str, PassFraction]


def read_verdicts(
    store: Store | None,
    scope: Scope,
    window: int,
    *,
    rows: Iterable[Any] | None = None,
    screen: Screen | None = None,
    excluded: Excluded | None = None,
    tap: Callable[[list[Any] | None], None] | None = None,
) -> Verdicts:
    """Stream the eval ledger once (or ``rows`` read elsewhere) through the store's
    latest-per-run reader; the pass fraction (the gate's rule) is computed here.
    With a ``screen``, verdicts that break a writer rule are left out (``excluded``).
    ``tap`` sees every batch of rows on its way, then None once the ledger is
    read, before the fold's last steps (see :func:`read_and_pair`)."""
    wanted = _wanted(scope)
    fields = VERDICT_FIELDS + FILTER_FIELDS if wanted is not None else VERDICT_FIELDS
    if rows is None:
        row = row_type("evals", fields)
        read = batches(store, "evals", row=row, screen=screen, excluded=excluded)  # type: ignore[arg-type]
    else:
        read = in_batches(rows)
    if tap is not None:
        read = _tapped(read, tap)
    where = store.display("evals") if store is not None else "the evals table"
    judged = latest_verdicts(read, window=window, in_scope=wanted, where=where)
    return Verdicts(
        judged,
        PassFraction.of(judged.recent, window),
        {
            model: PassFraction.of(recent, window)
            for model, recent in judged.recent_by_model.items()
            if recent
        },
    )


def _tapped(
    batches: Iterable[list[Any]], tap: Callable[[list[Any] | None], None]
) -> Iterator[list[Any]]:
    for batch in batches:
        tap(batch)
        yield batch
    tap(None)


def read_labels(
    store: Store | None,
    detailed: bool,
    *,
    rows: Iterable[Any] | None = None,
    screen: Screen | None = None,
    excluded: Excluded | None = None,
) -> LatestLabels:
    """Each run's latest PM label, from the acceptance ledger (or ``rows``); with a
    ``screen``, labels that break a writer rule (a missing signature) are left out."""
    fields = LABEL_FIELDS + FILTER_FIELDS if detailed else LABEL_FIELDS
    if rows is None:
        row = row_type("acceptances", fields + BLIND_FIELDS)
        read = batches(store, "acceptances", row=row, screen=screen, excluded=excluded)  # type: ignore[arg-type]
    else:
        read = in_batches(rows)
    where = store.display("acceptances") if store is not None else "the acceptances table"
    return latest_labels(read, detailed=detailed, where=where)


# ---------------------------------------------------------------- pairing


@dataclass
class Paired:
    """The pairs in scope, one column per field, and what is counted beside them.

    ``model[i]`` indexes ``models``; ``period[i]`` indexes ``periods`` (by
    ``by``, or by month when no ``by`` was asked: drift is always reported).
    Counts per model are lists indexed like ``models``.
    """

    models: list[str]
    model: list[int] = field(default_factory=list)
    gate: list[int] = field(default_factory=list)
    pm: list[int] = field(default_factory=list)
    full: list[int] = field(default_factory=list)
    #: 1 where the pair's label was given blind (``pmos accept --blind``).
    blind: list[int] = field(default_factory=list)
    #: Each pair's weight under the labelling plan (:mod:`pmos.gate.plan`): 1 / the
    #: plan's inclusion probability where the label's recorded weight is the one
    #: the reader derives, else 1.
    weight: list[float] = field(default_factory=list)
    #: 1 where the pair's label followed the plan with a weight the reader derives.
    planned: list[int] = field(default_factory=list)
    #: Per model, pairs whose label claims a plan weight the reader does not derive.
    plan_refused: list[int] = field(default_factory=list)
    score: list[float | None] = field(default_factory=list)
    period: list[int] = field(default_factory=list)
    periods: list[Any] = field(default_factory=list)
    run_ids: list[str] | None = None
    #: Each pair's label time and run: the order the PM labelled them in (drift).
    label_ats: list[str] = field(default_factory=list)
    label_runs: list[str] = field(default_factory=list)
    unlabelled: list[int] = field(default_factory=list)
    unlabelled_pass: list[int] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)
    superseded: list[int] = field(default_factory=list)
    #: Judged runs whose latest judged verdict no label judges (``pmos queue``'s
    #: acceptance debt): never labelled, labelled before it, or a label superseded.
    acceptance_debt: list[int] = field(default_factory=list)
    #: Seeded known-bad cases paired with a judged verdict, and those the gate failed.
    seeded_pairs: list[int] = field(default_factory=list)
    seeded_caught: list[int] = field(default_factory=list)
    #: Skips by runs whose model is not known (the writer lets a skip omit it).
    skipped_unknown_model: int = 0
    labels_without_verdict: int = 0
    #: The evaluator model of the latest judged verdict in scope (None: none yet):
    #: the current model, whose own pairs decide the headline ``calibrated``.
    latest_model: str | None = None
    pass_fraction: PassFraction | None = None
    pass_fraction_by_model: dict[str, PassFraction] = field(default_factory=dict)
    #: Records left out because they break a writer rule (a screened read).
    excluded: list[Exclusion] = field(default_factory=list)


def _take(values: list[Any], rows: np.ndarray) -> list[Any]:
    return [values[i] for i in rows.tolist()]


def pair(
    verdicts: Verdicts,
    labels: LatestLabels,
    scope: Scope,
    by: By | None,
    *,
    with_runs: bool = False,
    plan_rate: float = 1.0,
) -> Paired:
    """Apply the pairing rule (module docstring) to every run in scope.

    ``plan_rate`` is the policy's ``calibration.plan_pass_side_rate``: a label's
    plan weight counts only when it is the weight :func:`pmos.gate.plan.plan_weight`
    gives the verdict it is paired with (it names that verdict, the verdict's draw
    is in the sample, the weight is 1 / the inclusion probability of its side).

    Column by column: each labelled run's latest judged verdict is found by
    the hash of its run id, the verdict its label names among the superseded
    ones by hashes (:meth:`Earlier.find`), and
    :func:`~pmos.gate.latest.judged_choice` is made for all labels at once.
    """
    wanted = _wanted(scope)
    judged = verdicts.judged
    models = list(judged.models)
    known = set(models)
    for name in [skip.model for skip in judged.skips.values()]:
        if name is not None and name not in known:
            known.add(name)
            models.append(name)
    count = len(models)
    out = Paired(models)
    model_of, full_of, passed_of = decode(judged.codes)
    earlier = judged.earlier
    earlier_model, earlier_full, earlier_passed = decode(earlier.codes)
    label_runs = np.fromiter(map(hash, labels.runs), dtype=np.int64, count=len(labels))
    position = judged.rows_of(label_runs)
    labelled = np.flatnonzero(position >= 0)  # labels of runs with a judged verdict
    current = position[labelled]  # and those verdicts
    label_ats = _take(labels.ats, labelled)
    current_ats = _take(judged.ats, current)
    # The pairing rule for every label at once: the verdict it names (the latest,
    # or a superseded one of its run), else the latest if recorded before it.
    # Record ids are compared by their 64-bit hashes, as the reader keeps them.
    names, gate_hashes = labels.names[labelled], labels.gate_hashes[labelled]
    names_current = names & (gate_hashes == judged.id_hashes[current])
    others = np.flatnonzero(names & ~names_current)
    found = np.full(len(labelled), -1, dtype=np.int64)
    if len(others):
        found[others] = earlier.find(judged.run_hashes[current[others]], gate_hashes[others])
    before = np.array(
        [v <= label for v, label in zip(current_ats, label_ats, strict=True)], dtype=bool
    )
    seeded = cast(np.ndarray, labels.seeded)[labelled]  # filled in by __post_init__
    takes_latest, named = judged_choice(names_current, found >= 0, before, seeded)
    nothing = ~takes_latest & ~named

    def subject(latest_values: np.ndarray, earlier_values: np.ndarray) -> np.ndarray:
        """Per label, a field of the verdict it is counted by (its pair, else the latest)."""
        values: np.ndarray = latest_values[current]
        if named.any():
            values[named] = earlier_values[found[named]]
        return values

    model = subject(model_of, earlier_model)
    in_scope = np.ones(len(labelled), dtype=bool)
    if wanted is not None:
        picked = named.tolist()
        found_rows = found.tolist()
        ats = [
            earlier.ats[f] if p else at  # type: ignore[index]
            for p, f, at in zip(picked, found_rows, current_ats, strict=True)
        ]
        initiatives = [
            earlier.initiatives[f] if p else judged.initiatives[c]  # type: ignore[index]
            for p, f, c in zip(picked, found_rows, current.tolist(), strict=True)
        ]
        in_scope = np.array(
            [
                wanted(models[m], i, at)
                for m, i, at in zip(model.tolist(), initiatives, ats, strict=True)
            ],
            dtype=bool,
        )
    superseded = np.bincount(model[in_scope & ~takes_latest], minlength=count)
    alone = in_scope & nothing
    unlabelled = np.bincount(model[alone], minlength=count)
    unlabelled_pass = np.bincount(model[alone & passed_of[current]], minlength=count)
    # A seeded case's answer key pairs like a label but is reported apart: it is not
    # the PM's judgement, so it never fills the PM's classes for the decision.
    with_key = in_scope & ~nothing & seeded
    gate_passed = subject(passed_of, earlier_passed)
    out.seeded_pairs = np.bincount(model[with_key], minlength=count).tolist()
    out.seeded_caught = np.bincount(model[with_key & ~gate_passed], minlength=count).tolist()
    paired = in_scope & ~nothing & ~seeded
    out.model = model[paired].tolist()
    out.gate = gate_passed[paired].astype(int).tolist()
    out.pm = labels.passed.astype(bool)[labelled][paired].astype(int).tolist()
    out.full = subject(full_of, earlier_full)[paired].astype(int).tolist()
    out.blind = cast(np.ndarray, labels.blind)[labelled][paired].astype(int).tolist()
    # The plan's weights, re-derived: never a label's word alone.
    claimed = labels.plan_weight[labelled]  # type: ignore[index]
    draws = labels.plan_draw[labelled]  # type: ignore[index]
    inclusion = np.where(gate_passed, plan_rate, 1.0)
    derived = 1.0 / inclusion
    holds = (
        (claimed > 0)
        & ((names_current & takes_latest) | named)
        & (draws < inclusion)
        & np.isclose(claimed, derived, rtol=1e-9, atol=0.0)
    )
    out.weight = np.where(holds, derived, 1.0)[paired].tolist()
    out.planned = holds[paired].astype(int).tolist()
    out.plan_refused = np.bincount(model[paired & (claimed > 0) & ~holds], minlength=count).tolist()
    scores = subject(judged.scores, earlier.scores)[paired].tolist()
    out.score = [None if s != s else s for s in scores]  # NaN stood for None
    rows = labelled[paired]
    times, runs = _take(labels.ats, rows), _take(labels.runs, rows)
    # Runs judged but never labelled.
    unjudged = ~np.isin(judged.run_hashes, label_runs)
    if wanted is not None and unjudged.any():
        rows_alone = np.flatnonzero(unjudged)
        inits = judged.initiatives or [None] * len(judged.ats)
        unjudged[rows_alone] = [
            wanted(models[model_of[r]], inits[r], judged.ats[r]) for r in rows_alone.tolist()
        ]
    never = np.bincount(model_of[unjudged], minlength=count)
    unlabelled += never
    # The queue's acceptance debt: judged runs whose latest judged verdict no label judges.
    out.acceptance_debt = (superseded + never).tolist()
    unlabelled_pass += np.bincount(model_of[unjudged & passed_of], minlength=count)
    skipped = [0] * count
    index = {name: i for i, name in enumerate(models)}
    skip_runs = np.fromiter(map(hash, judged.skips), dtype=np.int64, count=len(judged.skips))
    for skip, judged_row in zip(
        judged.skips.values(), judged.rows_of(skip_runs).tolist(), strict=True
    ):
        if judged_row >= 0:
            continue
        if wanted is not None and not wanted(skip.model, skip.initiative, skip.recorded_at):
            continue
        if skip.model is None:
            out.skipped_unknown_model += 1
        else:
            skipped[index[skip.model]] += 1
    for j in np.flatnonzero(position < 0).tolist():
        if wanted is not None:
            run_skip = judged.skips.get(labels.runs[j])
            skip_model = run_skip.model if run_skip else None
            own = None if labels.initiatives is None else labels.initiatives[j]
            initiative = own or (run_skip.initiative if run_skip else None)
            if not wanted(skip_model, initiative, labels.ats[j]):
                continue
        out.labels_without_verdict += 1
    out.unlabelled, out.unlabelled_pass = unlabelled.tolist(), unlabelled_pass.tolist()
    out.skipped, out.superseded = skipped, superseded.tolist()
    out.period, out.periods = assign_periods(times, runs, by or "month")
    out.label_ats, out.label_runs = times, runs
    out.run_ids = runs if with_runs else None
    out.latest_model = _latest_model(judged, models, model_of)
    out.pass_fraction = verdicts.pass_fraction
    out.pass_fraction_by_model = verdicts.pass_fraction_by_model
    return out


def _latest_model(judged: LatestVerdicts, models: list[str], model_of: np.ndarray) -> str | None:
    """The model of the latest judged verdict: the latest of the runs' latest ones, by
    (recorded_at, model name) (the record id is kept only as a hash, so a tie in time
    is broken by the name, the same in every process)."""
    if not judged.ats:
        return None
    codes = model_of.tolist()
    latest: tuple[str, str] = max(zip(judged.ats, (models[m] for m in codes), strict=True))
    return latest[1]


def read_and_pair(
    kit: Kit, scope: Scope, window: int, by: By | None, *, with_runs: bool = False
) -> Paired:
    """Read both ledgers once each, leaving out records that break a writer rule, and
    pair them, under the kit's labelling plan.

    Verdicts are read first: a corrupt eval ledger is then reported by the reader
    that reads it from the start, not by a label's look-up of its verdict. On its
    way, the verdict reader notes the verdicts the loose labels name: screening
    those labels needs them, and the eval ledger is then not read a second time
    (unless the screening cache holds every loose label's outcome: then none is
    screened, and nothing is noted).
    (Reading the two ledgers in two processes was tried: it bought nothing once
    the other core was busy, and held both ledgers' state at once.)
    """
    # Nothing read or folded here holds a reference cycle: the collector waits.
    with uncollected():
        return _read_and_pair(kit, scope, window, by, with_runs)


def _read_and_pair(kit: Kit, scope: Scope, window: int, by: By | None, with_runs: bool) -> Paired:
    store = kit.store
    screen = KitScreen(kit)
    excluded = Excluded()
    # With every loose label's screening recalled, none is screened: nothing to gather.
    recalled = loose_recalled(store, "acceptances", screen)
    named = set() if recalled else loose_values(store, "acceptances", "gate_record_id")
    found: dict[str, tuple[str, str]] = {}

    def note(batch: list[Any] | None) -> None:
        if batch is not None and named:  # a C loop over the batch; a step per row named
            for row in compress(batch, map(named.__contains__, map(_RECORD_ID, batch))):
                found.setdefault(row.record_id, (row.run_id, row.verdict))

    def answers() -> tuple[dict[str, tuple[str, str]], set[str]]:
        """The verdicts noted, and the ids vouched for: those read, and those in no
        record at all. A verdict the screen left out is not vouched for: the
        screen looks it up itself."""
        left_out = {e.record_id for e in excluded.items if e.kind == "evals"}
        return found, set() if None in left_out else named - left_out

    judged = read_verdicts(store, scope, window, screen=screen, excluded=excluded, tap=note)
    if named:
        screen.context.answer_verdicts(answers)
    labels = read_labels(store, not scope.everything, screen=screen, excluded=excluded)
    paired = pair(
        judged, labels, scope, by, with_runs=with_runs, plan_rate=kit.config.plan_pass_side_rate
    )
    paired.excluded = excluded.items
    return paired
