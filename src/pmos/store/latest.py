"""Per run, its latest records: the one answer every reader of the kit shares.

"What is the run's latest verdict, its latest *judged* verdict, its latest PM
label, and which verdict did that label judge?" is asked by calibration, the
queue, the exemplars and the board. Each used to answer it with its own loop;
they answer it here, so a merge of branches, a re-pack or a database copy can
never make two of them disagree.

"Latest" is by meaning, never by file position: records are ordered by
(``recorded_at``, ``record_id``), the order :func:`pmos.store.read.records`
yields them in. The functions here take rows (anything with the schema's
field names as attributes: the store's typed rows, or rows read from a
database), oldest first, and also keep the right answer when one arrives out
of order.

Two shapes of answer:

* :func:`per_run` and :func:`verdicts_per_run` keep the rows themselves, for
  readers of modest kits that want whole records (the queue, the exemplars);
* :func:`latest_verdicts` and :func:`latest_labels` are the calibration
  reader of a million-line ledger. They keep per run small named tuples
  (:class:`Verdict`, :class:`Label`, :class:`Skip`), and of every superseded
  judged verdict only a few machine numbers (:class:`Earlier`), so memory
  grows with runs, not records.

:func:`judged_by` is the pairing rule: which of a run's verdicts a label
judges (calibration-method.md, "Pairs").
"""

from __future__ import annotations

import math
from array import array
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC
from typing import Any, NamedTuple

from pmos.errors import LedgerCorrupt
from pmos.store.vocabulary import PASS_SIDE, SKIPPED
from pmos.timestamps import parse_instant

# ---------------------------------------------------------------- any kind


class Span(NamedTuple):
    """A run's first and latest row of one ledger."""

    first: Any
    latest: Any


class RunVerdicts(NamedTuple):
    """A run's first and latest verdict rows, and its latest judged one (None: never judged)."""

    first: Any
    latest: Any
    judged: Any


def _later(row: Any, than: Any) -> bool:
    """Whether ``row`` comes at or after ``than`` in the readers' order."""
    at, other = row.recorded_at, than.recorded_at
    return at > other or (at == other and row.record_id >= than.record_id)


def per_run(rows: Iterable[Any]) -> dict[str, Span]:
    """Each run's first and latest row (runs in the order they first appear)."""
    first: dict[str, Any] = {}
    latest: dict[str, Any] = {}
    for row in rows:
        run = row.run_id
        seen = latest.get(run)
        if seen is None:
            first[run] = latest[run] = row
        elif _later(row, seen):
            latest[run] = row
        elif not _later(row, first[run]):
            first[run] = row
    return {run: Span(first[run], row) for run, row in latest.items()}


def verdicts_per_run(rows: Iterable[Any]) -> dict[str, RunVerdicts]:
    """Each run's first, latest and latest judged (non-SKIPPED) verdict row."""
    judged: dict[str, Any] = {}

    def noting_judged(rows: Iterable[Any]) -> Iterator[Any]:
        for row in rows:
            if row.verdict != SKIPPED:
                best = judged.get(row.run_id)
                if best is None or _later(row, best):
                    judged[row.run_id] = row
            yield row

    spans = per_run(noting_judged(rows))
    return {run: RunVerdicts(*span, judged.get(run)) for run, span in spans.items()}


# ---------------------------------------------------------------- calibration's reader


def instant_key(stamp: str) -> str:
    """A stored timestamp as the writers store it, ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` in
    UTC: in that one layout, comparing strings compares instants."""
    moment = parse_instant(stamp).astimezone(UTC)
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


def _key(stamp: Any, where: str, what: str) -> str:
    """:func:`instant_key` for the readers' slow path (a stamp not in the writers' layout)."""
    try:
        return instant_key(stamp)
    except Exception as exc:  # BadInput, or not a string at all
        raise LedgerCorrupt(where, None, f"{what}: {exc}") from None


class Verdict(NamedTuple):
    """A judged verdict as the calibration reader keeps it."""

    recorded_at: str  # as :func:`instant_key` gives it
    record_id: str
    model: str
    full: bool  # written from a complete verdict (not the short form)
    passed: bool  # on the pass side of the gate
    score: float | None
    #: The run's initiative; kept only when a scope filters (else None).
    initiative: str | None
    #: The run's number: the order in which runs were first judged.
    run: int


class Skip(NamedTuple):
    """A run's latest SKIPPED verdict: who declared it, and when."""

    model: str | None
    initiative: str | None
    recorded_at: str


class Label(NamedTuple):
    """A run's latest PM label."""

    recorded_at: str
    passed: bool
    #: The verdict the label judges, as the writer recorded it (None: it named none).
    gate_record_id: str | None
    initiative: str | None
    record_id: str


def _code(model_index: int, full: bool, passed: bool) -> int:
    """A judged verdict's model, form and gate side in one machine number, as the
    calibration reader keeps them (never seen outside this module)."""
    return model_index << 2 | full << 1 | passed


class Earlier:
    """The judged verdicts a later verdict of the same run superseded.

    A label may name any earlier verdict of its run, so none can be forgotten,
    but memory must grow with runs, not records: per superseded verdict this
    keeps four machine numbers (about 32 bytes), never its strings. The record
    id is kept as its 64-bit hash, matched together with the run's number, so
    two ids are confused only if two verdicts of one run share a 64-bit hash.
    A filtered report also keeps each one's time and initiative (its scope).
    """

    def __init__(self, models: list[str], detailed: bool) -> None:
        self._models = models
        self.runs = array("q")
        self.ids = array("q")
        self.codes = array("q")  # see _code
        self.scores = array("d")
        self.ats: list[str] | None = [] if detailed else None
        self.initiatives: list[Any] | None = [] if detailed else None

    def __len__(self) -> int:
        return len(self.runs)

    def add(self, verdict: Verdict, model_index: int) -> None:
        self.runs.append(verdict.run)
        self.ids.append(hash(verdict.record_id))
        self.codes.append(_code(model_index, verdict.full, verdict.passed))
        self.scores.append(math.nan if verdict.score is None else verdict.score)
        if self.ats is not None:
            self.ats.append(verdict.recorded_at)
            self.initiatives.append(verdict.initiative)  # type: ignore[union-attr]

    def select(self, wanted: Mapping[tuple[int, str], Any]) -> dict[str, Verdict]:
        """The kept verdicts named in ``wanted`` (keys: (run number, record id)), by record id.

        Their time and initiative are None unless a filtered reader kept them.
        """
        found: dict[str, Verdict] = {}
        if not wanted:
            return found
        hashed = {(run, hash(record_id)): record_id for run, record_id in wanted}
        for j, key in enumerate(zip(self.runs, self.ids, strict=True)):
            record_id = hashed.get(key)
            if record_id is not None:
                score, code = self.scores[j], self.codes[j]
                found[record_id] = Verdict(
                    None if self.ats is None else self.ats[j],  # type: ignore[arg-type]
                    record_id,
                    self._models[code >> 2],
                    bool(code & 2),
                    bool(code & 1),
                    None if score != score else score,  # NaN stood for None
                    None if self.initiatives is None else self.initiatives[j],
                    key[0],
                )
        return found


#: (model, initiative, recorded_at key) -> whether a verdict is in a reader's scope.
InScope = Callable[[str | None, str | None, str], bool]


@dataclass
class LatestVerdicts:
    """Per run the latest judged verdict, the superseded ones, and the latest skip.

    ``recent`` holds the verdict words of the last ``window`` judged verdicts in
    scope, oldest first (``recent_by_model`` the same per model): what a pass
    fraction is computed from.
    """

    models: list[str]
    latest: dict[str, Verdict]
    earlier: Earlier
    skips: dict[str, Skip]
    recent: deque[str]
    recent_by_model: dict[str, deque[str]]


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
#: A scope that filters by initiative also needs each record's initiative.
FILTER_FIELDS = ("initiative_id",)


def latest_verdicts(
    rows: Iterable[Any], *, window: int, in_scope: InScope | None = None, where: str = "evals"
) -> LatestVerdicts:
    """Stream verdict rows (:data:`VERDICT_FIELDS`, plus :data:`FILTER_FIELDS` when
    ``in_scope`` is given) once.

    This loop runs once per record of the largest file pmos has, so it keeps
    to a few dict, list and tuple operations: a timestamp in the writers'
    layout is compared as a string (only another layout is parsed), and a
    record out of time order costs only a second comparison.
    """
    models: list[str] = []
    bases: dict[str, int] = {}
    # Plain tuples while streaming, (recorded_at, record_id, code, score,
    # initiative, run number) with the model, form and side packed in one
    # number (_code): a named tuple costs three times as much to build, and most
    # rows are superseded. The survivors become Verdicts once, at the end.
    latest: dict[str, tuple[Any, ...]] = {}
    skips: dict[str, tuple[Any, ...]] = {}
    recent: deque[str] = deque(maxlen=window)
    recent_by_model: list[deque[str]] = []
    pass_side = PASS_SIDE
    detailed = in_scope is not None
    earlier = Earlier(models, detailed)
    runs, ids = earlier.runs.append, earlier.ids.append
    codes, scores, nan = earlier.codes.append, earlier.scores.append, math.nan
    for row in rows:
        verdict = row.verdict
        run = row.run_id
        at = row.recorded_at
        if len(at) != 27 or at[26] != "Z" or at[10] != "T":
            at = _key(at, where, f"verdict {row.record_id} of run {run}")
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
                    where, None, f"a {verdict} verdict of run {run} names no evaluator_model"
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
            # else: out of time order, the verdict already kept stays the latest
        if older is not None:  # Earlier.add, inlined: this runs for most rows
            runs(older[5])
            ids(hash(older[1]))
            codes(older[2])
            score = older[3]
            scores(nan if score is None else score)
            if detailed:
                earlier.ats.append(older[0])  # type: ignore[union-attr]
                earlier.initiatives.append(older[4])  # type: ignore[union-attr]
        if detailed and not in_scope(model, initiative, at):  # type: ignore[misc]
            continue
        recent.append(verdict)
        recent_by_model[base >> 2].append(verdict)

    def typed(kept: tuple[Any, ...]) -> Verdict:
        at, record_id, code, score, initiative, number = kept
        return Verdict(
            at, record_id, models[code >> 2], bool(code & 2), bool(code & 1), score, initiative,
            number,
        )  # fmt: skip

    return LatestVerdicts(
        models,
        dict(zip(latest, map(typed, latest.values()), strict=True)),
        earlier,
        dict(zip(skips, map(Skip._make, skips.values()), strict=True)),
        recent,
        {models[i]: kept for i, kept in enumerate(recent_by_model)},
    )


def latest_labels(
    rows: Iterable[Any], *, detailed: bool = False, where: str = "acceptances"
) -> dict[str, Label]:
    """Stream label rows (:data:`LABEL_FIELDS`, plus :data:`FILTER_FIELDS` when
    ``detailed``) once, keeping each run's latest label."""
    latest: dict[str, tuple[Any, ...]] = {}  # laid out as Label (see latest_verdicts)
    for row in rows:
        run = row.run_id
        at = row.recorded_at
        if len(at) != 27 or at[26] != "Z" or at[10] != "T":
            at = _key(at, where, f"label {row.record_id} of run {run}")
        current = latest.get(run)
        if current is None or at > current[0] or (at == current[0] and row.record_id > current[4]):
            latest[run] = (
                at,
                row.label == "pass",
                row.gate_record_id,
                row.initiative_id if detailed else None,
                row.record_id,
            )
    return dict(zip(latest, map(Label._make, latest.values()), strict=True))


def judged_by(label: Any, latest: Any, named: Any = None) -> Any:
    """The verdict a run's latest ``label`` judges (None: none), given the run's
    latest judged verdict and ``named``, the judged verdict *of the same run*
    whose record id the label's ``gate_record_id`` names, if there is one.

    A label judges the verdict it names. A label naming none (recorded before
    any judgement, by an older writer, or against a SKIPPED verdict) judges
    the run's latest judged verdict if that was recorded before it, and
    nothing otherwise. Works on rows and on this module's named tuples alike.
    """
    gate_id = label.gate_record_id
    if gate_id is not None and gate_id == latest.record_id:
        return latest
    if named is not None and named.record_id == gate_id:
        return named
    return latest if latest.recorded_at <= label.recorded_at else None


def named_earlier(verdicts: LatestVerdicts, labels: Mapping[str, Label]) -> dict[str, Verdict]:
    """The superseded verdicts that ``labels`` name, by record id (for :func:`judged_by`)."""
    wanted = {}
    for run, label in labels.items():
        current = verdicts.latest.get(run)
        gate_id = label.gate_record_id
        if current is not None and gate_id is not None and gate_id != current.record_id:
            wanted[(current.run, gate_id)] = True
    return verdicts.earlier.select(wanted)
