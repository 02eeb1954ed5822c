"""Token issuing (unchanged by this run; shown because the criterion depends on it)."""

from datetime import UTC, datetime, timedelta

from app.config import load

CONFIG = load("auth")


def access_token_expiry(issued_at: datetime | None = None) -> datetime:
    issued_at = issued_at or datetime.now(UTC)
    return issued_at + timedelta(seconds=CONFIG["access_token_ttl_seconds"])
