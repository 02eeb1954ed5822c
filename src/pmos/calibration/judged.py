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

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import compress, islice, repeat
from operator import add, attrgetter, eq, is_, is_not, lt, ne, not_
from typing import Any, NamedTuple, cast

import numpy as np

from pmos.errors import LedgerCorrupt
from pmos.gate.latest import instant_key
from pmos.gate.plan import draw as plan_draw
from pmos.gate.seeded import LABELLER, is_seeded_label
from pmos.gate.vocabulary import PASS_SIDE, SKIPPED
from pmos.timestamps import WRITERS_LAYOUT_LENGTH


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


#: The length of a stamp in the writers' layout; a key is such a stamp and a record id.
STAMP = WRITERS_LAYOUT_LENGTH


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


class _Ordered(NamedTuple):
    """A batch in the readers' order: its rows' record ids, and their times and
    record ids as text columns (:func:`_text`)."""

    ids: list[Any]
    ats: np.ndarray
    id_texts: np.ndarray


def _in_turn(
    batches: Iterable[Sequence[Any]], ordered: bool = True
) -> Iterator[tuple[Sequence[Any], _Ordered | None]]:
    """Each batch with its :class:`_Ordered` columns while the batches come in
    the readers' order (:func:`_in_order`); from the first that does not (or
    from the start, unless ``ordered``), with None: it is folded row by row."""
    greatest = ""
    for batch in batches:
        if not batch:
            continue
        found = None
        if ordered:
            ats, ids = list(map(_AT, batch)), list(map(_ID, batch))
            texts = _in_order(ats, ids, greatest)
            if texts is None:
                ordered = False
            else:
                greatest, found = ats[-1] + ids[-1], _Ordered(ids, *texts)
        yield batch, found


def _in_order(ats: list[Any], ids: list[Any], after: str) -> tuple[np.ndarray, np.ndarray] | None:
    """The times and record ids of a batch that may be folded by "the last row of
    a run wins", as text columns (:func:`_text`); else None. That holds when its
    rows' keys, ``time + record_id``, strictly increase, from above ``after``
    (the greatest key folded before), and the columns hold the strings exactly.

    Comparing keys compares instants only when every stamp is in the writers'
    layout (:data:`STAMP` ASCII characters, so ``stamp + record_id`` also
    compares as the pair). Times that strictly increase need no key made; only
    a batch with two rows of one time has its keys compared. The checks are C
    loops (``map``, ``join``, string slices), no Python step per row.
    """
    try:
        joined, joined_ids = "".join(ats), "".join(ids)
    except TypeError:  # a value that is not a string
        return None
    n = len(ats)
    if (
        set(map(len, ats)) != {STAMP}
        or not joined.isascii()
        or joined[STAMP - 1 :: STAMP] != "Z" * n
        or joined[10::STAMP] != "T" * n
        or not ats[0] + ids[0] > after
    ):
        return None
    if not all(map(lt, ats, islice(ats, 1, None))):
        keys = list(map(add, ats, ids))
        if not all(map(lt, keys, islice(keys, 1, None))):
            return None
    id_texts = _text(ids, joined_ids)
    if id_texts is None:
        return None
    return np.frombuffer(joined.encode("ascii"), dtype=f"S{STAMP}"), id_texts


def _text(values: list[str], joined: str) -> np.ndarray | None:
    """Strings (``joined``: them joined) as one numpy column of their UTF-8 bytes,
    each padded to the widest: the fold keeps a run's strings so, not as Python
    objects, which would outlive their batch scattered in memory, each touched
    again when let go. None when a string holds a NUL (the padding) or has no
    UTF-8 form: such a batch is folded row by row (:func:`_strings` reads a
    column back)."""
    if "\0" in joined:
        return None
    try:
        data = joined.encode()
    except UnicodeEncodeError:
        return None
    lengths = set(map(len, values))
    if len(lengths) == 1 and len(data) == len(joined):  # all ASCII, all one length
        width = lengths.pop()
        if width:
            return np.frombuffer(data, dtype=f"S{width}")
    return np.array(list(map(str.encode, values)), dtype=bytes)


def _strings(texts: np.ndarray) -> list[str]:
    """A text column (:func:`_text`) as strings."""
    return list(map(bytes.decode, texts.tolist()))


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

    Rows come a whole batch at a time: their runs' hashes, and one numpy
    column per field kept (numbers, or text: :func:`_text`). Once the rows
    added since the last look number the runs known (at least :attr:`least`),
    numpy finds each run's last row among the candidates (the last rows found
    before, and the rows since): each look costs about as much as the
    candidates it rewrites, so looking less often folds faster (a look at a
    quarter: 0.12 s more on the 1M + 1M kit). So memory grows with runs,
    not records, and no Python step, object or dictionary update is spent per
    row: a million updates of a 200,000-run table cost more than reading the
    records did, each touching memory the cache had long dropped.
    """

    least = 16_384

    def __init__(self, fields: int) -> None:
        #: The candidates, sorted by their runs' hashes: the hashes, row numbers
        #: and fields.
        self.hashes = self.numbers = np.zeros(0, dtype=np.int64)
        self.values: list[np.ndarray] = []
        self.new_hashes: list[np.ndarray] = []
        self.new_values: list[list[np.ndarray]] = [[] for _ in range(fields)]
        self.count = 0  # rows looked at
        self.pending = 0  # rows added since

    def add(self, hashes: np.ndarray, *values: np.ndarray) -> None:
        """Add the next rows: their runs' hashes and one column per field."""
        self.new_hashes.append(hashes)
        for new, column in zip(self.new_values, values, strict=True):
            new.append(column)
        self.pending += len(hashes)
        if self.pending >= max(self.least, len(self.hashes)):
            self._compact()

    def _compact(self) -> None:
        """Fold the rows added since into the candidates, which stay sorted by run
        hash: each run's last new row replaces its candidate or joins them."""
        added, self.pending = self.pending, 0
        hashes = np.concatenate(self.new_hashes)
        values = [np.concatenate(new) for new in self.new_values]
        start, self.count = self.count, self.count + added
        self.new_hashes, self.new_values = [], [[] for _ in values]
        # Each run's last new row, by run hash.
        unique, first = np.unique(hashes[::-1], return_index=True)
        last = added - 1 - first
        if not len(self.hashes):
            self.hashes, self.numbers = unique, start + last
            self.values = [new[last] for new in values]
            return
        at = np.searchsorted(self.hashes, unique)
        known = at < len(self.hashes)
        known[known] = self.hashes[at[known]] == unique[known]
        places, rows = at[known], last[known]
        fresh, new_rows = at[~known], last[~known]
        # A run already a candidate: its new last row takes the candidate's place;
        # a new run is inserted where its hash sorts.
        self.numbers[places] = start + rows
        self.hashes = np.insert(self.hashes, fresh, unique[~known])
        self.numbers = np.insert(self.numbers, fresh, start + new_rows)
        for i, new in enumerate(values):
            kept = self.values[i]
            if kept.dtype != new.dtype:  # a wider text column: widen the other
                wide = np.promote_types(kept.dtype, new.dtype)
                kept, new = kept.astype(wide), new.astype(wide)
            kept[places] = new[rows]
            self.values[i] = np.insert(kept, fresh, new[new_rows])

    def rows(self) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
        """Per run, in the order of their last rows: its hash, its last row's
        number, and its fields."""
        if self.pending:
            self._compact()
        order = np.argsort(self.numbers, kind="stable")
        if not len(self.values):  # no row at all
            self.values = [np.zeros(0, dtype=np.int64) for _ in self.new_values]
        return self.hashes[order], self.numbers[order], [v[order] for v in self.values]


def _hashes(values: Iterable[Any], count: int) -> np.ndarray:
    return np.fromiter(map(hash, values), dtype=np.int64, count=count)


def _later(at: str, record_id: Any, current_at: str, current_id: Any) -> bool:
    """Whether (``at``, ``record_id``) comes after the current pair in the readers' order."""
    return at > current_at or (at == current_at and record_id > current_id)


class _Columns:
    """Per judged verdict, in arrival order: the hashes of its run and record id,
    its *kind* and its score, as numpy arrays, one chunk per batch.

    A kind is a verdict's model, form and verdict word as one number: the
    model's index in :attr:`models` << 32 | the word's index in :attr:`words`
    << 1 | full (:func:`kind_parts` takes it apart). A ledger has a handful of
    each, so a small table per field stands for its strings, and a row's kind
    is found by dictionary look-ups in C loops, no object made per row.
    """

    def __init__(self, where: str) -> None:
        self.where = where
        self.count = 0
        self.models: list[str] = []
        self.model_of: dict[str, int] = {}
        self.words: list[Any] = []
        self.word_of: dict[Any, int] = {}
        self.chunks: list[tuple[np.ndarray | None, ...]] = []  # None: a column taken

    def add(
        self,
        rows: Sequence[Any],
        runs: list[str],
        ids: list[Any],
        words: list[Any],
        scores: list[Any],
    ) -> np.ndarray:
        """Add judged verdict rows, given their run ids, record ids, verdict words
        and scores; returns the runs' hashes."""
        count = len(rows)
        models = list(map(_MODEL, rows))
        model = self._indices(models, self.model_of, self.models, rows)
        word = self._indices(words, self.word_of, self.words, None)
        full = np.fromiter(map(eq, map(_FORM, rows), repeat("full")), dtype=bool, count=count)
        hashes = _hashes(runs, count)
        self.chunks.append(
            (
                hashes,
                _hashes(ids, count),
                model << 32 | word << 1 | full,
                np.array(scores, dtype=np.float64),  # None becomes NaN
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
            list(map(_WORD, rows)),
            list(map(_SCORE, rows)),
        )

    def _indices(
        self, values: list[Any], index: dict[Any, int], table: list[Any], rows: Sequence[Any] | None
    ) -> np.ndarray:
        """Each value's place in ``table``; a value not yet there joins it (a model,
        when ``rows`` are given, only if it is a string)."""
        found = list(map(index.get, values))
        if None in found:
            for value in dict.fromkeys(values):
                if value in index:
                    continue
                if rows is not None and not isinstance(value, str):
                    # The schema requires a model of every judged verdict.
                    row = rows[values.index(value)]
                    raise LedgerCorrupt(
                        self.where,
                        None,
                        f"a {row.verdict} verdict of run {row.run_id} names no evaluator_model",
                    )
                index[value] = len(table)
                table.append(value)
            found = list(map(index.__getitem__, values))
        return np.fromiter(found, dtype=np.int64, count=len(found))

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


def kind_parts(kinds: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(model index, word index, full) of each kind (:class:`_Columns`)."""
    return kinds >> 32, (kinds >> 1) & 0x7FFFFFFF, (kinds & 1) != 0


#: The columns of no judged verdict: (runs, ids, kinds, scores).
_EMPTY_COLUMNS = (
    np.zeros(0, dtype=np.int64),
    np.zeros(0, dtype=np.int64),
    np.zeros(0, dtype=np.int64),
    np.zeros(0, dtype=np.float64),
)


def _fold_in_order(
    batch: Sequence[Any],
    ordered: _Ordered,
    columns: _Columns,
    last: _LastRows,
    skips: dict[str, tuple[Any, Any, str]],
) -> None:
    """Fold a batch in the readers' order, given its :class:`_Ordered` columns,
    each field read once. A run's latest verdict keeps its time and record id."""
    ids, ats, id_texts = ordered
    words = list(map(_WORD, batch))
    if SKIPPED in words:  # note the skips (a step each), fold the rest
        judged = list(map(ne, words, repeat(SKIPPED)))
        for row in compress(batch, map(not_, judged)):
            skips[row.run_id] = (row.evaluator_model, None, row.recorded_at)
        batch, ids, words = (list(compress(values, judged)) for values in (batch, ids, words))
        if not batch:
            return
        mask = np.array(judged, dtype=bool)
        ats, id_texts = ats[mask], id_texts[mask]
    runs = list(map(_RUN, batch))
    hashes = columns.add(batch, runs, ids, words, list(map(_SCORE, batch)))
    last.add(hashes, ats, id_texts)


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
    last = _LastRows(2)  # per row its time and record id (text columns)
    #: Row by row: run hash -> (row number, time, record id, initiative).
    latest: dict[int, tuple[int, str, Any, Any]] | None = {} if detailed else None
    skips: dict[str, tuple[Any, Any, str]] = {}
    scoped: list[bool] = []  # filtered reports: per judged row, in scope?
    ats: list[str] = []  # filtered reports: per judged row
    initiatives: list[Any] = []  # filtered reports: per judged row
    for batch, ordered in _in_turn(batches, not detailed):
        if ordered is not None:
            _fold_in_order(batch, ordered, columns, last, skips)
            continue
        if latest is None:  # from here on, row by row
            hashes, numbers, (last_ats, last_ids) = last.rows()
            latest = {
                run: (number, at, record_id, None)
                for run, number, at, record_id in zip(
                    hashes.tolist(),
                    numbers.tolist(),
                    _strings(last_ats),
                    _strings(last_ids),
                    strict=True,
                )
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
        _, numbers, (last_ats, _) = last.rows()
        kept_ats = _strings(last_ats)
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
    models, words = columns.models, columns.words
    passes = np.array([word in PASS_SIDE for word in words] or [False], dtype=np.int64)
    numbers = winners.numbers
    earlier = Earlier(models, detailed)
    model_of, word_of, full = kind_parts(columns.take(2))
    # Per verdict, the machine number Earlier keeps: model index << 2 | full << 1 | passed.
    codes = model_of << 2 | full << 1 | passes[word_of]
    del full
    superseded = np.ones(len(codes), dtype=bool)
    superseded[numbers] = False
    won_codes, earlier.codes = codes[numbers], codes[superseded]
    del codes
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
        in_scope = np.array(scoped, dtype=bool)
        model_of, word_of = model_of[in_scope], word_of[in_scope]
    # The pass fractions' windows: the last judged verdicts in scope, per model too.

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
        last_words(word_of),
        {model: last_words(word_of[model_of == i]) for i, model in enumerate(models)},
    )


def _run_texts(runs: list[Any]) -> np.ndarray | None:
    """The runs of a batch as a text column (:func:`_text`); None when one cannot be."""
    try:
        return _text(runs, "".join(runs))
    except TypeError:  # a run id that is not a string
        return None


def _label_columns(batch: Sequence[Any], runs: list[str]) -> list[np.ndarray]:
    """A batch of labels' numeric columns: passed, names a verdict, the hash of the
    verdict it names, seeded, blind, plan weight, plan draw.

    Each is a C loop over the batch. The fields a label rarely carries (its
    author, blind, a plan weight) are looked at per row only in a batch where
    some label carries them, or where some row has no such field (rows read
    elsewhere): the same functions then decide, row by row."""
    count = len(batch)
    gates = list(map(_GATE, batch))
    passed = np.fromiter(map(eq, map(_LABEL, batch), repeat("pass")), dtype=bool, count=count)
    names = np.fromiter(map(is_not, gates, repeat(None)), dtype=bool, count=count)
    by, blind, weights = (_field(batch, name) for name in ("by", "blind", "plan_weight"))
    if by is not None and LABELLER not in by:
        seeded = np.zeros(count, dtype=bool)
    else:
        seeded = np.fromiter(map(is_seeded_label, runs, map(_BY, batch)), dtype=bool, count=count)
    if blind is not None:
        blinds = np.fromiter(map(is_, blind, repeat(True)), dtype=bool, count=count)
    else:
        blinds = np.fromiter(map(_blind, batch), dtype=bool, count=count)
    if weights is not None and weights.count(None) == count:
        plan_weights, draws = np.zeros(count), np.full(count, NO_DRAW)
    else:
        plan_weights = np.fromiter(map(_plan_weight, batch), dtype=np.float64, count=count)
        draws = np.fromiter(map(_plan_draw, batch), dtype=np.float64, count=count)
    return [passed, names, _hashes(gates, count), seeded, blinds, plan_weights, draws]


def _field(batch: Sequence[Any], name: str) -> list[Any] | None:
    """Each row's ``name`` field; None when some row has no such field."""
    try:
        return list(map(attrgetter(name), batch))
    except AttributeError:
        return None


def latest_labels(
    batches: Iterable[Sequence[Any]], *, detailed: bool = False, where: str = "acceptances"
) -> LatestLabels:
    """Fold batches of label rows (:data:`LABEL_FIELDS`, plus :data:`FILTER_FIELDS`
    when ``detailed``), oldest first, keeping each run's latest label.

    As :func:`latest_verdicts`: batches in the readers' order go to
    :class:`_LastRows`, and from the first that is not, row by row through
    ``latest``: run -> (time, passed, names, gate hash, initiative, record id, seeded).
    """
    # per row its time, record id, run (text columns), passed, names, gate hash, seeded,
    # blind, plan weight, plan draw[, initiative]
    last = _LastRows(11 if detailed else 10)
    latest: dict[str, tuple[Any, ...]] | None = None
    for batch, ordered in _in_turn(batches):
        runs = list(map(_RUN, batch)) if ordered is not None and latest is None else []
        run_texts = _run_texts(runs)
        if ordered is not None and latest is None and run_texts is not None:
            count = len(runs)
            scope = (
                [np.fromiter(map(_INITIATIVE, batch), dtype=object, count=count)]
                if detailed
                else []
            )
            last.add(
                _hashes(runs, count),
                ordered.ats,
                ordered.id_texts,
                run_texts,
                *_label_columns(batch, runs),
                *scope,
            )
            continue
        if latest is None:  # from here on, row by row
            _, _, (ats, ids, run_col, *values) = last.rows()
            label_runs = _strings(run_col)
            own = values.pop().tolist() if detailed else repeat(None, len(label_runs))
            latest = {
                run: (at, passed, names, gate, initiative, record_id, seeded, blind, w, u)
                for run, at, record_id, initiative, passed, names, gate, seeded, blind, w, u in zip(
                    label_runs,
                    _strings(ats),
                    _strings(ids),
                    own,
                    *(v.tolist() for v in values),
                    strict=True,
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
        _, _, (ats, _, run_col, *values) = last.rows()
        initiative_list = values.pop().tolist() if detailed else None
        passed, names, gate_hashes, seeded, blind, weights, draws = values
        return LatestLabels(
            _strings(run_col),
            _strings(ats),
            passed.astype(bool),
            names.astype(bool),
            gate_hashes.astype(np.int64),
            initiative_list,
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
