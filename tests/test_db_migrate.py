"""Schema migrations on a real PostgreSQL server: applied in order, recorded,
checked, and a database at another version refused until migrated."""

from __future__ import annotations

import json
import subprocess
import sys

import psycopg
import pytest

from pmos.db.migrate import latest_version, migrations
from pmos.db.roles import META_TABLES, VIEWS, record_tables
from pmos.store.registry import LEDGER_KINDS


def run_pmos(*args: str, root=None) -> subprocess.CompletedProcess:
    prefix = ("--root", str(root)) if root is not None else ()
    return subprocess.run(
        [sys.executable, "-m", "pmos", *prefix, *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def relations(dsn: str) -> dict[str, str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT c.relname, c.relkind FROM pg_class c JOIN pg_namespace n "
            "ON n.oid = c.relnamespace WHERE n.nspname = current_schema() "
            "AND c.relkind IN ('r', 'v')"
        ).fetchall()
    return dict(rows)


def test_migrations_are_numbered_without_gaps_from_the_one_squashed_first_migration():
    assert [m.version for m in migrations()] == list(range(1, latest_version() + 1))
    assert migrations()[0].file == "0001_schema.sql"


def test_migrate_applies_every_file_in_order_and_records_it(cli, pg_dsn):
    result = cli("db", "migrate", "--db", pg_dsn, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["schema_version_before"] == 0
    assert report["schema_version"] == latest_version()
    assert report["applied"] == [m.file for m in migrations()]
    with psycopg.connect(pg_dsn) as conn:
        rows = conn.execute(
            "SELECT version, name, checksum FROM pmos_schema_migrations ORDER BY version"
        ).fetchall()
        settings = conn.execute("SELECT settings FROM team_settings").fetchone()[0]
    assert rows == [(m.version, m.name, m.checksum) for m in migrations()]
    # The team's settings are pmos's defaults.
    assert settings["pass_fraction_window"] == 20 and settings["kappa_threshold"] == 0.6
    # One table per ledger kind, pmos's own tables and the views, and nothing else.
    found = relations(pg_dsn)
    assert {t for t, kind in found.items() if kind == "r"} == set(META_TABLES) | set(
        record_tables()
    )
    assert {v for v, kind in found.items() if kind == "v"} == set(VIEWS)
    assert len(record_tables()) == len(LEDGER_KINDS)


def test_migrate_twice_applies_nothing_the_second_time(cli, pg_dsn):
    assert cli("db", "migrate", "--db", pg_dsn).exit_code == 0
    again = cli("db", "migrate", "--db", pg_dsn, "--json")
    assert again.exit_code == 0
    assert json.loads(again.stdout)["applied"] == []
    status = cli("db", "status", "--db", pg_dsn, "--json")
    assert status.exit_code == 0
    assert json.loads(status.stdout) == {
        "schema_version": latest_version(),
        "latest_version": latest_version(),
        "pending": [],
        "current": True,
    }


def test_status_of_an_empty_database_lists_everything_pending_and_exits_1(cli, pg_dsn):
    result = cli("db", "status", "--db", pg_dsn, "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["pending"] == [m.file for m in migrations()]


def test_an_unmigrated_database_is_refused_by_every_command_until_migrated(cli, pg_dsn, kit_root):
    for args in (
        ("sync", "--policy-from-working-tree", "--db", pg_dsn, "--kit-id", "k"),
        ("metrics", "--db", pg_dsn),
        ("queue", "--db", pg_dsn),
    ):
        refused = cli(*args)
        assert refused.exit_code == 2, (args, refused.output)
        assert "schema version 0" in refused.stderr
        assert "run 'pmos db migrate'" in refused.stderr
    assert relations(pg_dsn) == {}
    migrated = cli("db", "migrate", "--db", pg_dsn, "--json")
    assert json.loads(migrated.stdout)["applied"] == [m.file for m in migrations()]
    assert cli("sync", "--policy-from-working-tree", "--db", pg_dsn, "--kit-id", "k").exit_code == 0


def test_a_newer_database_is_refused_with_upgrade_advice(cli, db):
    with psycopg.connect(db) as conn:
        conn.execute(
            "INSERT INTO pmos_schema_migrations (version, name, checksum) "
            "VALUES (%s, 'future', 'x')",
            (latest_version() + 1,),
        )
    for args in (
        ("sync", "--policy-from-working-tree", "--db", db, "--kit-id", "k"),
        ("db", "migrate", "--db", db),
    ):
        refused = cli(*args)
        assert refused.exit_code == 2
        assert "newer than this pmos knows" in refused.stderr and "upgrade pmos" in refused.stderr


def test_a_migration_changed_after_it_was_applied_is_refused(cli, db):
    with psycopg.connect(db) as conn:
        conn.execute("UPDATE pmos_schema_migrations SET checksum = 'edited' WHERE version = 1")
    refused = cli("db", "migrate", "--db", db)
    assert refused.exit_code == 2
    assert "0001_schema.sql differs from the one applied" in refused.stderr


@pytest.mark.parametrize("to", ["0", "99", "-1"])
def test_migrate_to_a_version_pmos_does_not_have_is_refused(cli, pg_dsn, to):
    refused = cli("db", "migrate", "--db", pg_dsn, "--to", to)
    assert refused.exit_code == 2
    assert "--to must be a schema version from 1 to" in refused.stderr
    assert relations(pg_dsn) == {}


def test_migrate_to_the_version_the_database_has_applies_nothing(cli, db):
    from pmos.db.migrate import latest_version

    again = cli("db", "migrate", "--db", db, "--to", str(latest_version()), "--json")
    assert again.exit_code == 0 and json.loads(again.stdout)["applied"] == []


def test_two_concurrent_migrations_apply_each_file_once(pg_dsn):
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "pmos", "db", "migrate", "--db", pg_dsn, "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    applied = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        applied += json.loads(out)["applied"]
    assert sorted(applied) == sorted(m.file for m in migrations())
    with psycopg.connect(pg_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM pmos_schema_migrations").fetchone()[0] == len(
            migrations()
        )


def test_no_database_given_is_a_clear_error(cli, monkeypatch):
    monkeypatch.delenv("PMOS_DATABASE_URL", raising=False)
    refused = cli("db", "status")
    assert refused.exit_code == 2
    assert "no database given: pass --db DSN or set PMOS_DATABASE_URL" in refused.stderr


def test_the_dsn_comes_from_the_environment_when_not_given(cli, pg_dsn, monkeypatch):
    monkeypatch.setenv("PMOS_DATABASE_URL", pg_dsn)
    assert cli("db", "migrate").exit_code == 0
    assert cli("db", "status").exit_code == 0


def test_an_unreachable_database_is_a_clear_error(cli, tmp_path):
    refused = cli("db", "status", "--db", f"host={tmp_path} dbname=nothing user=nobody")
    assert refused.exit_code == 2
    assert "cannot connect to the database" in refused.stderr


def test_a_malformed_dsn_is_a_clear_error(cli):
    refused = cli("db", "status", "--db", "this is = not a dsn")
    assert refused.exit_code == 2
    assert "the database address is not valid" in refused.stderr
