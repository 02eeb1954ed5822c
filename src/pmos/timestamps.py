"""Timestamps: written as RFC 3339 UTC, read back as aware datetimes.

Every timestamp pmos writes or shows is formatted here: in records, reports and
ids alike the instant is in UTC and says so with a 'Z', so the same instant is
always the same text (and, at one precision, text order is time order).

Every timestamp a record stores must name an instant in the years
:data:`FIRST_YEAR` to :data:`LAST_YEAR` (UTC). :func:`stamp_problem` is the
one place that range is checked: the schema-level check of every record
(:func:`pmos.schemas.validate`, so the writers and ``pmos ledger verify``) and
``pmos sync`` (before a timestamp reaches a ``timestamptz`` column) both ask
it, so a record the kit accepts is one the database stores, and one refused
is refused on both sides with the same words.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from typing import Literal

from pmos.errors import BadInput


def _utc(moment: datetime) -> datetime:
    """``moment`` in UTC; a naive one is taken as UTC (as readers take a stored one)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def rfc3339(
    moment: datetime, *, timespec: Literal["seconds", "microseconds"] = "microseconds"
) -> str:
    """``moment`` as RFC 3339 in UTC with 'Z': ``2026-11-30T08:15:00.123456Z``, or
    to the second (``2026-11-30T08:15:00Z``) for what people read."""
    return _utc(moment).isoformat(timespec=timespec).replace("+00:00", "Z")


def day_text(day: date) -> str:
    """A calendar day as written in pmos.yaml: ``2026-11-30``."""
    return day.isoformat()


def midnight(day: date) -> str:
    """The first instant of a UTC day, to the second: ``2026-11-30T00:00:00Z``."""
    return rfc3339(datetime.combine(day, time(), UTC), timespec="seconds")


def compact(moment: datetime, *, microseconds: bool = False) -> str:
    """``moment`` in UTC in ISO 8601's basic form, for ids and file names, where
    ':' and '-' get in the way: ``20261130T081500Z`` (``20261130T081500123456Z``)."""
    return _utc(moment).strftime("%Y%m%dT%H%M%S%fZ" if microseconds else "%Y%m%dT%H%M%SZ")


def now_rfc3339() -> str:
    """The current instant as stored in every record: microseconds, UTC, 'Z'."""
    return rfc3339(datetime.now(UTC))


def seconds_rfc3339(moment: datetime) -> str:
    """An instant as a message shows it: to the second, UTC, 'Z'."""
    return rfc3339(moment, timespec="seconds")


def parse_instant(stamp: str) -> datetime:
    """A stored timestamp as an aware datetime; one without an offset is taken as UTC.

    Readers type a stored timestamp only as a string (a pattern check on every
    line of a large ledger costs more than the parse of the few they use), so
    a malformed one is refused here, when it is used.
    """
    try:
        moment = datetime.fromisoformat(stamp)
    except (ValueError, TypeError) as exc:  # 2026-02-30T..., not a string
        try:
            moment = datetime.fromisoformat(stamp.upper())  # RFC 3339 allows 't' and 'z'
        except (ValueError, AttributeError):
            raise BadInput(f"timestamp {stamp!r} is not an RFC 3339 date-time: {exc}") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


#: The years a stored timestamp may fall in (UTC), both included: no pmos record
#: predates the Unix epoch, and RFC 3339 writes a year in four digits.
FIRST_YEAR = 1970
LAST_YEAR = 9999


def stamp_problem(stamp: str) -> str | None:
    """Why ``stamp`` cannot be a record's timestamp (not RFC 3339, or outside the
    years :data:`FIRST_YEAR`-:data:`LAST_YEAR` in UTC), or None when it can.
    (``pmos sync`` asks this of every record: the message is made only for a
    stamp that has a problem, and a stamp in the writers' layout, already in
    UTC, is read once.)"""
    if len(stamp) == WRITERS_LAYOUT_LENGTH and stamp[-1] == "Z":
        try:
            year = datetime.fromisoformat(stamp).year
        except ValueError:
            pass  # the reading below says what is wrong
        else:
            return None if FIRST_YEAR <= year <= LAST_YEAR else _out_of_range(stamp)
    return _read_problem(stamp)


#: The length of a stamp as the writers store it, ``YYYY-MM-DDTHH:MM:SS.ffffffZ``.
WRITERS_LAYOUT_LENGTH = 27


def _read_problem(stamp: str) -> str | None:
    """:func:`stamp_problem` of any stamp."""
    if stamp[:4].isdigit() and not FIRST_YEAR <= int(stamp[:4]) <= LAST_YEAR:
        return _out_of_range(stamp)
    try:
        moment = parse_instant(stamp)
    except BadInput as exc:
        return str(exc)
    try:
        year = moment.astimezone(UTC).year
    except OverflowError:  # 9999-12-31T23:30:00-01:00 is in the year 10000
        return _out_of_range(stamp)
    return None if FIRST_YEAR <= year <= LAST_YEAR else _out_of_range(stamp)


def _out_of_range(stamp: str) -> str:
    return (
        f"timestamp {stamp!r} is out of range: a record's time must fall in the years "
        f"{FIRST_YEAR} to {LAST_YEAR} (UTC)"
    )
