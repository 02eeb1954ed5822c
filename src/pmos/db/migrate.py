"""Schema migrations: plain SQL files applied in order and recorded in the database.

``migrations/NNNN_name.sql`` ship inside the package. ``pmos db migrate``
applies the pending ones, each recorded in ``pmos_schema_migrations`` with a
checksum of its text, all in one transaction under an advisory lock (two
migrators cannot interleave, and a failed file leaves the database as it
was). A file changed after it was applied is refused rather than silently
trusted. Every other command requires the database to be exactly at the
version this pmos knows (:func:`require_current`): an older database is
refused with the instruction to migrate, a newer one with the instruction to
upgrade pmos.
"""

from __future__ import annotations

import hashlib
import re
from functools import cache
from importlib import resources
from typing import Any, NamedTuple

import orjson

from pmos.db.connect import LOCK_CLASS, MIGRATION_LOCK
from pmos.db.errors import SchemaMismatch
from pmos.db.settings import default_settings
from pmos.errors import BadInput

TABLE = "pmos_schema_migrations"
_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


class Migration(NamedTuple):
    version: int
    name: str
    sql: str
    checksum: str

    @property
    def file(self) -> str:
        return f"{self.version:04d}_{self.name}.sql"


@cache
def migrations() -> tuple[Migration, ...]:
    """Every migration shipped with pmos, in order; versions run 1, 2, 3... without gaps."""
    folder = resources.files("pmos.db") / "migrations"
    found = []
    for entry in folder.iterdir():
        match = _FILE.match(entry.name)
        if match:
            text = entry.read_bytes()
            found.append(
                Migration(
                    int(match.group(1)),
                    match.group(2),
                    text.decode("utf-8"),
                    hashlib.sha256(text).hexdigest(),
                )
            )
    found.sort()
    if [m.version for m in found] != list(range(1, len(found) + 1)):
        raise SchemaMismatch(
            "pmos's migration files are not numbered 1, 2, 3... without gaps: "
            + ", ".join(m.file for m in found)
        )
    return tuple(found)


def latest_version() -> int:
    return migrations()[-1].version


def applied(conn: Any) -> dict[int, tuple[str, str]]:
    """version -> (name, checksum) of every migration recorded in the database."""
    exists = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (TABLE,)).fetchone()[0]
    if not exists:
        return {}
    rows = conn.execute(f"SELECT version, name, checksum FROM {TABLE}").fetchall()
    return {version: (name, checksum) for version, name, checksum in rows}


def current_version(conn: Any) -> int:
    return max(applied(conn), default=0)


def require_current(conn: Any) -> int:
    """Refuse a database whose schema is not the one this pmos reads and writes."""
    version = current_version(conn)
    latest = latest_version()
    if version < latest:
        raise SchemaMismatch(
            f"the database is at schema version {version} and this pmos needs version "
            f"{latest}: run 'pmos db migrate' (as the database's owner) first"
        )
    if version > latest:
        raise SchemaMismatch(
            f"the database is at schema version {version}, newer than this pmos knows "
            f"({latest}): upgrade pmos"
        )
    return version


class MigrateReport(NamedTuple):
    before: int
    after: int
    applied: list[str]

    def as_dict(self) -> dict[str, Any]:
        return {
            "schema_version_before": self.before,
            "schema_version": self.after,
            "latest_version": latest_version(),
            "applied": self.applied,
        }


def migrate(conn: Any, *, to: int | None = None) -> MigrateReport:
    """Apply every pending migration up to ``to`` (default: the latest) and commit."""
    known = migrations()
    target = latest_version() if to is None else to
    if isinstance(target, bool) or not 1 <= target <= latest_version():
        raise BadInput(f"--to must be a schema version from 1 to {latest_version()}; got {to}")
    conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_CLASS, MIGRATION_LOCK))
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {TABLE} ("
        "version integer PRIMARY KEY, name text NOT NULL, checksum text NOT NULL, "
        "applied_at timestamptz NOT NULL DEFAULT now())"
    )
    done = applied(conn)
    before = max(done, default=0)
    if before > latest_version():
        raise SchemaMismatch(
            f"the database is at schema version {before}, newer than this pmos knows "
            f"({latest_version()}): upgrade pmos"
        )
    for migration in known:
        recorded = done.get(migration.version)
        if recorded is not None and recorded[1] != migration.checksum:
            raise SchemaMismatch(
                f"migration {migration.file} differs from the one applied to this database "
                "(its checksum changed): a migration must never be edited once released"
            )
    if target < before:
        raise BadInput(
            f"the database is at schema version {before}; pmos never migrates down (to {target})"
        )
    names = []
    for migration in known:
        if before < migration.version <= target:
            conn.execute(migration.sql)
            conn.execute(
                f"INSERT INTO {TABLE} (version, name, checksum) VALUES (%s, %s, %s)",
                (migration.version, migration.name, migration.checksum),
            )
            names.append(migration.file)
    conn.execute(
        "INSERT INTO team_settings (settings) VALUES (%s::jsonb) ON CONFLICT DO NOTHING",
        (orjson.dumps(default_settings()).decode(),),
    )
    conn.commit()
    return MigrateReport(before, max(before, target), names)


def status(conn: Any) -> dict[str, Any]:
    """The database's schema version, the latest pmos knows and what is pending."""
    version = current_version(conn)
    return {
        "schema_version": version,
        "latest_version": latest_version(),
        "pending": [m.file for m in migrations() if m.version > version],
        "current": version == latest_version(),
    }
