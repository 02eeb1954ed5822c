"""``pmos queue --db``: each kit's queue, from the same code as file mode.

Per kit, the database hands over the rows :func:`pmos.calibration.queue.compute_queue`
reads from the ledgers (registrations, verdicts, labels, each oldest first by
recorded time and record id), and :func:`pmos.calibration.queue.queue_from_rows`
decides the debts. Entries carry their ``kit_id`` and are merged oldest first.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pmos.calibration.queue import LABEL_FIELDS, RUN_FIELDS, VERDICT_FIELDS, queue_from_rows
from pmos.db.connect import connection
from pmos.db.migrate import require_current
from pmos.db.readings import rows_of, select_kits
from pmos.timestamps import parse_instant, seconds_rfc3339


def db_queue(
    dsn: str, *, kits: list[str] | None = None, now: datetime | None = None
) -> dict[str, Any]:
    """Verification, acceptance and calibration debt of every kit (or those named)."""
    now = now or datetime.now(UTC)
    debts: dict[str, list[dict[str, Any]]] = {
        "verification_debt": [],
        "acceptance_debt": [],
        "calibration_debt": [],
    }
    with connection(dsn, purpose="queue") as conn:
        require_current(conn)
        selected = select_kits(conn, kits)
        for ref in selected:
            queue = queue_from_rows(
                rows_of(conn, "runs", RUN_FIELDS, [ref.key]),
                rows_of(conn, "evals", VERDICT_FIELDS, [ref.key]),
                rows_of(conn, "acceptances", LABEL_FIELDS, [ref.key]),
                now,
            )
            found = queue.as_dict()
            for name, items in debts.items():
                items += [{"kit_id": ref.kit_id, **item} for item in found.get(name, [])]

    def order(item: dict[str, Any]) -> tuple[datetime, str, str]:
        return (parse_instant(item["age_from"]), item["kit_id"], item["run_id"])

    for items in debts.values():
        items.sort(key=order)
    return {
        "now": seconds_rfc3339(now),
        "kits": [k.kit_id for k in selected],
        **debts,
    }
