"""Per run, its latest judged verdict and its latest PM label: calibration's reader.

``pmos metrics`` asks this of a million-line eval ledger and a million-line
acceptance ledger. On this machine's memory a Python step per record, or one
dictionary update per record into a 200,000-run table, costs more than
reading the record did, so the answer is folded from whole batches of rows
by C loops (``map``, ``zip``, numpy), never row by row:

* Rows arrive in the readers' order, (``recorded_at``, ``record_id``). A
  batch whose timestamps are all in the writers' layout and whose keys all
  follow the last key seen (:func:`_in_order`) is folded by "the last row of
  a run wins": its rows join :class:`_LastRows`, which numpy compacts to one
  candidate per run now and then.
* From the first batch that is not (out of order, a timestamp in another RFC
  3339 layout), and for a report filtered by scope, rows are folded one by
  one with the same comparisons, into a dictionary made from the candidates,
  so both paths give the same answer.

Runs and record ids are kept as their 64-bit hashes (two are confused only if
their hashes collide); of the strings, only the latest verdict's time and each
latest label's run and time are kept. Per judged verdict the reader keeps four
machine numbers (:class:`_Columns`), so that the verdicts that are not their
run's latest become :class:`Earlier` at the end: a label may name any of them.
Memory grows with runs, and by those 28 bytes per verdict.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import compress, islice, repeat
from operator import add, attrgetter, lt
from typing import Any, NamedTuple, cast

import numpy as np

from pmos.errors import LedgerCorrupt
from pmos.gate.latest import instant_key
from pmos.gate.plan import draw as plan_draw
from pmos.gate.seeded import is_seeded_label
from pmos.gate.vocabulary import PASS_SIDE, SKIPPED


class Verdict(NamedTuple):
    """A judged verdict as the calibration reader keeps it."""

    recorded_at: str  # as :func:`~pmos.gate.latest.instant_key` gives it
    record_id: str | None  # None from the columns, which keep no record id
    model: str
    full: bool  # written from a complete verdict (not the short form)
    passed: bool  # on the pass side of the gate
    score: float | None
    #: The run's initiative; kept only when a scope filters (else None).
    initiative: str | None
    #: The run, as a number: the hash of its id (equal for every verdict of it).
    run: int


#: The draw of a label that claims no plan weight (no draw is below it).
NO_DRAW = 2.0


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
    #: A seeded known-bad case's ground truth (:func:`pmos.gate.seeded.is_seeded_label`).
    seeded: bool = False
    #: Given without the gate's verdict in view (``pmos accept --blind``).
    blind: bool = False
    #: The weight the label claims under the labelling plan (0: it claims none).
    plan_weight: float = 0.0
    #: The draw of the verdict it names (:func:`pmos.gate.plan.draw`; 2: none).
    plan_draw: float = NO_DRAW


class Earlier:
    """The judged verdicts a later verdict of the same run superseded.

    A label may name any earlier verdict of its run, so none can be forgotten,
    but memory must grow with runs, not records: per superseded verdict this
    keeps four machine numbers (32 bytes), never its strings, one numpy column
    each. The run and the record id are kept as their 64-bit hashes, so two ids
    are confused only if two verdicts of one run share a 64-bit hash. A
    filtered report also keeps each one's time and initiative (its scope).
    """

    def __init__(self, models: list[str], detailed: bool) -> None:
        self._models = models
        empty = np.zeros(0, dtype=np.int64)
        self.runs: np.ndarray = empty
        self.ids: np.ndarray = empty
        #: model index << 2 | full << 1 | passed
        self.codes: np.ndarray = empty
        self.scores: np.ndarray = np.zeros(0)  # NaN: no score
        self.ats: list[str] | None = [] if detailed else None
        self.initiatives: list[Any] | None = [] if detailed else None
        self._index: _PairIndex | None = None

    def __len__(self) -> int:
        return len(self.runs)

    def find(self, run_hashes: np.ndarray, id_hashes: np.ndarray) -> np.ndarray:
        """For each (run hash, record id hash), where the kept verdict of that run
        with that id is (-1: none)."""
        if not len(id_hashes):
            return np.zeros(0, dtype=np.int64)
        return self.index().find(run_hashes, id_hashes)

    def index(self) -> _PairIndex:
        """The look-up :meth:`find` uses, made on first use (a reader may make it
        while it waits for the labels)."""
        if self._index is None:
            self._index = _PairIndex(self.runs, self.ids)
        return self._index


#: (model, initiative, recorded_at key) -> whether a verdict is in a reader's scope.
InScope = Callable[[str | None, str | None, str], bool]


@dataclass
class LatestVerdicts:
    """Per run its latest judged verdict, one column per field; the superseded
    verdicts (:class:`Earlier`); per run its latest skip.

    A run is known by its id's hash (``run_hashes``; :meth:`rows_of` finds its
    row), a record id likewise (``id_hashes``): no string is kept per run but
    the verdict's time. ``codes`` hold the model, form and gate side of each
    verdict (:func:`decode`), ``scores`` NaN for none; ``initiatives`` only when
    a scope filters (else None). ``recent`` holds the verdict words of the last
    ``window`` judged verdicts in scope, oldest first (``recent_by_model`` the
    same per model): what a pass fraction is computed from.
    """

    models: list[str]
    ats: list[str]
    run_hashes: np.ndarray
    id_hashes: np.ndarray
    codes: np.ndarray
    scores: np.ndarray
    initiatives: list[Any] | None
    earlier: Earlier
    skips: dict[str, Skip]
    recent: deque[str]
    recent_by_model: dict[str, deque[str]]

    @cached_property
    def _by_run(self) -> tuple[np.ndarray, np.ndarray]:
        order = np.argsort(self.run_hashes, kind="stable")
        return self.run_hashes[order], order

    def rows_of(self, run_hashes: np.ndarray) -> np.ndarray:
        """Each run's row in the columns, given the hashes of run ids (-1: a run
        with no judged verdict)."""
        return _look_up(*self._by_run, run_hashes)

    def verdict(self, run: str) -> Verdict | None:
        """The run's latest judged verdict as a named tuple, or None (the record
        id is not kept: None)."""
        row = int(self.rows_of(np.array([hash(run)], dtype=np.int64))[0])
        if row < 0:
            return None
        code = int(self.codes[row])
        score = float(self.scores[row])
        return Verdict(
            self.ats[row], None, self.models[code >> 2], bool(code & 2), bool(code & 1),
            None if score != score else score,
            None if self.initiatives is None else self.initiatives[row], hash(run),
        )  # fmt: skip


def decode(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(model index, full, passed) of each verdict code (model index << 2 | full << 1 | passed)."""
    return codes >> 2, (codes & 2) != 0, (codes & 1) != 0


@dataclass
class LatestLabels:
    """Per run its latest PM label, one column per field that pairing reads.

    ``gate_hashes`` hold the hash of the verdict id each label names, where
    ``names`` is true. Python salts ``hash`` per process: hashes made here mean
    the same only here and in processes forked from here (as pmos's readers are),
    never in a process started afresh. Lists of strings and numpy arrays cross a process
    boundary in a fraction of the time 200,000 named tuples take.
    """

    runs: list[str]
    ats: list[str]
    passed: np.ndarray
    names: np.ndarray
    gate_hashes: np.ndarray
    initiatives: list[Any] | None
    #: Whether each label is a seeded known-bad case's ground truth (by ``seeded``):
    #: it judges the case's latest judged verdict whenever that came.
    seeded: np.ndarray | None = None
    #: Whether each label was given blind (``blind: true``).
    blind: np.ndarray | None = None
    #: The weight each label claims under the labelling plan (0: none), and the
    #: draw of the verdict it names (:data:`NO_DRAW`: none). Checked when paired.
    plan_weight: np.ndarray | None = None
    plan_draw: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.seeded is None:
            self.seeded = np.zeros(len(self.runs), dtype=bool)
        if self.blind is None:
            self.blind = np.zeros(len(self.runs), dtype=bool)
        if self.plan_weight is None:
            self.plan_weight = np.zeros(len(self.runs), dtype=np.float64)
        if self.plan_draw is None:
            self.plan_draw = np.full(len(self.runs), NO_DRAW, dtype=np.float64)

    def __len__(self) -> int:
        return len(self.runs)

    @classmethod
    def of(cls, labels: Mapping[str, Label]) -> LatestLabels:
        """From named tuples (small kits, tests)."""
        rows = list(labels.values())
        gates = [label.gate_record_id for label in rows]
        return cls(
            list(labels),
            [label.recorded_at for label in rows],
            np.array([label.passed for label in rows], dtype=bool),
            np.array([gate is not None for gate in gates], dtype=bool),
            _hashes(gates, len(gates)),
            [label.initiative for label in rows],
            np.array([label.seeded for label in rows], dtype=bool),
            np.array([label.blind for label in rows], dtype=bool),
            np.array([label.plan_weight for label in rows], dtype=np.float64),
            np.array([label.plan_draw for label in rows], dtype=np.float64),
        )


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
LABEL_FIELDS = ("run_id", "label", "record_id", "recorded_at", "gate_record_id", "by")
#: Read from the kit's ledgers besides LABEL_FIELDS (a row without it, such as a
#: database's, has no blind labels).
BLIND_FIELDS = ("blind", "plan_weight")
#: A scope that filters by initiative also needs each record's initiative.
FILTER_FIELDS = ("initiative_id",)

_RUN, _AT, _ID = attrgetter("run_id"), attrgetter("recorded_at"), attrgetter("record_id")
_WORD, _MODEL, _FORM = attrgetter("verdict"), attrgetter("evaluator_model"), attrgetter("form")
_SCORE, _LABEL, _GATE = attrgetter("score"), attrgetter("label"), attrgetter("gate_record_id")
_INITIATIVE = attrgetter("initiative_id")


def _BY(row: Any) -> Any:
    """The label's author; None for rows read elsewhere without it."""
    return getattr(row, "by", None)


def _blind(row: Any) -> bool:
    return getattr(row, "blind", None) is True


def _plan_weight(row: Any) -> float:
    """The weight a label claims under the labelling plan; 0 when it claims none."""
    weight = getattr(row, "plan_weight", None)
    if isinstance(weight, bool) or not isinstance(weight, int | float):
        return 0.0
    return float(weight)


def _plan_draw(row: Any) -> float:
    """The draw of the verdict a plan label names (only those pay for a digest)."""
    gate = row.gate_record_id
    if not _plan_weight(row) or not isinstance(gate, str):
        return NO_DRAW
    # Over several kits the database prefixes ids with their kit's ("kit/ev-..."); a
    # record id has no "/", so the draw is always of the id the writer made.
    return plan_draw(gate.rsplit("/", 1)[-1])


#: The length of a stamp in the writers' layout, ``YYYY-MM-DDTHH:MM:SS.ffffffZ``; a
#: key is such a stamp and a record id, so its first STAMP characters are the stamp.
STAMP = 27


def _writers_layout(stamp: Any) -> bool:
    """Whether ``stamp`` is in the writers' layout, where comparing strings compares instants."""
    return type(stamp) is str and len(stamp) == STAMP and stamp[-1] == "Z" and stamp[10] == "T"


def _at(row: Any, where: str, what: str) -> str:
    """The row's ``recorded_at`` as :func:`instant_key` gives it."""
    stamp: str = row.recorded_at
    if _writers_layout(stamp):
        return stamp
    try:
        return instant_key(stamp)
    except Exception as exc:  # BadInput, or not a string at all
        raise LedgerCorrupt(
            where, None, f"{what} {row.record_id} of run {row.run_id}: {exc}"
        ) from None


def _in_turn(
    batches: Iterable[Sequence[Any]], ordered: bool = True
) -> Iterator[tuple[Sequence[Any], tuple[list[str], list[Any]] | None]]:
    """Each batch with its keys and record ids while the batches come in the
    readers' order (:func:`_in_order`); from the first that does not (or from
    the start, unless ``ordered``), with None: it is folded row by row."""
    greatest = ""
    for batch in batches:
        if not batch:
            continue
        found = None
        if ordered:
            ids = list(map(_ID, batch))
            keys = _in_order(list(map(_AT, batch)), ids, greatest)
            if keys is None:
                ordered = False
            else:
                greatest, found = keys[-1], (keys, ids)
        yield batch, found


def _in_order(ats: list[Any], ids: list[Any], after: str) -> list[str] | None:
    """The keys of a batch that may be folded by "the last row of a run wins"
    (else None); a key is a row's time and record id, ``time + record_id``.

    That holds when every stamp is in the writers' layout (:data:`STAMP` characters, so
    ``stamp + record_id`` compares as the pair) and the keys strictly increase,
    from above ``after``, the greatest key folded before. The checks are C
    loops (``map``, ``join``, string slices), no Python step per row.
    """
    try:
        joined = "".join(ats)
        keys = list(map(add, ats, ids))
    except TypeError:  # a value that is not a string
        return None
    n = len(ats)
    if (
        set(map(len, ats)) != {STAMP}
        or joined[STAMP - 1 :: STAMP] != "Z" * n
        or joined[10::STAMP] != "T" * n
    ):
        return None
    if keys[0] > after and all(map(lt, keys, islice(keys, 1, None))):
        return keys
    return None


#: Mixes a run's hash with a record id's hash into one key per verdict.
_MIX = np.uint64(0x9E3779B97F4A7C15)


class _PairIndex:
    """(run hash, id hash) pairs, sorted once for many look-ups."""

    def __init__(self, runs: np.ndarray, ids: np.ndarray) -> None:
        self.count = len(runs)
        mixed = _mixed(runs, ids)
        self.unique, first = np.unique(mixed[::-1], return_index=True)
        self.last = self.count - 1 - first  # the last row holding each pair

    def find(self, runs: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """Where each (run hash, id hash) pair sits (its last row; -1: not there)."""
        wanted = _mixed(np.asarray(runs, dtype=np.int64), np.asarray(ids, dtype=np.int64))
        return _look_up(self.unique, self.last, wanted)


def _look_up(keys: np.ndarray, values: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """For each of ``wanted``, the value beside it in sorted ``keys`` (-1: not there)."""
    if not len(keys):
        return np.full(len(wanted), -1, dtype=np.int64)
    at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    return np.where(keys[at] == wanted, values[at], -1).astype(np.int64)


def _mixed(runs: np.ndarray, ids: np.ndarray) -> np.ndarray:
    return runs.view(np.uint64) ^ (ids.view(np.uint64) * _MIX)


class _LastRows:
    """Per run, chosen fields of its last row so far, for rows in the readers' order.

    Rows come a whole batch at a time: their runs' hashes, what to keep of
    each row (a string or a tuple of strings), and numeric fields as numpy
    arrays. Once the rows added since the last look number a quarter of the
    runs known (at least :attr:`least`), numpy
    finds each run's last row among the candidates (the last rows found
    before, and the rows since); the others' tuples are let go (set to None
    where they are kept), and the list is rebuilt with only the candidates
    once it is mostly None. So memory grows with runs, not records, and no
    Python step or dictionary update is spent per row: a million updates of a
    200,000-run table cost more than reading the records did, each touching
    memory the cache had long dropped.
    """

    least = 16_384

    def __init__(self, numeric: int = 0) -> None:
        empty = np.zeros(0, dtype=np.int64)
        #: The candidates: their runs' hashes, row numbers, places in :attr:`kept`,
        #: and numeric fields.
        self.hashes, self.numbers, self.slots = empty, empty, empty
        self.values: list[np.ndarray] = [empty] * numeric
        self.new_hashes: list[np.ndarray] = []
        self.new_values: list[list[np.ndarray]] = [[] for _ in range(numeric)]
        self.kept: list[Any] = []  # per row, its tuple of strings (None: let go)
        self.count = 0  # rows looked at
        self.pending = 0  # rows added since

    def add(self, hashes: np.ndarray, strings: Iterable[Any], *values: Any) -> None:
        """Add the next rows: their runs' hashes, what to keep of each (a string,
        or a tuple of them), and one array per numeric field."""
        self.new_hashes.append(hashes)
        self.kept.extend(strings)
        for new, column in zip(self.new_values, values, strict=True):
            new.append(column)
        self.pending += len(hashes)
        if self.pending >= max(self.least, len(self.hashes) // 4):
            self._compact()

    def _compact(self) -> None:
        """Fold the rows added since into the candidates, which stay sorted by run
        hash: each run's last new row replaces its candidate or joins them."""
        added, self.pending = self.pending, 0
        size = len(self.kept)
        hashes = np.concatenate(self.new_hashes)
        values = [np.concatenate(new) for new in self.new_values]
        start, self.count = self.count, self.count + added
        self.new_hashes, self.new_values = [], [[] for _ in self.values]
        # Each run's last new row, by run hash.
        unique, first = np.unique(hashes[::-1], return_index=True)
        last = added - 1 - first
        newer = np.ones(added, dtype=bool)
        newer[last] = False  # the other new rows are superseded at once
        dropped = [(size - added + np.flatnonzero(newer)).tolist()]
        at = np.searchsorted(self.hashes, unique)
        known = at < len(self.hashes)
        known[known] = self.hashes[at[known]] == unique[known]
        # A run already a candidate: its new last row takes the candidate's place.
        places, rows = at[known], last[known]
        dropped.append(self.slots[places].tolist())
        self.numbers[places] = start + rows
        self.slots[places] = size - added + rows
        for kept, new in zip(self.values, values, strict=True):
            kept[places] = new[rows]
        # A new run: inserted where its hash sorts.
        fresh, rows = at[~known], last[~known]
        self.hashes = np.insert(self.hashes, fresh, unique[~known])
        self.numbers = np.insert(self.numbers, fresh, start + rows)
        self.slots = np.insert(self.slots, fresh, size - added + rows)
        self.values = [
            np.insert(kept, fresh, new[rows]) if len(kept) else new[rows]
            for kept, new in zip(self.values, values, strict=True)
        ]
        if size > 4 * len(self.slots):  # mostly let go: keep only the candidates
            self.kept = [self.kept[i] for i in self.slots.tolist()]
            self.slots = np.arange(len(self.kept), dtype=np.int64)
            return
        for slots in dropped:
            deque(map(self.kept.__setitem__, slots, repeat(None, len(slots))), maxlen=0)

    def rows(self) -> tuple[np.ndarray, np.ndarray, list[Any], list[np.ndarray]]:
        """Per run, in the order of their last rows: its hash, its last row's
        number, what was kept of that row, and its numeric fields."""
        if self.pending:
            self._compact()
        order = np.argsort(self.numbers, kind="stable")
        kept = self.kept
        return (
            self.hashes[order],
            self.numbers[order],
            [kept[s] for s in self.slots[order].tolist()],
            [values[order] for values in self.values],
        )


def _unzip(rows: list[tuple[Any, ...]], width: int) -> list[list[Any]]:
    """Tuples as one list per position (``width`` of them when there are none)."""
    return (
        [list(column) for column in zip(*rows, strict=True)] if rows else [[] for _ in range(width)]
    )


def _hashes(values: Iterable[Any], count: int) -> np.ndarray:
    return np.fromiter(map(hash, values), dtype=np.int64, count=count)


def _later(at: str, record_id: Any, current_at: str, current_id: Any) -> bool:
    """Whether (``at``, ``record_id``) comes after the current pair in the readers' order."""
    return at > current_at or (at == current_at and record_id > current_id)


class _Columns:
    """Per judged verdict, in arrival order: the hashes of its run and record id,
    its *kind* and its score, as numpy arrays, one chunk per batch.

    A kind numbers one combination of model, form and verdict word
    (:attr:`kinds`): a ledger has a handful, so one small integer stands for
    three strings.
    """

    def __init__(self, where: str) -> None:
        self.where = where
        self.count = 0
        self.models: list[str] = []
        self.model_of: dict[str, int] = {}
        #: (model, form, verdict word) -> kind; kinds[kind] = (model index, full, word)
        self.kind_of: dict[tuple[Any, Any, Any], int] = {}
        self.kinds: list[tuple[int, bool, str]] = []
        self.chunks: list[tuple[np.ndarray | None, ...]] = []  # None: a column taken

    def add(
        self,
        rows: Sequence[Any],
        runs: list[str],
        ids: list[str],
        keys: list[tuple[Any, Any, Any]],
        scores: Iterable[Any],
    ) -> np.ndarray:
        """Add judged verdict rows, given their run ids, record ids, (model,
        form, verdict word) and scores; returns the runs' hashes."""
        kind_of = self.kind_of
        for key in set(keys).difference(kind_of):
            self._new_kind(key, rows[keys.index(key)])
        count = len(rows)
        hashes = _hashes(runs, count)
        self.chunks.append(
            (
                hashes,
                _hashes(ids, count),
                np.array([kind_of[key] for key in keys], dtype=np.int32),
                np.array([math.nan if s is None else s for s in scores]),
            )
        )
        self.count += count
        return hashes

    def add_rows(self, rows: list[Any]) -> None:
        """Add judged verdict rows."""
        self.add(
            rows,
            list(map(_RUN, rows)),
            list(map(_ID, rows)),
            list(zip(map(_MODEL, rows), map(_FORM, rows), map(_WORD, rows), strict=True)),
            map(_SCORE, rows),
        )

    def _new_kind(self, key: tuple[Any, Any, Any], row: Any) -> None:
        model, form, word = key
        if not isinstance(model, str):  # the schema requires it of every judged verdict
            raise LedgerCorrupt(
                self.where,
                None,
                f"a {row.verdict} verdict of run {row.run_id} names no evaluator_model",
            )
        if model not in self.model_of:
            self.model_of[model] = len(self.models)
            self.models.append(model)
        self.kind_of[key] = len(self.kinds)
        self.kinds.append((self.model_of[model], form == "full", word))

    def take(self, column: int) -> np.ndarray:
        """One column whole (0 runs, 1 ids, 2 kinds, 3 scores); its chunks are let
        go, so that at most one column is held twice."""
        # Each column is taken once, so none of its parts is None yet.
        parts = [cast(np.ndarray, chunk[column]) for chunk in self.chunks]
        parts.append(_EMPTY_COLUMNS[column])
        self.chunks = [
            tuple(None if i == column else part for i, part in enumerate(chunk))
            for chunk in self.chunks
        ]
        return np.concatenate(parts)


#: The columns of no judged verdict: (runs, ids, kinds, scores).
_EMPTY_COLUMNS = (
    np.zeros(0, dtype=np.int64),
    np.zeros(0, dtype=np.int64),
    np.zeros(0, dtype=np.int32),
    np.zeros(0, dtype=np.float64),
)


def _fold_in_order(
    batch: Sequence[Any],
    keys: list[str],
    ids: list[str],
    columns: _Columns,
    last: _LastRows,
    skips: dict[str, tuple[Any, Any, str]],
) -> None:
    """Fold a batch in the readers' order, given its rows' keys (:func:`_in_order`)
    and record ids, each field read once. A run's latest verdict keeps its key,
    one string from which its time (the first :data:`STAMP` characters) and id come back."""
    words = list(map(_WORD, batch))
    if SKIPPED in words:  # rare: note the skips, fold the rest
        judged = [word != SKIPPED for word in words]
        for row, is_judged in zip(batch, judged, strict=True):
            if not is_judged:
                skips[row.run_id] = (row.evaluator_model, None, row.recorded_at)
        batch, keys, ids, words = (
            list(compress(values, judged)) for values in (batch, keys, ids, words)
        )
        if not batch:
            return
    runs = list(map(_RUN, batch))
    kinds = list(zip(map(_MODEL, batch), map(_FORM, batch), words, strict=True))
    hashes = columns.add(batch, runs, ids, kinds, map(_SCORE, batch))
    last.add(hashes, keys)


def latest_verdicts(
    batches: Iterable[Sequence[Any]],
    *,
    window: int,
    in_scope: InScope | None = None,
    where: str = "evals",
) -> LatestVerdicts:
    """Fold batches of verdict rows (:data:`VERDICT_FIELDS`, plus
    :data:`FILTER_FIELDS` when ``in_scope`` is given), oldest first, once.

    Batches in the readers' order go to :class:`_LastRows`. From the first
    batch that is not (or for a filtered report, from the start) the fold goes
    row by row through ``latest``: run -> (number, time, record id, initiative).
    """
    detailed = in_scope is not None
    columns = _Columns(where)
    last = _LastRows()  # per row its key: time + record id
    #: Row by row: run hash -> (row number, time, record id, initiative).
    latest: dict[int, tuple[int, str, Any, Any]] | None = {} if detailed else None
    skips: dict[str, tuple[Any, Any, str]] = {}
    scoped: list[bool] = []  # filtered reports: per judged row, in scope?
    ats: list[str] = []  # filtered reports: per judged row
    initiatives: list[Any] = []  # filtered reports: per judged row
    for batch, ordered in _in_turn(batches, not detailed):
        if ordered is not None:
            _fold_in_order(batch, *ordered, columns, last, skips)
            continue
        if latest is None:  # from here on, row by row
            hashes, numbers, kept, _ = last.rows()
            latest = {
                run: (number, key[:STAMP], key[STAMP:], None)
                for run, number, key in zip(hashes.tolist(), numbers.tolist(), kept, strict=True)
            }
        judged: list[Any] = []
        for row in batch:
            run, record_id = row.run_id, row.record_id
            at = _at(row, where, "verdict")
            initiative = row.initiative_id if detailed else None
            if row.verdict == SKIPPED:
                prior = skips.get(run)
                if prior is None or at >= prior[2]:
                    skips[run] = (row.evaluator_model, initiative, at)
                continue
            current = latest.get(hash(run))
            if current is None or _later(at, record_id, current[1], current[2]):
                latest[hash(run)] = (columns.count + len(judged), at, record_id, initiative)
            # else: out of time order, the verdict already kept stays the latest
            judged.append(row)
            if detailed:
                ats.append(at)
                initiatives.append(initiative)
                scoped.append(bool(in_scope(row.evaluator_model, initiative, at)))  # type: ignore[misc]
        if judged:
            columns.add_rows(judged)
    kept_ats: Sequence[str]
    kept_initiatives: Iterable[Any]
    if latest is None:
        _, numbers, kept, _ = last.rows()
        kept_ats = [key[:STAMP] for key in kept]
        kept_initiatives = repeat(None, len(kept_ats))
    else:
        number_list, kept_ats, _, kept_initiatives = (
            zip(*latest.values(), strict=True) if latest else ((),) * 4
        )
        numbers = np.array(number_list, dtype=np.int64)
    winners = _Winners(numbers, kept_ats, kept_initiatives)
    return _result(winners, skips, columns, window, detailed, scoped, ats, initiatives)


class _Winners(NamedTuple):
    """Per run, its latest judged verdict: its row number, time and initiative."""

    numbers: np.ndarray
    ats: Sequence[str]
    initiatives: Iterable[Any]


def _result(
    winners: _Winners,
    skips: dict[str, tuple[Any, Any, str]],
    columns: _Columns,
    window: int,
    detailed: bool,
    scoped: list[bool],
    ats: list[str],
    initiatives: list[Any],
) -> LatestVerdicts:
    """The fold's state as :class:`LatestVerdicts`: the winners' columns, and
    every other judged row in :class:`Earlier`."""
    models, table = columns.models, columns.kinds
    # Per kind, the machine number Earlier keeps: model index << 2 | full << 1 | passed.
    code_of_kind = np.array(
        [m << 2 | full << 1 | (word in PASS_SIDE) for m, full, word in table] or [0],
        dtype=np.int64,
    )
    numbers = winners.numbers
    earlier = Earlier(models, detailed)
    kinds = columns.take(2)
    superseded = np.ones(len(kinds), dtype=bool)
    superseded[numbers] = False
    won_codes, earlier.codes = code_of_kind[kinds[numbers]], code_of_kind[kinds[superseded]]
    # One column at a time, each let go once split: the winners' and Earlier's.
    column = columns.take(0)
    won_runs, earlier.runs = column[numbers], column[superseded]
    column = columns.take(1)
    won_ids, earlier.ids = column[numbers], column[superseded]
    column = columns.take(3)
    won_scores, earlier.scores = column[numbers], column[superseded]
    del column
    if detailed:
        keep = superseded.tolist()
        earlier.ats = [at for at, s in zip(ats, keep, strict=True) if s]
        earlier.initiatives = [i for i, s in zip(initiatives, keep, strict=True) if s]
        kinds = kinds[np.array(scoped, dtype=bool)]
    # The pass fractions' windows: the last judged verdicts in scope, per model too.
    words = [word for _, _, word in table]
    model_of_kind = np.array([m for m, _, _ in table] or [0], dtype=np.int64)

    def last_words(chosen: np.ndarray) -> deque[str]:
        tail = chosen[-window:].tolist() if window else []
        return deque((words[k] for k in tail), maxlen=window)

    return LatestVerdicts(
        models,
        list(winners.ats),
        won_runs,
        won_ids,
        won_codes,
        won_scores,
        list(winners.initiatives) if detailed else None,
        earlier,
        dict(zip(skips, map(Skip._make, skips.values()), strict=True)),
        last_words(kinds),
        {model: last_words(kinds[model_of_kind[kinds] == i]) for i, model in enumerate(models)},
    )


def latest_labels(
    batches: Iterable[Sequence[Any]], *, detailed: bool = False, where: str = "acceptances"
) -> LatestLabels:
    """Fold batches of label rows (:data:`LABEL_FIELDS`, plus :data:`FILTER_FIELDS`
    when ``detailed``), oldest first, keeping each run's latest label.

    As :func:`latest_verdicts`: batches in the readers' order go to
    :class:`_LastRows`, and from the first that is not, row by row through
    ``latest``: run -> (time, passed, names, gate hash, initiative, record id, seeded).
    """
    # per row (key, run[, initiative]); passed, names, gate hash, seeded, blind, plan
    # weight, plan draw
    last = _LastRows(7)
    latest: dict[str, tuple[Any, ...]] | None = None
    for batch, ordered in _in_turn(batches):
        if ordered is not None:
            keys = ordered[0]
            runs = list(map(_RUN, batch))
            gates = list(map(_GATE, batch))
            strings = (
                zip(keys, runs, map(_INITIATIVE, batch), strict=True)
                if detailed
                else zip(keys, runs, strict=True)
            )
            last.add(
                _hashes(runs, len(runs)),
                strings,
                np.array([label == "pass" for label in map(_LABEL, batch)], dtype=bool),
                np.array([gate is not None for gate in gates], dtype=bool),
                _hashes(gates, len(gates)),
                np.fromiter(
                    map(is_seeded_label, runs, map(_BY, batch)), dtype=bool, count=len(runs)
                ),
                np.fromiter(map(_blind, batch), dtype=bool, count=len(runs)),
                np.fromiter(map(_plan_weight, batch), dtype=np.float64, count=len(runs)),
                np.fromiter(map(_plan_draw, batch), dtype=np.float64, count=len(runs)),
            )
            continue
        if latest is None:  # from here on, row by row
            _, _, kept, values = last.rows()
            columns = _unzip(kept, 3 if detailed else 2)
            keys, runs = columns[:2]
            ats, ids = [k[:STAMP] for k in keys], [k[STAMP:] for k in keys]
            initiatives = columns[2] if detailed else repeat(None, len(runs))
            latest = {
                run: (at, passed, names, gate, initiative, record_id, seeded, blind, w, u)
                for run, at, record_id, initiative, passed, names, gate, seeded, blind, w, u in zip(
                    runs, ats, ids, initiatives, *(v.tolist() for v in values), strict=True
                )
            }
        for row in batch:
            at = _at(row, where, "label")
            record_id = row.record_id
            current = latest.get(row.run_id)
            if current is None or _later(at, record_id, current[0], current[5]):
                gate = row.gate_record_id
                latest[row.run_id] = (
                    at,
                    row.label == "pass",
                    gate is not None,
                    hash(gate),
                    row.initiative_id if detailed else None,
                    record_id,
                    is_seeded_label(row.run_id, _BY(row)),
                    _blind(row),
                    _plan_weight(row),
                    _plan_draw(row),
                )
    if latest is None:
        _, _, kept, (passed, names, gate_hashes, seeded, blind, weights, draws) = last.rows()
        columns = _unzip(kept, 3 if detailed else 2)
        return LatestLabels(
            columns[1],
            [key[:STAMP] for key in columns[0]],
            passed,
            names,
            gate_hashes,
            columns[2] if detailed else None,
            seeded.astype(bool),
            blind.astype(bool),
            weights.astype(np.float64),
            draws.astype(np.float64),
        )
    runs = list(latest)
    (
        at_of,
        passed_of,
        names_of,
        gate_of,
        initiative_of,
        _,
        seeded_of,
        blind_of,
        weight_of,
        draw_of,
    ) = zip(*latest.values(), strict=True) if latest else ((),) * 10
    return LatestLabels(
        runs,
        list(at_of),
        np.array(passed_of, dtype=bool),
        np.array(names_of, dtype=bool),
        np.array(gate_of, dtype=np.int64),
        list(initiative_of) if detailed else None,
        np.array(seeded_of, dtype=bool),
        np.array(blind_of, dtype=bool),
        np.array(weight_of, dtype=np.float64),
        np.array(draw_of, dtype=np.float64),
    )


def in_batches(rows: Iterable[Any], size: int = 4096) -> Iterator[list[Any]]:
    """``rows`` in lists of ``size``, for a caller that has rows, not batches."""
    rows = iter(rows)
    while batch := list(islice(rows, size)):
        yield batch
