"""Connecting to the database, and what a database error means to a pmos user.

psycopg is an optional dependency (``pip install 'pmos[postgres]'``); it is
imported here, when a database is first used, so file mode never pays for it
and a missing extra is a clear error instead of an ImportError.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pmos.db.errors import ConnectionLost, DatabaseError, DatabaseUnavailable
from pmos.errors import BadInput

#: Where ``pmos sync`` and ``pmos db`` find the database when ``--db`` is not given.
DSN_ENV = "PMOS_DATABASE_URL"
#: Key of pmos's advisory locks (two-key form, first key), so they cannot collide
#: with another application's locks in a shared database.
LOCK_CLASS = 0x706D6F73  # "pmos"
#: Second key of the lock that serialises schema migrations.
MIGRATION_LOCK = 0


def resolve_dsn(given: str | None) -> str:
    """The DSN to use: ``--db`` if given, else ``$PMOS_DATABASE_URL``."""
    dsn = given if given is not None else os.environ.get(DSN_ENV)
    if dsn is None or not dsn.strip():
        raise BadInput(
            f"no database given: pass --db DSN or set {DSN_ENV} "
            "(for example postgresql://pmos_sync@db.example/pmos)"
        )
    return dsn


def psycopg_module() -> Any:
    try:
        # Deferred: psycopg, the optional 'postgres' extra.
        import psycopg
    except ImportError:
        raise BadInput(
            "the database commands need the postgres extra: pip install 'pmos[postgres]'"
        ) from None
    return psycopg


@contextmanager
def connection(dsn: str, *, purpose: str) -> Iterator[Any]:
    """An open connection (not in autocommit: the caller commits), closed on exit.

    Leaving with an exception closes without committing, so the server rolls
    back whatever the transaction did. Every database error raised inside is
    translated (:func:`translated_errors`). Sessions run in UTC.
    """
    psycopg = psycopg_module()
    try:
        conn = psycopg.connect(dsn, application_name=f"pmos {purpose}", autocommit=False)
    except psycopg.ProgrammingError as exc:
        raise DatabaseUnavailable(f"the database address is not valid: {_message(exc)}") from None
    except psycopg.Error as exc:
        raise DatabaseUnavailable(f"cannot connect to the database: {_message(exc)}") from None
    try:
        with translated_errors():
            conn.execute("SET TIME ZONE 'UTC'")
            yield conn
    finally:
        conn.close()


@contextmanager
def translated_errors() -> Iterator[None]:
    """Turn psycopg's errors into pmos errors that say what to do."""
    psycopg = psycopg_module()
    try:
        yield
    except psycopg.errors.InsufficientPrivilege as exc:
        raise DatabaseError(
            f"the database refused: {_message(exc)}; the role needs the privileges "
            "'pmos db grant' gives (see README, 'Roles')"
        ) from None
    except psycopg.OperationalError as exc:
        raise ConnectionLost(
            f"the database connection failed mid-way ({_message(exc)}); nothing was "
            "committed, run the command again"
        ) from None
    except psycopg.Error as exc:
        raise DatabaseError(f"the database refused: {_message(exc)}") from None


def _message(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
