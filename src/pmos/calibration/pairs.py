"""Reading both ledgers and pairing each PM label with the verdict it judged.

This is the one place that reads verdicts and labels for calibration; the
statistics never see a record. The pairing rule (calibration-method.md,
"Pairs"):

* records of a run are ordered by (``recorded_at``, ``record_id``), never by
  their position in a file;
* a run's latest label judges the verdict :func:`pmos.store.latest.judged_by`
  says: the one its ``gate_record_id`` names, else the latest judged verdict
  recorded before it, else nothing;
* that verdict and the label are the run's pair, dated by the label (when
  the PM judged). When a newer judged verdict exists, the label is
  *superseded*: it still pairs with what the PM saw, never with the newer
  verdict, and the run is in acceptance debt until the PM labels it again
  (``labels_superseded``). A label that judged nothing while the run now has
  a judged verdict pairs with nothing.

Both ledgers are streamed once through the store's latest-per-run reader
(:mod:`pmos.store.latest`), on a large kit the eval ledger in a child process
while this one reads the labels. The child returns one compact column per
field of the pairs, not records.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from pmos.calibration.periods import By, assign_periods
from pmos.gate.pass_fraction import PassFraction
from pmos.gate.screen import KitScreen
from pmos.kit import Kit
from pmos.store.latest import (
    FILTER_FIELDS,
    LABEL_FIELDS,
    VERDICT_FIELDS,
    InScope,
    Label,
    LatestVerdicts,
    instant_key,
    judged_by,
    latest_labels,
    latest_verdicts,
    named_earlier,
)
from pmos.store.layout import Store
from pmos.store.read import records, stored_bytes
from pmos.store.rows import row_type
from pmos.store.screening import Excluded, Exclusion, Screen


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
    since = None if scope.since is None else instant_key(scope.since.isoformat())

    def wanted(model: str | None, initiative: str | None, at: str) -> bool:
        if scope.model is not None and model != scope.model:
            return False
        if scope.initiative is not None and initiative != scope.initiative:
            return False
        return since is None or at >= since

    return wanted


@dataclass
class Verdicts:
    """What the eval-ledger reader keeps (:class:`pmos.store.latest.LatestVerdicts`)
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
) -> Verdicts:
    """Stream the eval ledger once (or ``rows`` read elsewhere) through the store's
    latest-per-run reader; the pass fraction (the gate's rule) is computed here.
    With a ``screen``, verdicts that break a writer rule are left out (``excluded``)."""
    wanted = _wanted(scope)
    fields = VERDICT_FIELDS + FILTER_FIELDS if wanted is not None else VERDICT_FIELDS
    if rows is None:
        row = row_type("evals", fields)
        rows = records(store, "evals", row=row, screen=screen, excluded=excluded)  # type: ignore[arg-type]
    where = store.display("evals") if store is not None else "the evals table"
    judged = latest_verdicts(rows, window=window, in_scope=wanted, where=where)
    return Verdicts(
        judged,
        PassFraction.of(judged.recent, window),
        {
            model: PassFraction.of(recent, window)
            for model, recent in judged.recent_by_model.items()
            if recent
        },
    )


def read_labels(
    store: Store | None,
    detailed: bool,
    *,
    rows: Iterable[Any] | None = None,
    screen: Screen | None = None,
    excluded: Excluded | None = None,
) -> dict[str, Label]:
    """Each run's latest PM label, from the acceptance ledger (or ``rows``); with a
    ``screen``, labels that break a writer rule (a missing signature) are left out."""
    fields = LABEL_FIELDS + FILTER_FIELDS if detailed else LABEL_FIELDS
    if rows is None:
        row = row_type("acceptances", fields)
        rows = records(store, "acceptances", row=row, screen=screen, excluded=excluded)  # type: ignore[arg-type]
    where = store.display("acceptances") if store is not None else "the acceptances table"
    return latest_labels(rows, detailed=detailed, where=where)


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
    score: list[float | None] = field(default_factory=list)
    period: list[int] = field(default_factory=list)
    periods: list[Any] = field(default_factory=list)
    run_ids: list[str] | None = None
    unlabelled: list[int] = field(default_factory=list)
    unlabelled_pass: list[int] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)
    superseded: list[int] = field(default_factory=list)
    #: Skips by runs whose model is not known (the writer lets a skip omit it).
    skipped_unknown_model: int = 0
    labels_without_verdict: int = 0
    pass_fraction: PassFraction | None = None
    pass_fraction_by_model: dict[str, PassFraction] = field(default_factory=dict)
    #: Records left out because they break a writer rule (a screened read).
    excluded: list[Exclusion] = field(default_factory=list)


def pair(
    verdicts: Verdicts,
    labels: dict[str, Label],
    scope: Scope,
    by: By | None,
    *,
    with_runs: bool = False,
) -> Paired:
    """Apply the pairing rule (module docstring) to every run in scope."""
    wanted = _wanted(scope)
    judged = verdicts.judged
    models = list(judged.models)
    known = set(models)
    for name in [skip.model for skip in judged.skips.values()]:
        if name is not None and name not in known:
            known.add(name)
            models.append(name)
    index = {name: i for i, name in enumerate(models)}
    out = Paired(models)
    unlabelled = [0] * len(models)
    unlabelled_pass = [0] * len(models)
    skipped = [0] * len(models)
    superseded = [0] * len(models)
    latest = judged.latest
    named = named_earlier(judged, labels)
    times: list[str] = []
    runs: list[str] = []
    for run, label in labels.items():
        current = latest.get(run)
        if current is None:
            continue  # counted below with the labels that have no verdict
        gate_id = label.gate_record_id
        earlier = None if gate_id is None else named.get(gate_id)
        if earlier is not None and earlier.run != current.run:
            earlier = None  # another run's verdict with the same id: not this label's
        paired = judged_by(label, current, earlier)
        subject = current if paired is None else paired
        if wanted is not None and not wanted(
            subject.model, subject.initiative, subject.recorded_at
        ):
            continue
        i = index[subject.model]
        if paired is not current:
            superseded[i] += 1
        if paired is None:
            unlabelled[i] += 1
            unlabelled_pass[i] += current.passed
            continue
        out.model.append(i)
        out.gate.append(int(paired.passed))
        out.pm.append(int(label.passed))
        out.full.append(int(paired.full))
        out.score.append(paired.score)
        times.append(label.recorded_at)
        runs.append(run)
    for run, current in latest.items():
        if run in labels:
            continue
        if wanted is not None and not wanted(
            current.model, current.initiative, current.recorded_at
        ):
            continue
        unlabelled[index[current.model]] += 1
        unlabelled_pass[index[current.model]] += current.passed
    for run, skip in judged.skips.items():
        if run in latest:
            continue
        if wanted is not None and not wanted(skip.model, skip.initiative, skip.recorded_at):
            continue
        if skip.model is None:
            out.skipped_unknown_model += 1
        else:
            skipped[index[skip.model]] += 1
    for run, label in labels.items():
        if run in latest:
            continue
        if wanted is not None:
            skip = judged.skips.get(run)
            skip_model = skip.model if skip else None
            initiative = label.initiative or (skip.initiative if skip else None)
            if not wanted(skip_model, initiative, label.recorded_at):
                continue
        out.labels_without_verdict += 1
    out.unlabelled, out.unlabelled_pass = unlabelled, unlabelled_pass
    out.skipped, out.superseded = skipped, superseded
    out.period, out.periods = assign_periods(times, runs, by or "month")
    out.run_ids = runs if with_runs else None
    out.pass_fraction = verdicts.pass_fraction
    out.pass_fraction_by_model = verdicts.pass_fraction_by_model
    return out


#: An eval ledger at least this large is read in a child process while this
#: process reads the acceptances (and loads scikit-learn): two cores, about half
#: the wall time. Below it a fork costs more than it saves.
PARALLEL_MIN_BYTES = 16 << 20


def read_and_pair(
    kit: Kit, scope: Scope, window: int, by: By | None, *, with_runs: bool = False
) -> Paired:
    """Read both ledgers, leaving out records that break a writer rule, and pair
    them (in two processes on a large kit)."""
    store = kit.store
    detailed = not scope.everything
    screen = KitScreen(kit)
    excluded = Excluded()
    size = stored_bytes(store, "evals")
    if size < PARALLEL_MIN_BYTES or not hasattr(os, "fork"):
        # Verdicts first: a corrupt eval ledger is then reported by the reader that
        # reads it from the start, not by a label's look-up of its verdict.
        judged = read_verdicts(store, scope, window, screen=screen, excluded=excluded)
        labels = read_labels(store, detailed, screen=screen, excluded=excluded)
        paired = pair(judged, labels, scope, by, with_runs=with_runs)
    else:
        from pmos.calibration import stats
        from pmos.store.forked import ForkedCall

        # The child reads the larger ledger, receives the labels read here, pairs
        # and sends back only the pairs' columns; this process loads scikit-learn meanwhile.
        child = ForkedCall(
            _read_verdicts_and_pair, store, scope, window, by, with_runs, screen, inbox=True
        )
        try:
            child.send(read_labels(store, detailed, screen=screen, excluded=excluded))
            stats.preload()
            paired = child.result()
        finally:
            child.cancel()
    for exclusion in paired.excluded:  # the child's
        excluded.add(exclusion)
    paired.excluded = excluded.items
    return paired


def _read_verdicts_and_pair(
    receive: Callable[[], dict[str, Label]],
    store: Store,
    scope: Scope,
    window: int,
    by: By | None,
    with_runs: bool,
    screen: Screen,
) -> Paired:
    excluded = Excluded()
    judged = read_verdicts(store, scope, window, screen=screen, excluded=excluded)
    paired = pair(judged, receive(), scope, by, with_runs=with_runs)
    paired.excluded = excluded.items
    return paired
