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

* :func:`per_run` and :func:`verdicts_per_run` here keep the rows themselves,
  for readers of modest kits that want whole records (the queue, the exemplars);
* :mod:`pmos.calibration.judged` is the calibration reader of a million-line
  ledger: per run small named tuples, folded from whole batches of rows.

:func:`judged_by` is the pairing rule: which of a run's verdicts a label
judges (calibration-method.md, "Pairs").
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from pmos.gate.seeded import is_seeded_label
from pmos.gate.vocabulary import SKIPPED
from pmos.timestamps import parse_instant, rfc3339

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
    at: str = row.recorded_at
    other: str = than.recorded_at
    record_id: str = row.record_id
    return at > other or (at == other and record_id >= than.record_id)


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


# ---------------------------------------------------------------- order and pairing


def instant_key(stamp: str) -> str:
    """A stored timestamp as the writers store it, ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` in
    UTC: in that one layout, comparing strings compares instants."""
    return rfc3339(parse_instant(stamp))


def judged_choice(
    names_latest: Any, names_earlier: Any, latest_before: Any, ground_truth: Any = False
) -> tuple[Any, Any]:
    """The pairing rule: whether a run's latest label judges its latest judged
    verdict, or an earlier judged verdict of the run (at most one is true;
    neither: it judges nothing).

    A label judges the verdict it names (``names_latest``, ``names_earlier``:
    its ``gate_record_id`` is that verdict's record id). A label naming none
    (recorded before any judgement, by an older writer, or against a SKIPPED
    verdict) judges the latest judged verdict if that was recorded before it
    (``latest_before``), and nothing otherwise: a PM label written before the
    run's first judged verdict judged no verdict, so the run goes back to the
    acceptance queue once it is judged. A seeded known-bad case's answer key
    (``ground_truth``, :func:`pmos.gate.seeded.is_seeded_label`) is the case's
    truth whatever the gate said, so it judges the latest judged verdict
    whenever that came, whichever verdict it names. Works on booleans and on
    numpy arrays of them alike (calibration decides for every label at once).
    """
    # ``x ^ True`` is "not x" for a bool and for a numpy array of them alike, and
    # this module stays free of numpy (the writers and the queue never load it).
    takes_earlier = names_earlier & (names_latest ^ True) & (ground_truth ^ True)
    takes_latest = names_latest | ground_truth | ((names_earlier ^ True) & latest_before)
    return takes_latest, takes_earlier


def judged_by(label: Any, latest: Any, named: Any = None) -> Any:
    """The verdict a run's latest ``label`` judges (None: none), by
    :func:`judged_choice`, given the run's latest judged verdict and ``named``,
    the judged verdict *of the same run* whose record id the label's
    ``gate_record_id`` names, if there is one. Works on rows and named tuples
    (a row without ``by`` is never a seeded case's answer key).
    """
    gate_id = label.gate_record_id
    takes_latest, takes_earlier = judged_choice(
        gate_id is not None and gate_id == latest.record_id,
        named is not None and named.record_id == gate_id,
        latest.recorded_at <= label.recorded_at,
        is_seeded_label(label.run_id, getattr(label, "by", None)),
    )
    return latest if takes_latest else named if takes_earlier else None
