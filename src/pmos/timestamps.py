"""Record timestamps: written as RFC 3339 UTC, read back as aware datetimes."""

from __future__ import annotations

from datetime import UTC, datetime

from pmos.errors import BadInput


def now_rfc3339() -> str:
    """The current instant as stored in every record: microseconds, UTC, 'Z'."""
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def seconds_rfc3339(moment: datetime) -> str:
    """An instant as a message shows it: to the second, UTC, 'Z'."""
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


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
