"""Record timestamps: written as RFC 3339 UTC, read back as aware datetimes."""

from __future__ import annotations

from datetime import UTC, datetime


def now_rfc3339() -> str:
    """The current instant as stored in every record: microseconds, UTC, 'Z'."""
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def parse_instant(stamp: str) -> datetime:
    """A stored timestamp as an aware datetime; one without an offset is taken as UTC."""
    moment = datetime.fromisoformat(stamp)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
