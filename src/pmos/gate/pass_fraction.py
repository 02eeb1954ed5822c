"""The gate's pass fraction: the one definition of the leniency tripwire's input.

Every verdict discloses the share of pass-side verdicts the gate issued just
before it, and ``pmos metrics`` reports the same share over its window; both
compute it with :class:`PassFraction`, so the two can never disagree.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

from pmos.gate.vocabulary import PASS_SIDE, SKIPPED
from pmos.store.layout import Store
from pmos.store.read import newest_first

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


def recent_pass_fraction(store: Store, window: int) -> float | str:
    """The gate's pass fraction (:class:`PassFraction`) over its latest verdicts.

    ``"unknown"`` when the gate has no verdict yet: a disclosure, not a zero.
    """
    tally = PassFraction(window)
    for record in newest_first(store, "evals"):
        tally.add(record.get("verdict"))
        if tally.full:
            break
    value = tally.value
    return "unknown" if value is None else value
