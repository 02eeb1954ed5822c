"""``pmos queue --db``: each kit's queue, from the same code as file mode.

Per kit, the database hands over what :func:`pmos.calibration.queue.compute_queue`
reads from the ledgers (each run's first registration, latest verdict, latest
judged verdict and first verdict, and which runs have a label), and
:func:`pmos.calibration.queue.queue_from` decides the debts. Entries carry
their ``kit_id`` and are merged oldest first.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pmos.calibration.queue import queue_from
from pmos.db.connect import connection
from pmos.db.migrate import require_current
from pmos.db.readings import select_kits
from pmos.timestamps import parse_instant


def db_queue(dsn: str, *, kits: list[str] | None = None, now: datetime | None = None) -> dict:
    """Verification and acceptance debt of every kit (or those named), oldest first."""
    now = now or datetime.now(UTC)
    with connection(dsn, purpose="queue") as conn:
        require_current(conn)
        selected = select_kits(conn, kits)
        keys = [k.key for k in selected]
        registered: dict[int, dict[str, tuple[str, str]]] = {key: {} for key in keys}
        for kit, run, initiative, at in conn.execute(
            "SELECT kit, run_id, initiative_id, recorded_at_text FROM v_registration "
            "WHERE kit = ANY(%s)",
            (keys,),
        ):
            registered[kit][run] = (initiative, at)
        verdicts: dict[int, dict[str, list[Any]]] = {key: {} for key in keys}
        for kit, run, verdict, reason, judged, initiative, at in conn.execute(
            "SELECT lv.kit, lv.run_id, lv.verdict, lv.skipped_reason, j.verdict, "
            "fv.initiative_id, fv.recorded_at_text "
            "FROM v_latest_verdict lv "
            "JOIN v_first_verdict fv ON fv.kit = lv.kit AND fv.run_id = lv.run_id "
            "LEFT JOIN v_latest_judged j ON j.kit = lv.kit AND j.run_id = lv.run_id "
            "WHERE lv.kit = ANY(%s)",
            (keys,),
        ):
            verdicts[kit][run] = [verdict, reason, judged, initiative, at]
        labelled: dict[int, set[str]] = {key: set() for key in keys}
        for kit, run in conn.execute(
            "SELECT DISTINCT kit, run_id FROM acceptances WHERE kit = ANY(%s)", (keys,)
        ):
            labelled[kit].add(run)
    verification: list[dict[str, Any]] = []
    acceptance: list[dict[str, Any]] = []
    for ref in selected:
        queue = queue_from(registered[ref.key], verdicts[ref.key], labelled[ref.key], now)
        verification += [{"kit_id": ref.kit_id, **item} for item in queue.verification_debt]
        acceptance += [{"kit_id": ref.kit_id, **item} for item in queue.acceptance_debt]

    def order(item: dict[str, Any]) -> tuple[datetime, str, str]:
        return (parse_instant(item["age_from"]), item["kit_id"], item["run_id"])

    verification.sort(key=order)
    acceptance.sort(key=order)
    return {
        "now": now.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "kits": [k.kit_id for k in selected],
        "verification_debt": verification,
        "acceptance_debt": acceptance,
    }
