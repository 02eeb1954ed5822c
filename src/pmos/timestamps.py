"""Record timestamps: written as RFC 3339 UTC, read back as aware datetimes."""

from __future__ import annotations

from datetime import UTC, datetime

from pmos.errors import BadInput

#: RFC 3339 date-time, ASCII digits only; readers type stored timestamps with it
#: (pmos.rows), so a record carrying something else is refused with its line.
RFC3339 = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})$"
)


def now_rfc3339() -> str:
    """The current instant as stored in every record: microseconds, UTC, 'Z'."""
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def parse_instant(stamp: str) -> datetime:
    """A stored timestamp as an aware datetime; one without an offset is taken as UTC."""
    try:
        moment = datetime.fromisoformat(stamp.upper())  # RFC 3339 allows 't' and 'z'
    except (ValueError, AttributeError) as exc:  # 2026-02-30T..., not a string
        raise BadInput(f"timestamp {stamp!r} is not an RFC 3339 date-time: {exc}") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
