"""Record timestamps: written as RFC 3339 UTC, read back as aware datetimes.

Every timestamp a record stores must name an instant in the years
:data:`FIRST_YEAR` to :data:`LAST_YEAR` (UTC). :func:`stamp_problem` is the
one place that range is checked: the schema-level check of every record
(:func:`pmos.schemas.validate`, so the writers and ``pmos ledger verify``) and
``pmos sync`` (before a timestamp reaches a ``timestamptz`` column) both ask
it, so a record the kit accepts is one the database stores, and one refused
is refused on both sides with the same words.
"""

from __future__ import annotations

from datetime import UTC, datetime

from pmos.errors import BadInput


def now_rfc3339() -> str:
    """The current instant as stored in every record: microseconds, UTC, 'Z'."""
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


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
    years :data:`FIRST_YEAR`-:data:`LAST_YEAR` in UTC), or None when it can."""
    out_of_range = (
        f"timestamp {stamp!r} is out of range: a record's time must fall in the years "
        f"{FIRST_YEAR} to {LAST_YEAR} (UTC)"
    )
    if stamp[:4].isdigit() and not FIRST_YEAR <= int(stamp[:4]) <= LAST_YEAR:
        return out_of_range
    try:
        moment = parse_instant(stamp)
    except BadInput as exc:
        return str(exc)
    try:
        year = moment.astimezone(UTC).year
    except OverflowError:  # 9999-12-31T23:30:00-01:00 is in the year 10000
        return out_of_range
    return None if FIRST_YEAR <= year <= LAST_YEAR else out_of_range
