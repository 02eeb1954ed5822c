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

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC
from functools import partial
from itertools import compress, islice, repeat
from operator import eq, lt
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
    """Every judged verdict the calibration reader saw, as machine numbers.

    A label may name any verdict of its run, one a later verdict superseded
    included, so none can be forgotten; but memory must grow with runs, not
    with the strings of records: per verdict this keeps four machine numbers
    (32 bytes, in numpy arrays, one set per batch). The run id and the record
    id are kept as their 64-bit hashes, so two verdicts are confused only if
    both hashes collide. A filtered report also keeps each one's time and
    initiative (its scope).
    """

    def __init__(self, models: list[str], detailed: bool) -> None:
        self._models = models
        #: Per batch: run id hashes, record id hashes, codes (_code), scores (NaN: None).
        self._batches: list[tuple[Any, Any, Any, Any]] = []
        self.ats: list[str] | None = [] if detailed else None
        self.initiatives: list[Any] | None = [] if detailed else None

    def __len__(self) -> int:
        return sum(len(batch[0]) for batch in self._batches)

    def add(self, run_id: str, verdict: Verdict, model_index: int) -> None:
        """Keep one judged verdict of ``run_id``."""
        self.extend(
            [run_id],
            [verdict.record_id],
            [_code(model_index, verdict.full, verdict.passed)],
            [verdict.score],
            [verdict.recorded_at],
            [verdict.initiative],
        )

    def extend(
        self,
        runs: list[str],
        ids: list[str],
        codes: list[int],
        scores: list[float | None],
        ats: list[str],
        initiatives: list[Any],
    ) -> None:
        """Keep a batch of judged verdicts, one list per field (C loops, not Python's)."""
        import numpy as np

        n = len(runs)
        if not n:
            return
        self._batches.append(
            (
                np.fromiter(map(hash, runs), np.int64, n),
                np.fromiter(map(hash, ids), np.int64, n),
                np.fromiter(codes, np.int64, n),
                np.array(scores, dtype=np.float64),  # None becomes NaN
            )
        )
        if self.ats is not None:
            self.ats.extend(ats)
            self.initiatives.extend(initiatives)  # type: ignore[union-attr]

    def select(self, wanted: Mapping[tuple[str, str], int]) -> dict[str, Verdict]:
        """The kept verdicts named in ``wanted`` (keys: (run id, record id); values:
        the run's number), by record id.

        Their time and initiative are None unless a filtered reader kept them.
        """
        import numpy as np

        found: dict[str, Verdict] = {}
        if not wanted or not self._batches:
            return found
        hashed = {
            (hash(run_id), hash(record_id)): (record_id, number)
            for (run_id, record_id), number in wanted.items()
        }
        runs, ids, codes, scores = (
            np.concatenate([batch[i] for batch in self._batches]) for i in range(4)
        )
        named = np.fromiter((key[1] for key in hashed), np.int64, len(hashed))
        for j in np.flatnonzero(np.isin(ids, named)).tolist():
            hit = hashed.get((int(runs[j]), int(ids[j])))
            if hit is None:
                continue  # another run's verdict with a record id of the same hash
            record_id, number = hit
            score, code = float(scores[j]), int(codes[j])
            found[record_id] = Verdict(
                None if self.ats is None else self.ats[j],  # type: ignore[arg-type]
                record_id,
                self._models[code >> 2],
                bool(code & 2),
                bool(code & 1),
                None if score != score else score,  # NaN stood for None
                None if self.initiatives is None else self.initiatives[j],
                number,
            )
        return found


#: (model, initiative, recorded_at key) -> whether a verdict is in a reader's scope.
InScope = Callable[[str | None, str | None, str], bool]


@dataclass
class LatestVerdicts:
    """Per run the latest judged verdict, every judged verdict (:class:`Earlier`),
    and the latest skip.

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

_BATCH = 4096


def _chunks(rows: Iterable[Any]) -> Iterator[list[Any]]:
    rows = iter(rows)
    while batch := list(islice(rows, _BATCH)):
        yield batch


class _Stream:
    """Whether each batch of a stream comes strictly after everything before it.

    The readers' fast path rests on it: a batch whose records are in the
    writers' time layout and in strictly increasing (time, record id) order,
    all after the records already seen, can be folded in whole by C loops
    ("the last one of a run wins"). Any other batch (a ledger written out of
    order, another time layout, two records at one key) takes the row-by-row
    path, which compares every record with the run's latest.
    """

    def __init__(self) -> None:
        self.high: tuple[str, str] = ("", "")

    def ordered(self, ats: list[Any], ids: list[Any]) -> bool:
        if not ats or (ats[0], ids[0]) <= self.high:
            return False
        try:
            joined = "\n".join(ats)
        except TypeError:  # not strings: the slow path says what is wrong
            return False
        n = len(ats)
        # Every stamp 27 characters long, with "T" and "Z" where the writers' layout
        # has them (the row-by-row path's test), by slices of the joined stamps.
        if (
            len(joined) != 28 * n - 1
            or joined.count("\n") != n - 1
            or joined[27::28] != "\n" * (n - 1)
            or joined[10::28] != "T" * n
            or joined[26::28] != "Z" * n
        ):
            return False
        if not all(map(lt, ats, islice(ats, 1, None))):
            keys = list(zip(ats, ids, strict=True))
            if not all(map(lt, keys, islice(keys, 1, None))):
                return False
        self.high = (ats[-1], ids[-1])
        return True

    def saw(self, at: str, record_id: str) -> None:
        """A record read row by row (its stamp already as :func:`instant_key` gives it)."""
        if (at, record_id) > self.high:
            self.high = (at, record_id)


def _typed(kind: type[Any]) -> Callable[[tuple[Any, ...]], Any]:
    """``kind._make``, called from C: building many named tuples costs no Python call each."""
    return partial(tuple.__new__, kind)


class _Row(NamedTuple):
    """A verdict as the reader folds it; its latest per run is kept in this shape."""

    recorded_at: str
    record_id: str
    evaluator_model: str | None
    form: str | None
    verdict: str
    score: float | None
    initiative_id: str | None
    run_id: str


#: Columns: one list per field, as :func:`pmos.store.read.column_batches` yields them.
Columns = Mapping[str, list[Any]]


def as_columns(rows: list[Any], fields: Iterable[str]) -> dict[str, list[Any]]:
    """Rows as columns (a field a row type does not have is None throughout)."""
    return {
        field: [getattr(r, field) for r in rows]
        if rows and hasattr(rows[0], field)
        else [None] * len(rows)
        for field in fields
    }


class _VerdictReader:
    """One pass of :func:`latest_verdicts` (see there)."""

    def __init__(self, window: int, in_scope: InScope | None, where: str) -> None:
        self.in_scope, self.where = in_scope, where
        self.detailed = in_scope is not None
        self.models: list[str] = []
        self.bases: dict[str, int] = {}
        # Each run's latest judged verdict, as a plain tuple laid out as _Row (zip
        # builds them in C); the survivors become Verdicts once, at the end.
        self.latest: dict[str, tuple[Any, ...]] = {}
        self.skips: dict[str, tuple[Any, ...]] = {}
        self.recent: deque[str] = deque(maxlen=window)
        self.recent_by_model: list[deque[str]] = []
        self.window = window
        self.earlier = Earlier(self.models, self.detailed)
        self.stream = _Stream()

    def base(self, model: str | None, verdict: str, run: str) -> int:
        """The model's number, shifted as :func:`_code` packs it (a new model is added)."""
        base = self.bases.get(model)  # type: ignore[arg-type]
        if base is None:
            if model is None:  # the schema requires it of every judged verdict
                raise LedgerCorrupt(
                    self.where, None, f"a {verdict} verdict of run {run} names no evaluator_model"
                )
            base = self.bases[model] = len(self.models) << 2
            self.models.append(model)
            self.recent_by_model.append(deque(maxlen=self.window))
        return base

    def fold(self, columns: Columns) -> None:
        """Fold one batch in, oldest first, given as columns (:data:`VERDICT_FIELDS`,
        and ``initiative_id`` when a scope filters)."""
        ats, ids = columns["recorded_at"], columns["record_id"]
        if self.stream.ordered(ats, ids):
            self.fold_ordered(columns)
            return
        judged: list[list[Any]] = [[], [], [], [], [], []]
        initiatives = columns.get("initiative_id") or [None] * len(ats)
        for row in zip(
            ats,
            ids,
            columns["evaluator_model"],
            columns["form"],
            columns["verdict"],
            columns["score"],
            initiatives,
            columns["run_id"],
            strict=True,
        ):
            self.fold_one(_Row._make(row), judged)
        self.earlier.extend(*judged)

    def fold_ordered(self, columns: Columns) -> None:
        """A batch the stream says is in order: whole columns at a time."""
        words = columns["verdict"]
        n = len(words)
        fields = (
            columns["recorded_at"],
            columns["record_id"],
            columns["evaluator_model"],
            columns["form"],
            words,
            columns["score"],
            columns.get("initiative_id") if self.detailed else [None] * n,
            columns["run_id"],
        )
        if SKIPPED in words:
            judged = [word != SKIPPED for word in words]
            for at, _, model, _, word, _, initiative, run in zip(*fields, strict=True):
                if word == SKIPPED:
                    self.skips[run] = (model, initiative, at)
            fields = tuple(list(compress(column, judged)) for column in fields)  # type: ignore[assignment]
            if not fields[0]:
                return
        ats, ids, names, forms, words, scores, initiatives, runs = fields
        bases = list(map(self.bases.get, names))
        if None in bases:
            bases = [self.base(m, w, r) for m, w, r in zip(names, words, runs, strict=True)]
        pass_side = PASS_SIDE
        codes = [
            base | (form == "full") << 1 | (word in pass_side)
            for base, form, word in zip(bases, forms, words, strict=True)
        ]
        self.latest.update(zip(runs, zip(*fields, strict=True), strict=True))  # the last wins
        self.earlier.extend(runs, ids, codes, scores, ats, initiatives)
        if self.detailed:
            kept = [
                self.in_scope(m, i, a)  # type: ignore[misc]
                for m, i, a in zip(names, initiatives, ats, strict=True)
            ]
            words, bases = list(compress(words, kept)), list(compress(bases, kept))
        self.recent.extend(words[-self.window :])
        for number, recent in enumerate(self.recent_by_model):
            recent.extend(compress(words, map(eq, bases, repeat(number << 2))))

    def fold_one(self, row: _Row, judged: list[list[Any]]) -> None:
        """One row, compared with what is kept for its run (any order, any time layout).

        A judged row's fields for :class:`Earlier` are added to ``judged`` (six
        columns), which the caller hands over once per batch.
        """
        verdict, run, at = row.verdict, row.run_id, row.recorded_at
        if type(at) is not str or len(at) != 27 or at[26] != "Z" or at[10] != "T":
            at = _key(at, self.where, f"verdict {row.record_id} of run {run}")
        self.stream.saw(at, row.record_id)
        initiative = row.initiative_id if self.detailed else None
        if verdict == SKIPPED:
            prior = self.skips.get(run)
            if prior is None or at >= prior[2]:
                self.skips[run] = (row.evaluator_model, initiative, at)
            return
        model = row.evaluator_model
        base = self.base(model, verdict, run)
        code = base | (row.form == "full") << 1 | (verdict in PASS_SIDE)
        record_id = row.record_id
        current = self.latest.get(run)
        if current is None or at > current[0] or (at == current[0] and record_id > current[1]):
            self.latest[run] = (at, record_id, model, row.form, verdict, row.score, initiative, run)
        # else: out of time order, the verdict already kept stays the latest
        for column, value in zip(
            judged, (run, record_id, code, row.score, at, initiative), strict=True
        ):
            column.append(value)
        if self.detailed and not self.in_scope(model, initiative, at):  # type: ignore[misc]
            return
        self.recent.append(verdict)
        self.recent_by_model[base >> 2].append(verdict)

    def result(self) -> LatestVerdicts:
        models = self.models
        kept = list(self.latest.values())
        columns = zip(*kept, strict=True) if kept else [()] * 8
        ats, ids, names, forms, words, scores, initiatives, _ = columns
        fulls = [form == "full" for form in forms]
        passed = [word in PASS_SIDE for word in words]
        if not self.detailed:
            initiatives = (None,) * len(kept)
        verdicts = zip(
            ats, ids, names, fulls, passed, scores, initiatives, range(len(kept)), strict=True
        )
        latest = dict(zip(self.latest, map(_typed(Verdict), verdicts), strict=True))
        return LatestVerdicts(
            models,
            latest,
            self.earlier,
            dict(zip(self.skips, map(_typed(Skip), self.skips.values()), strict=True)),
            self.recent,
            {models[i]: kept for i, kept in enumerate(self.recent_by_model)},
        )


_VERDICT_COLUMNS = VERDICT_FIELDS + FILTER_FIELDS
_LABEL_COLUMNS = LABEL_FIELDS + FILTER_FIELDS


def latest_verdicts(
    rows: Iterable[Any], *, window: int, in_scope: InScope | None = None, where: str = "evals"
) -> LatestVerdicts:
    """:func:`latest_verdicts_in_batches` of rows (anything with the fields as
    attributes) that come one by one."""
    return latest_verdicts_in_batches(
        (as_columns(batch, _VERDICT_COLUMNS) for batch in _chunks(rows)),
        window=window,
        in_scope=in_scope,
        where=where,
    )


def latest_verdicts_in_batches(
    batches: Iterable[Columns],
    *,
    window: int,
    in_scope: InScope | None = None,
    where: str = "evals",
) -> LatestVerdicts:
    """Stream verdicts (:data:`VERDICT_FIELDS`, plus :data:`FILTER_FIELDS` when
    ``in_scope`` is given), in batches of columns, once.

    This runs over every record of the largest ledger pmos has, so a batch in
    order (:class:`_Stream`: the usual case, as the store reads packs) is
    folded in by C loops over its columns, a few per field; only a batch out
    of order or in another time layout is folded row by row.
    """
    reader = _VerdictReader(window, in_scope, where)
    for batch in batches:
        reader.fold(batch)
    return reader.result()


def latest_labels(
    rows: Iterable[Any], *, detailed: bool = False, where: str = "acceptances"
) -> dict[str, Label]:
    """:func:`latest_labels_in_batches` of rows that come one by one."""
    return latest_labels_in_batches(
        (as_columns(batch, _LABEL_COLUMNS) for batch in _chunks(rows)),
        detailed=detailed,
        where=where,
    )


def latest_labels_in_batches(
    batches: Iterable[Columns], *, detailed: bool = False, where: str = "acceptances"
) -> dict[str, Label]:
    """Stream labels (:data:`LABEL_FIELDS`, plus :data:`FILTER_FIELDS` when
    ``detailed``), in batches of columns, once, keeping each run's latest label
    (the fast and slow paths of :func:`latest_verdicts_in_batches`)."""
    latest: dict[str, tuple[Any, ...]] = {}  # laid out as Label (see _VerdictReader)
    stream = _Stream()
    for columns in batches:
        ats, ids, runs = columns["recorded_at"], columns["record_id"], columns["run_id"]
        n = len(runs)
        initiatives = columns.get("initiative_id") if detailed else None
        initiatives = initiatives or [None] * n
        passed = [label == "pass" for label in columns["label"]]
        gates = columns["gate_record_id"]
        if stream.ordered(ats, ids):
            kept = zip(ats, passed, gates, initiatives, ids, strict=True)
            latest.update(zip(runs, kept, strict=True))
            continue
        for at, record_id, run, yes, gate, initiative in zip(
            ats, ids, runs, passed, gates, initiatives, strict=True
        ):
            if type(at) is not str or len(at) != 27 or at[26] != "Z" or at[10] != "T":
                at = _key(at, where, f"label {record_id} of run {run}")
            stream.saw(at, record_id)
            current = latest.get(run)
            if current is None or at > current[0] or (at == current[0] and record_id > current[4]):
                latest[run] = (at, yes, gate, initiative, record_id)
    return dict(zip(latest, map(_typed(Label), latest.values()), strict=True))


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
            wanted[(run, gate_id)] = current.run
    return verdicts.earlier.select(wanted)
