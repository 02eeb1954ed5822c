"""Least privilege: what a kit's role and a reading role may do, and nothing more.

* **a kit's role** (``pmos db grant --kit ID``; the credentials a kit's CI uses
  for ``pmos sync``): a login role made for that one kit and bound to it
  (``kits.role``). It may read the schema version, the kits and syncs
  tables and the names of the packs already synced, read back only the
  ``kit`` and ``digest`` columns of the record tables (how a sync finds what
  the database lacks), and add rows: row-level security (the first
  migration) on the sync tables, and on the record tables a trigger that
  holds for COPY too (the second), let it add only rows of its own kit, and
  it can change or delete nothing. ``pmos sync`` under another kit's id is refused before
  anything is written, so a repository cannot write as another kit by
  copying its remote URL. Its password is generated here and shown once (or
  written to a file the caller names); running the command again for the
  same kit gives the role a new password.
* **read** (``pmos db grant ROLE --as read``: dashboards, ``pmos metrics
  --db``, ``pmos queue --db``): read every pmos table and view; write nothing.

Run the grants again after ``pmos db migrate`` adds tables or views.
"""

from __future__ import annotations

import os
import secrets
from enum import StrEnum
from pathlib import Path
from typing import Any

from pmos.db.connect import connection
from pmos.db.identity import check_kit_id
from pmos.db.migrate import TABLE as MIGRATIONS_TABLE
from pmos.db.migrate import require_current
from pmos.db.tables import table_of
from pmos.errors import BadInput
from pmos.store.registry import LEDGER_KINDS

#: pmos's own tables besides the record tables, and its views (a test checks
#: these lists against what the migrations create).
META_TABLES = (
    MIGRATIONS_TABLE,
    "kits",
    "syncs",
    "team_settings",
    "synced_packs",
    "calibration_pairs",
)
VIEWS = (
    "v_kit_reports",
    "v_kit_settings",
    "v_calibration",
    "v_calibration_by_model",
    "v_pairs",
    "v_pair_counts",
    "v_verification_queue",
    "v_acceptance_queue",
    "v_calibration_queue",
)
#: A kit's role is named this, with the kit's key and the database's name (one
#: server may hold several pmos databases; role names are the server's), cut
#: to PostgreSQL's 63 bytes.
KIT_ROLE = "pmos_kit_{key}_{database}"


class Access(StrEnum):
    read = "read"


def record_tables() -> list[str]:
    return [table_of(kind) for kind in LEDGER_KINDS]


def read_statements() -> list[str]:
    """The GRANT statements of a reading role, with ``{role}`` where the role goes."""
    relations = ", ".join((*META_TABLES, *record_tables(), *VIEWS))
    return [
        "GRANT CONNECT ON DATABASE {database} TO {role}",
        "GRANT USAGE ON SCHEMA {schema} TO {role}",
        f"GRANT SELECT ON {relations} TO {{role}}",
    ]


def kit_statements() -> list[str]:
    """The GRANT statements of a kit's role (row-level security and the record tables'
    kit trigger do the rest)."""
    records = ", ".join(record_tables())
    return [
        "GRANT CONNECT ON DATABASE {database} TO {role}",
        "GRANT USAGE ON SCHEMA {schema} TO {role}",
        f"GRANT SELECT ON {MIGRATIONS_TABLE}, kits, syncs, synced_packs TO {{role}}",
        "GRANT INSERT ON syncs, synced_packs, calibration_pairs TO {role}",
        f"GRANT INSERT, SELECT (kit, digest) ON {records} TO {{role}}",
    ]


def grant(dsn: str, role: str, access: Access) -> dict[str, Any]:
    """Grant ``role`` the ``access`` privileges on pmos's objects; returns what was run."""
    with connection(dsn, purpose="grant") as conn:
        require_current(conn)
        done = _run(conn, role, read_statements())
        conn.commit()
    return {"role": role, "access": access.value, "statements": done}


def grant_kit(dsn: str, kit_id: str, *, password_file: Path | None = None) -> dict[str, Any]:
    """Make (or give a new password to) the login role that alone may sync kit
    ``kit_id``, bind it to the kit (adding the kit when it is new) and grant it
    what a sync needs. Run as the database's owner (a role that may create roles).

    Returns the role, the kit and the statements run, and the password unless it
    was written to ``password_file`` (created new, readable by its owner only).
    """
    from psycopg import sql  # the optional postgres extra, imported only when it is used

    check_kit_id(kit_id)
    if password_file is not None and password_file.exists():
        raise BadInput(f"--password-file: {password_file} exists; name a new file")
    password = secrets.token_urlsafe(32)
    with connection(dsn, purpose="grant") as conn:
        require_current(conn)
        row = conn.execute(
            "INSERT INTO kits (kit_id) VALUES (%s) ON CONFLICT (kit_id) DO NOTHING "
            "RETURNING kit, role",
            (kit_id,),
        ).fetchone()
        if row is None:
            row = conn.execute(
                "SELECT kit, role FROM kits WHERE kit_id = %s FOR UPDATE", (kit_id,)
            ).fetchone()
        key, role = row
        created = role is None
        if created:
            database = conn.execute("SELECT current_database()").fetchone()[0]
            role = KIT_ROLE.format(key=key, database=database).encode()[:63].decode(errors="ignore")
            conn.execute(
                sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                    sql.Identifier(role), sql.Literal(password)
                )
            )
            conn.execute("UPDATE kits SET role = %s WHERE kit = %s", (role, key))
        else:
            conn.execute(
                sql.SQL("ALTER ROLE {} WITH LOGIN PASSWORD {}").format(
                    sql.Identifier(role), sql.Literal(password)
                )
            )
        done = _run(conn, role, kit_statements())
        if password_file is not None:
            _write_secret(password_file, password)
        conn.commit()
    found: dict[str, Any] = {
        "kit_id": kit_id,
        "role": role,
        "created": created,
        "password": None if password_file is not None else password,
        "password_file": None if password_file is None else str(password_file),
        "statements": done,
    }
    return found


def _run(conn: Any, role: str, templates: list[str]) -> list[str]:
    from psycopg import sql  # the optional postgres extra, imported only when it is used

    database, schema = conn.execute("SELECT current_database(), current_schema()").fetchone()
    done = []
    for template in templates:
        statement = sql.SQL(template).format(
            role=sql.Identifier(role),
            database=sql.Identifier(database),
            schema=sql.Identifier(schema),
        )
        conn.execute(statement)
        done.append(statement.as_string(conn))
    return done


def _write_secret(path: Path, secret: str) -> None:
    """``secret`` in a new file only its owner can read, flushed to disk."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise BadInput(f"--password-file: cannot create {path}: {exc.strerror}") from None
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(secret + "\n")
        out.flush()
        os.fsync(out.fileno())
