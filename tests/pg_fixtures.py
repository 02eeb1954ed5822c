"""PostgreSQL fixtures: one real server per test session, one fresh database per test.

The server is started by :mod:`pgserver` (``initdb`` + ``pg_ctl`` on a Unix
socket in a temporary folder, as the ``postgres`` user when the tests run as
root) and stopped, its folder removed, when the session ends. Tests that use
these fixtures are skipped, with the reason, only when the server binaries
or psycopg are absent; ``.ci/run`` installs both.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from pgserver import PgServer, find_bin_dir

#: Faster, crash-unsafe settings: a test server never outlives its session.
TEST_SETTINGS = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    pytest.importorskip("psycopg", reason="psycopg is missing: pip install -e '.[test]'")
    bin_dir = find_bin_dir()
    if bin_dir is None:
        pytest.skip(
            "PostgreSQL server binaries (initdb, pg_ctl) not found; "
            "'apt-get install postgresql-15' (.ci/run does it)"
        )
    server = PgServer(bin_dir, TEST_SETTINGS)
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def fresh_database(server: PgServer) -> Iterator[str]:
    """A fresh, empty database of its own; its DSN. Dropped when the block ends."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server.dsn(), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield server.dsn(name)
    finally:
        with psycopg.connect(server.dsn(), autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def migrated(dsn: str) -> str:
    """The database at ``dsn`` migrated to the latest schema; its DSN."""
    from pmos.db.connect import connection
    from pmos.db.migrate import migrate

    with connection(dsn, purpose="test") as conn:
        migrate(conn)
    return dsn


@pytest.fixture
def pg_dsn(pg_server: PgServer) -> Iterator[str]:
    """A fresh, empty database of its own for one test; dropped afterwards."""
    with fresh_database(pg_server) as dsn:
        yield dsn


@pytest.fixture
def db(pg_dsn: str) -> str:
    """A fresh database migrated to the latest schema; its DSN."""
    return migrated(pg_dsn)
