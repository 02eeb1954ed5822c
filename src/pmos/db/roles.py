"""Least privilege: what a syncing role and a reading role may do, and nothing more.

* **sync** (the role CI jobs use for ``pmos sync``): read the schema version,
  the kits table and the names of the packs already synced, add kits, syncs,
  synced packs and records, and read back only the ``kit`` and ``digest``
  columns of the record tables (how a sync finds what the database lacks).
  It cannot read a record's content, and cannot change or delete anything:
  every table pmos writes is insert-only for it.
* **read** (dashboards, ``pmos metrics --db``, ``pmos queue --db``): read
  every pmos table and view; write nothing.

``pmos db grant ROLE --as sync|read`` issues these grants to an existing
role (creating login roles and their passwords is the database owner's job).
Run it again after ``pmos db migrate`` adds tables or views.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pmos.db.connect import connection
from pmos.db.migrate import TABLE as MIGRATIONS_TABLE
from pmos.db.migrate import require_current
from pmos.db.tables import table_of
from pmos.store.registry import LEDGER_KINDS

#: pmos's own tables besides the record tables, and its views (a test checks
#: these lists against what the migrations create).
META_TABLES = (MIGRATIONS_TABLE, "kits", "syncs", "team_settings", "synced_packs")
VIEWS = (
    "v_kit_settings",
    "v_latest_judged",
    "v_latest_skip",
    "v_latest_verdict",
    "v_first_verdict",
    "v_latest_label",
    "v_first_label",
    "v_registration",
    "v_pairs",
    "v_recent_judged",
    "v_scopes",
    "v_goodhart_tripwire",
    "v_skipped_runs",
    "v_calibration",
    "v_calibration_by_model",
    "v_known_runs",
    "v_verification_queue",
    "v_acceptance_queue",
)


class Access(StrEnum):
    sync = "sync"
    read = "read"


def record_tables() -> list[str]:
    return [table_of(kind) for kind in LEDGER_KINDS]


def grant_statements(access: Access) -> list[str]:
    """The GRANT statements for ``access``, with ``{role}`` where the role goes."""
    database = "GRANT CONNECT ON DATABASE {database} TO {role}"
    schema = "GRANT USAGE ON SCHEMA {schema} TO {role}"
    if access is Access.read:
        relations = ", ".join((*META_TABLES, *record_tables(), *VIEWS))
        return [
            database,
            schema,
            f"GRANT SELECT ON {relations} TO {{role}}",
        ]
    records = ", ".join(record_tables())
    return [
        database,
        schema,
        f"GRANT SELECT ON {MIGRATIONS_TABLE}, kits, synced_packs TO {{role}}",
        "GRANT INSERT ON kits, syncs, synced_packs TO {role}",
        f"GRANT INSERT, SELECT (kit, digest) ON {records} TO {{role}}",
    ]


def grant(dsn: str, role: str, access: Access) -> dict[str, Any]:
    """Grant ``role`` the ``access`` privileges on pmos's objects; returns what was run."""
    from psycopg import sql

    with connection(dsn, purpose="grant") as conn:
        require_current(conn)
        database, schema = conn.execute("SELECT current_database(), current_schema()").fetchone()
        done = []
        for template in grant_statements(access):
            statement = sql.SQL(template).format(
                role=sql.Identifier(role),
                database=sql.Identifier(database),
                schema=sql.Identifier(schema),
            )
            conn.execute(statement)
            done.append(statement.as_string(conn))
        conn.commit()
    return {"role": role, "access": access.value, "statements": done}
