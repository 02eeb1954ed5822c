"""Periods for the calibration trend: ISO weeks, calendar months, or runs of N pairs.

A pair belongs to the period of its label's ``recorded_at`` (UTC): the moment
the PM judged the gate's verdict, known for every pair without keeping the
time of every superseded verdict. ``runs of N`` cuts the pairs, ordered by
that time, into consecutive groups of N (the last may be shorter), for a kit
whose labels come too unevenly for calendar periods.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, timedelta
from typing import NamedTuple

from pmos.timestamps import midnight

#: "week", "month" or a number of pairs per period.
By = str | int

WEEK, MONTH = "week", "month"


class Period(NamedTuple):
    """One period: its name, and where it starts and ends (RFC 3339, UTC).

    Calendar periods run from their first instant to the first instant of the
    next one; a period of N runs from its first pair's label time to its last's.
    """

    name: str
    start: str
    end: str


def parse_by(text: str) -> By:
    """``week``, ``month`` or a whole number of pairs (at least 1); ValueError otherwise."""
    value = text.strip().lower()
    if value in (WEEK, MONTH):
        return value
    if value.isdigit() and int(value) >= 1:
        return int(value)
    raise ValueError(f"expected week, month or a whole number of pairs (at least 1); got {text!r}")


def _week(day_text: str) -> tuple[str, str, str]:
    year, week, _ = date.fromisoformat(day_text).isocalendar()
    monday = date.fromisocalendar(year, week, 1)
    return f"{year}-W{week:02d}", midnight(monday), midnight(monday + timedelta(days=7))


def _month(month_text: str) -> tuple[str, str, str]:
    year, month = int(month_text[:4]), int(month_text[5:7])
    following = date(year + month // 12, month % 12 + 1, 1)
    return month_text, midnight(date(year, month, 1)), midnight(following)


def assign_periods(ats: list[str], ids: list[str], by: By) -> tuple[list[int], list[Period]]:
    """Each pair's period index and the periods, oldest first.

    ``ats`` are the pairs' times (their labels') in the writers' layout
    (``YYYY-MM-DDTHH:MM:SS.ffffffZ``, see :func:`pmos.gate.latest.instant_key`)
    and ``ids`` break ties in time (the run ids).
    """
    if isinstance(by, bool) or (isinstance(by, int) and by < 1):
        raise ValueError(f"a period needs at least one pair; got {by!r}")
    if isinstance(by, int):
        order = sorted(range(len(ats)), key=lambda i: (ats[i], ids[i]))
        index = [0] * len(ats)
        periods = []
        for first in range(0, len(order), by):
            chunk = order[first : first + by]
            for i in chunk:
                index[i] = first // by
            periods.append(
                Period(f"runs {first + 1}-{first + len(chunk)}", ats[chunk[0]], ats[chunk[-1]])
            )
        return index, periods
    describe: Callable[[str], tuple[str, str, str]]
    if by == WEEK:
        part, describe = 10, _week
    elif by == MONTH:
        part, describe = 7, _month
    else:
        raise ValueError(f"unknown period {by!r}")
    pieces = [at[:part] for at in ats]
    found = {piece: describe(piece) for piece in set(pieces)}
    names = sorted({spec[0] for spec in found.values()})
    position = {name: i for i, name in enumerate(names)}
    index_of = {piece: position[spec[0]] for piece, spec in found.items()}
    spans = {spec[0]: Period(*spec) for spec in found.values()}
    return [index_of[piece] for piece in pieces], [spans[name] for name in names]
