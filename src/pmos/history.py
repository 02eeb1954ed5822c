"""Point look-ups into the ledgers that writers need before appending.

They read newest-first, so the common case (a run registered recently, the last
N verdicts) touches only the end of a large ledger.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

from pmos.kit import Kit
from pmos.ledger import iter_records_reversed
from pmos.verdict_rules import PASS_SIDE, SKIPPED


def find_run(kit: Kit, run_id: str) -> dict[str, Any] | None:
    """The registration record of ``run_id``, or None."""
    for record in iter_records_reversed(kit.ledger_path("runs"), "runs"):
        if record.get("run_id") == run_id:
            return record
    return None


def is_judged(verdict: Mapping[str, Any]) -> bool:
    """Whether a verdict record is a judgement: every verdict but SKIPPED.

    A skip says judging did not happen, so whatever else it carries is not a
    finding: it neither pairs with a PM label, nor can be overridden, nor
    yields follow-up work.
    """
    return verdict.get("verdict") != SKIPPED


def find_label(kit: Kit, run_id: str) -> dict[str, Any] | None:
    """The run's most recent PM label, or None."""
    for record in iter_records_reversed(kit.ledger_path("acceptances"), "acceptances"):
        if record.get("run_id") == run_id:
            return record
    return None


def latest_verdict(kit: Kit, run_id: str, *, judged: bool = False) -> dict[str, Any] | None:
    """The run's most recent verdict, or None; with ``judged`` only :func:`is_judged` ones."""
    for record in iter_records_reversed(kit.ledger_path("evals"), "evals"):
        if record.get("run_id") == run_id and (not judged or is_judged(record)):
            return record
    return None


#: The largest pass-fraction window accepted (pmos.yaml's schema says the same).
MAX_WINDOW = 1_000_000


class PassFraction:
    """The one definition of the gate's pass fraction, fed one verdict at a time.

    Share of pass-side verdicts (:data:`PASS_SIDE`) among the last ``window``
    non-SKIPPED verdicts; a SKIPPED verdict is no judgement, so it neither
    counts nor displaces one. Feed it oldest-first (a forward reader) or
    newest-first until :attr:`full` (a reverse reader): the window holds the
    same verdicts either way. ``value`` is None while nothing was judged.
    """

    __slots__ = ("_recent", "window")

    def __init__(self, window: int) -> None:
        if window < 1:
            raise ValueError(f"the pass-fraction window must be at least 1, got {window}")
        self.window = window
        self._recent: deque[bool] = deque(maxlen=window)

    @classmethod
    def of(cls, verdicts: Iterable[Any], window: int) -> PassFraction:
        """The pass fraction of ``verdicts``, oldest first."""
        tally = cls(window)
        for verdict in verdicts:
            tally.add(verdict)
        return tally

    def add(self, verdict: Any) -> None:
        if verdict != SKIPPED:
            self._recent.append(verdict in PASS_SIDE)

    @property
    def seen(self) -> int:
        return len(self._recent)

    @property
    def full(self) -> bool:
        return len(self._recent) >= self.window

    @property
    def value(self) -> float | None:
        return round(sum(self._recent) / len(self._recent), 6) if self._recent else None


def recent_pass_fraction(kit: Kit, window: int) -> float | str:
    """The gate's pass fraction (:class:`PassFraction`) over its latest verdicts.

    ``"unknown"`` when the gate has no verdict yet: a disclosure, not a zero.
    """
    tally = PassFraction(window)
    for record in iter_records_reversed(kit.ledger_path("evals"), "evals"):
        tally.add(record.get("verdict"))
        if tally.full:
            break
    value = tally.value
    return "unknown" if value is None else value
