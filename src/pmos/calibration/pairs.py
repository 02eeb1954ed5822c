"""Reading both ledgers and pairing each PM label with the verdict it judged.

This is the one place that reads verdicts and labels for calibration; the
statistics never see a record. The pairing rule (calibration-method.md,
"Pairs"):

* records of a run are ordered by (``recorded_at``, ``record_id``), never by
  their position in a file;
* a run's latest label judges the verdict whose ``record_id`` its
  ``gate_record_id`` names, if that is a judged (non-SKIPPED) verdict of the
  run; a label that names none (recorded before any judgement, by an older
  writer, or against a SKIPPED verdict) judges the run's latest judged
  verdict if that was recorded before it, and nothing otherwise;
* that verdict and the label are the run's pair, dated by the label (when
  the PM judged). When a newer judged verdict exists, the label is
  *superseded*: it still pairs with what the PM saw, never with the newer
  verdict, and the run is in acceptance debt until the PM labels it again
  (``labels_superseded``). A label that judged nothing while the run now has
  a judged verdict pairs with nothing.

Both ledgers are streamed once (on a large kit the eval ledger in a child
process while this one reads the labels). Per run the readers keep the latest
label and the latest judged verdict; of each superseded verdict only four
numbers are kept (:class:`History`), so memory grows with runs, not records.
The child returns one compact column per field of the pairs, not records.
"""

from __future__ import annotations

import math
import os
from array import array
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple

from pmos.calibration.periods import By, assign_periods
from pmos.errors import LedgerCorrupt
from pmos.gate.pass_fraction import PassFraction
from pmos.kit import Kit
from pmos.store.layout import Store
from pmos.store.read import records, stored_bytes
from pmos.store.rows import row_type
from pmos.store.vocabulary import PASS_SIDE, SKIPPED
from pmos.timestamps import parse_instant


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


def instant_key(stamp: str) -> str:
    """A stored timestamp as the writers store it, ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` in
    UTC: in that one layout, comparing strings compares instants."""
    moment = parse_instant(stamp).astimezone(UTC)
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


def _key(stamp: Any, path: Callable[[], str], what: str) -> str:
    """:func:`instant_key` for the readers' slow path (a stamp not in the writers' layout)."""
    try:
        return instant_key(stamp)
    except Exception as exc:  # BadInput, or not a string at all
        raise LedgerCorrupt(path(), None, f"{what}: {exc}") from None


#: The fields each reader decodes (see :mod:`pmos.store.rows`).
VERDICT_FIELDS = (
    "run_id",
    "verdict",
    "evaluator_model",
    "record_id",
    "recorded_at",
    "score",
    "form",
)
LABEL_FIELDS = ("run_id", "label", "record_id", "recorded_at", "gate_record_id")
#: A report filtered by initiative also needs each record's initiative.
FILTER_FIELDS = ("initiative_id",)

# A judged verdict is kept as (recorded_at key, record_id, code, score, initiative,
# run number) with code = model index * 4 + 2 * (form is full) + (gate passed).
_AT, _ID, _CODE, _SCORE, _INITIATIVE, _RUN = range(6)
# A label is kept as (recorded_at key, PM passed, gate_record_id, initiative).
_PM, _GATE_ID, _LABEL_INITIATIVE = 1, 2, 3


class History:
    """What is kept of the judged verdicts a later verdict of the same run superseded.

    A label may name any earlier verdict of its run, so none can be forgotten,
    but memory must grow with runs, not records: per superseded verdict this
    keeps four machine numbers (about 32 bytes), never its strings. The record
    id is kept as its 64-bit hash, matched together with the run's number, so
    two ids are confused only if two verdicts of one run share a 64-bit hash.
    A filtered report also keeps each one's time and initiative (its scope).
    """

    def __init__(self, detailed: bool) -> None:
        self.runs = array("q")
        self.ids = array("q")
        self.codes = array("q")
        self.scores = array("d")
        self.ats: list[str] | None = [] if detailed else None
        self.initiatives: list[Any] | None = [] if detailed else None

    def add(self, entry: tuple[Any, ...]) -> None:
        self.runs.append(entry[_RUN])
        self.ids.append(hash(entry[_ID]))
        self.codes.append(entry[_CODE])
        score = entry[_SCORE]
        self.scores.append(math.nan if score is None else score)
        if self.ats is not None:
            self.ats.append(entry[_AT])
            self.initiatives.append(entry[_INITIATIVE])  # type: ignore[union-attr]

    def select(self, wanted: dict[tuple[int, int], str]) -> dict[str, tuple[Any, ...]]:
        """The kept verdicts named in ``wanted`` ((run number, hash of record id) -> record
        id), as entries keyed by record id (time and initiative None unless kept)."""
        found: dict[str, tuple[Any, ...]] = {}
        if not wanted:
            return found
        for j, key in enumerate(zip(self.runs, self.ids, strict=True)):
            record_id = wanted.get(key)
            if record_id is not None:
                score = self.scores[j]
                found[record_id] = (
                    None if self.ats is None else self.ats[j],
                    record_id,
                    self.codes[j],
                    None if score != score else score,  # NaN stood for None
                    None if self.initiatives is None else self.initiatives[j],
                    key[0],
                )
        return found


@dataclass
class Verdicts:
    """What the eval-ledger reader keeps: per run the latest judged verdict, the
    earlier judged ones (:class:`History`), and the latest SKIPPED one as
    (model, initiative, recorded_at key) for runs that may have no judgement."""

    models: list[str]
    latest: dict[str, tuple[Any, ...]]
    earlier: History
    skips: dict[str, tuple[str | None, str | None, str]]
    pass_fraction: PassFraction
    pass_fraction_by_model: dict[str, PassFraction]


@dataclass
class Labels:
    """The latest PM label per run."""

    latest: dict[str, tuple[Any, ...]]


def _wanted(scope: Scope) -> Callable[[str | None, str | None, str], bool] | None:
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


def read_verdicts(
    store: Store | None, scope: Scope, window: int, *, rows: Iterable[Any] | None = None
) -> Verdicts:
    """Stream the eval ledger once.

    This loop runs once per record of the largest file pmos has, so it keeps
    to a few dict, list and tuple operations: a timestamp in the writers'
    layout is compared as a string (only another layout is parsed), records
    are expected in time order and one out of order costs a second
    comparison, and a superseded verdict is handed to :class:`History` in
    batches. The pass fraction needs the last ``window`` judged verdicts in
    scope, which are buffered and handed to :class:`PassFraction` (the one
    definition of the rule) at the end.
    """
    models: list[str] = []
    bases: dict[str, int] = {}
    latest: dict[str, tuple[Any, ...]] = {}
    skips: dict[str, tuple[str | None, str | None, str]] = {}
    recent: deque[str] = deque(maxlen=window)
    recent_by_model: list[deque[str]] = []
    pass_side = PASS_SIDE
    wanted = _wanted(scope)
    detailed = wanted is not None
    history = History(detailed)
    history_runs, history_ids = history.runs.append, history.ids.append
    history_codes, history_scores = history.codes.append, history.scores.append
    nan = math.nan
    fields = VERDICT_FIELDS + FILTER_FIELDS if detailed else VERDICT_FIELDS
    path = lambda: store.display("evals") if store is not None else "the evals table"  # noqa: E731
    if rows is None:
        rows = records(store, "evals", row=row_type("evals", fields))  # type: ignore[arg-type]
    for row in rows:
        verdict = row.verdict
        run = row.run_id
        at = row.recorded_at
        if len(at) != 27 or at[26] != "Z" or at[10] != "T":
            at = _key(at, path, f"verdict {row.record_id} of run {run}")
        initiative = row.initiative_id if detailed else None
        if verdict == SKIPPED:
            prior = skips.get(run)
            if prior is None or at >= prior[2]:
                skips[run] = (row.evaluator_model, initiative, at)
            continue
        model = row.evaluator_model
        base = bases.get(model)  # type: ignore[arg-type]
        if base is None:
            if model is None:  # the schema requires it of every judged verdict
                raise LedgerCorrupt(
                    path(), None, f"a {verdict} verdict of run {run} names no evaluator_model"
                )
            base = bases[model] = len(models) << 2
            models.append(model)
            recent_by_model.append(deque(maxlen=window))
        code = base | (row.form == "full") << 1 | (verdict in pass_side)
        current = latest.get(run)
        if current is None:
            latest[run] = (at, row.record_id, code, row.score, initiative, len(latest))
            older = None
        else:
            older = (at, row.record_id, code, row.score, initiative, current[5])
            if at > current[0] or (at == current[0] and older[1] > current[1]):
                latest[run] = older
                older = current
            # else: out of time order, the record already kept stays the latest
        if older is not None:  # History.add, inlined: this runs for most records
            history_runs(older[5])
            history_ids(hash(older[1]))
            history_codes(older[2])
            score = older[3]
            history_scores(nan if score is None else score)
            if detailed:
                history.ats.append(older[0])  # type: ignore[union-attr]
                history.initiatives.append(older[4])  # type: ignore[union-attr]
        if detailed and not wanted(model, initiative, at):  # type: ignore[misc]
            continue
        recent.append(verdict)
        recent_by_model[base >> 2].append(verdict)
    return Verdicts(
        models,
        latest,
        history,
        skips,
        PassFraction.of(recent, window),
        {
            models[index]: PassFraction.of(buffer, window)
            for index, buffer in enumerate(recent_by_model)
            if buffer
        },
    )


def read_labels(
    store: Store | None, detailed: bool, *, rows: Iterable[Any] | None = None
) -> Labels:
    """Stream the acceptance ledger once, keeping each run's latest label as
    (recorded_at key, PM passed, gate_record_id, initiative)."""
    latest: dict[str, tuple[Any, ...]] = {}
    fields = LABEL_FIELDS + FILTER_FIELDS if detailed else LABEL_FIELDS
    path = (  # noqa: E731
        lambda: store.display("acceptances") if store is not None else "the acceptances table"
    )
    if rows is None:
        rows = records(store, "acceptances", row=row_type("acceptances", fields))  # type: ignore[arg-type]
    for row in rows:
        run = row.run_id
        at = row.recorded_at
        if len(at) != 27 or at[26] != "Z" or at[10] != "T":
            at = _key(at, path, f"label {row.record_id} of run {run}")
        current = latest.get(run)
        if current is None or at > current[0] or (at == current[0] and row.record_id > current[4]):
            latest[run] = (
                at,
                row.label == "pass",
                row.gate_record_id,
                row.initiative_id if detailed else None,
                row.record_id,
            )
    # The record id only broke ties between labels of the same instant.
    return Labels({run: label[:4] for run, label in latest.items()})


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


def pair(
    judged: Verdicts,
    labelled: Labels,
    scope: Scope,
    by: By | None,
    *,
    with_runs: bool = False,
) -> Paired:
    """Apply the pairing rule (module docstring) to every run in scope."""
    wanted = _wanted(scope)
    models = list(judged.models)
    known = set(models)
    for name in [m for m, _, _ in judged.skips.values()] + list(judged.pass_fraction_by_model):
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
    labels = labelled.latest
    # The superseded verdicts the labels name: found by (run number, hash of id).
    named = {}
    for run, label in labels.items():
        current = latest.get(run)
        gate_id = label[_GATE_ID]
        if current is not None and gate_id is not None and gate_id != current[_ID]:
            named[(current[_RUN], hash(gate_id))] = gate_id
    by_id = judged.earlier.select(named)
    times: list[str] = []
    runs: list[str] = []
    for run, label in labels.items():
        current = latest.get(run)
        if current is None:
            continue  # counted below with the labels that have no verdict
        gate_id = label[_GATE_ID]
        if gate_id is not None and current[_ID] == gate_id:
            paired = current
        else:
            paired = by_id.get(gate_id) if gate_id is not None else None  # type: ignore[arg-type]
            if paired is not None and paired[_RUN] != current[_RUN]:
                paired = None
            if paired is None and current[_AT] <= label[_AT]:
                # The label names no judged verdict of its run (an older writer, or
                # a SKIPPED one): it judged the latest, if that came before it.
                paired = current
        subject = current if paired is None else paired
        code = subject[_CODE]
        if wanted is not None and not wanted(
            judged.models[code >> 2], subject[_INITIATIVE], subject[_AT]
        ):
            continue
        i = code >> 2
        if paired is not current:
            superseded[i] += 1
        if paired is None:
            unlabelled[i] += 1
            unlabelled_pass[i] += code & 1
            continue
        out.model.append(i)
        out.gate.append(code & 1)
        out.pm.append(int(label[_PM]))
        out.full.append(code >> 1 & 1)
        out.score.append(paired[_SCORE])
        times.append(label[_AT])
        runs.append(run)
    for run, current in latest.items():
        if run in labels:
            continue
        code = current[_CODE]
        if wanted is not None and not wanted(
            judged.models[code >> 2], current[_INITIATIVE], current[_AT]
        ):
            continue
        unlabelled[code >> 2] += 1
        unlabelled_pass[code >> 2] += code & 1
    for run, (skip_model, skip_initiative, at) in judged.skips.items():
        if run in latest:
            continue
        if wanted is not None and not wanted(skip_model, skip_initiative, at):
            continue
        if skip_model is None:
            out.skipped_unknown_model += 1
        else:
            skipped[index[skip_model]] += 1
    for run, label in labels.items():
        if run in latest:
            continue
        if wanted is not None:
            skip = judged.skips.get(run)
            skip_model = skip[0] if skip else None
            initiative = label[_LABEL_INITIATIVE] or (skip[1] if skip else None)
            if not wanted(skip_model, initiative, label[_AT]):
                continue
        out.labels_without_verdict += 1
    out.unlabelled, out.unlabelled_pass = unlabelled, unlabelled_pass
    out.skipped, out.superseded = skipped, superseded
    out.period, out.periods = assign_periods(times, runs, by or "month")
    out.run_ids = runs if with_runs else None
    out.pass_fraction = judged.pass_fraction
    out.pass_fraction_by_model = judged.pass_fraction_by_model
    return out


#: An eval ledger at least this large is read in a child process while this
#: process reads the acceptances (and loads scikit-learn): two cores, about half
#: the wall time. Below it a fork costs more than it saves.
PARALLEL_MIN_BYTES = 16 << 20


def read_and_pair(
    kit: Kit, scope: Scope, window: int, by: By | None, *, with_runs: bool = False
) -> Paired:
    """Read both ledgers and pair them (in two processes on a large kit)."""
    store = kit.store
    detailed = not scope.everything
    size = stored_bytes(store, "evals")
    if size < PARALLEL_MIN_BYTES or not hasattr(os, "fork"):
        labels = read_labels(store, detailed)
        return pair(read_verdicts(store, scope, window), labels, scope, by, with_runs=with_runs)
    from pmos.calibration import stats
    from pmos.store.forked import ForkedCall

    # The child reads the larger ledger, receives the labels read here, pairs
    # and sends back only the pairs' columns; this process loads scikit-learn meanwhile.
    child = ForkedCall(_read_verdicts_and_pair, store, scope, window, by, with_runs, inbox=True)
    try:
        child.send(read_labels(store, detailed))
        stats.preload()
        return child.result()
    finally:
        child.cancel()


def _read_verdicts_and_pair(
    receive: Callable[[], Labels],
    store: Store,
    scope: Scope,
    window: int,
    by: By | None,
    with_runs: bool,
) -> Paired:
    judged = read_verdicts(store, scope, window)
    return pair(judged, receive(), scope, by, with_runs=with_runs)
