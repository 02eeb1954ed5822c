"""``pmos metrics --db``: the file readers' rows, read from SQL.

The file readers (:mod:`pmos.calibration.pairs`) stream each ledger's records
as rows of a few typed fields, oldest first. Here the database hands over the
same rows, in the same order (recorded time, then record id), and the same
Python code pairs them and computes every statistic, interval and the
calibrated decision: nothing is re-implemented for the database.

A run is a kit's run: over several kits a run id is prefixed with its kit's
id, so equal run ids of two kits stay two runs.
"""

from __future__ import annotations

from collections import namedtuple
from datetime import datetime
from functools import cache, partial
from itertools import count
from typing import Any, NamedTuple

from pmos.db.columns import column_of
from pmos.db.connect import connection
from pmos.db.migrate import require_current
from pmos.db.settings import config_from
from pmos.db.tables import table_of
from pmos.errors import BadInput
from pmos.kit import Config


class KitRef(NamedTuple):
    key: int
    kit_id: str


def select_kits(conn: Any, wanted: list[str] | None) -> list[KitRef]:
    """The kits a command covers: all (by default) or the ones named, each known."""
    rows = conn.execute("SELECT kit, kit_id FROM kits ORDER BY kit_id").fetchall()
    known = [KitRef(key, kit_id) for key, kit_id in rows]
    if not wanted:
        return known
    by_id = {k.kit_id: k for k in known}
    missing = [name for name in dict.fromkeys(wanted) if name not in by_id]
    if missing:
        listed = ", ".join(k.kit_id for k in known[:20]) or "none yet"
        raise BadInput(
            f"--kit: no kit {', '.join(repr(m) for m in missing)} in the database "
            f"(known: {listed}{', ...' if len(known) > 20 else ''})"
        )
    return [by_id[name] for name in dict.fromkeys(wanted)]


def settings_config(conn: Any, kits: list[KitRef], one_kit: bool) -> Config:
    """The settings that apply: the kit's own (as last synced) when exactly one kit
    was asked for, else the team's (``team_settings``)."""
    if one_kit and len(kits) == 1:
        row = conn.execute(
            "SELECT settings FROM v_kit_settings WHERE kit = %s", (kits[0].key,)
        ).fetchone()
    else:
        row = conn.execute("SELECT settings FROM team_settings").fetchone()
    return config_from(row[0] if row else {})


def rows_of(
    conn: Any, kind: str, fields: tuple[str, ...], keys: list[int], *, prefix: bool = False
) -> Any:
    """The rows :func:`pmos.store.read.records` would yield for ``fields`` of ``kind``,
    from the kits ``keys``, oldest first (by recorded time, then record id).

    Only typed columns are read (:mod:`pmos.db.columns`; a timestamp as the
    text the record stores), never the jsonb, and in PostgreSQL's binary
    format: the server sends each value as it holds it, and psycopg builds
    the Python value without parsing text. The order compares strings by
    code point (``COLLATE "C"``), as Python and file mode do, whatever the
    database's collation. Over several kits (``prefix``), run ids and the
    verdict ids labels name (and the verdicts' own ids) are prefixed with their kit's
    id by the server.
    """
    row = _plain_row(kind, fields)
    table = table_of(kind)
    columns = []
    for name in fields:
        column = "recorded_at_text" if name == "recorded_at" else column_of(kind, name)
        if column is None:
            raise ValueError(f"no typed column holds {name!r} of {kind} records")
        value = f"t.{column}"
        # A verdict's own id too, so a label names its verdict over several kits as it
        # does in one (the labelling plan's weight holds only for the verdict named).
        if prefix and (name in ("run_id", "gate_record_id") or (kind, name) == _VERDICT_ID):
            value = f"k.kit_id || '/' || {value}"
        columns.append(value)
    cursor = conn.cursor(f"pmos_rows_{next(_cursors)}", binary=True)
    cursor.execute(
        f"SELECT {', '.join(columns)} FROM {table} t JOIN kits k ON k.kit = t.kit "
        'WHERE t.kit = ANY(%s) ORDER BY t.recorded_at_text COLLATE "C", '
        't.record_id COLLATE "C", k.kit_id COLLATE "C", t.digest',
        (keys,),
    )
    make = partial(tuple.__new__, row)  # row._make without its Python frame
    with cursor:
        while batch := cursor.fetchmany(_FETCH_ROWS):
            yield from map(make, batch)


#: The verdict id labels name (``gate_record_id``), prefixed like it over several kits.
_VERDICT_ID = ("evals", "record_id")
#: Rows fetched from the server-side cursor at a time.
_FETCH_ROWS = 20_000
#: Numbers for the cursors' names: two readers may be open at once.
_cursors = count()


@cache
def _plain_row(kind: str, fields: tuple[str, ...]) -> Any:
    """A named tuple of ``fields``: the readers use rows by attribute only."""
    return namedtuple(f"{table_of(kind).title().replace('_', '')}DbRow", fields)


def db_metrics(
    dsn: str,
    *,
    kits: list[str] | None = None,
    window: int | None = None,
    initiative: str | None = None,
    model: str | None = None,
    since: datetime | None = None,
    by: Any = None,
) -> dict[str, Any]:
    """The calibration report over the database's kits (all, or those named)."""
    # Deferred: pmos.calibration.metrics imports numpy (about 0.2 s).
    from pmos.calibration.judged import BLIND_FIELDS, FILTER_FIELDS, LABEL_FIELDS, VERDICT_FIELDS
    from pmos.calibration.metrics import metrics_from_rows

    detailed = initiative is not None or model is not None or since is not None
    extra = FILTER_FIELDS if detailed else ()
    with connection(dsn, purpose="metrics") as conn:
        require_current(conn)
        selected = select_kits(conn, kits)
        config = settings_config(conn, selected, one_kit=bool(kits))
        keys = [k.key for k in selected]
        several = len(selected) > 1
        report = metrics_from_rows(
            rows_of(conn, "evals", VERDICT_FIELDS + extra, keys, prefix=several),
            # Blind labels and plan weights as file mode reads them (BLIND_FIELDS).
            rows_of(conn, "acceptances", LABEL_FIELDS + extra + BLIND_FIELDS, keys, prefix=several),
            config,
            window=window,
            initiative=initiative,
            model=model,
            since=since,
            by=by,
            rubric_threshold=_threshold(config.raw.get("rubric_threshold")),
        )
    report["kits"] = [k.kit_id for k in selected]
    return report


def _threshold(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
