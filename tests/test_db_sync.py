"""``pmos sync`` against a real PostgreSQL server: every record once, by digest,
all or nothing, safely side by side; real processes where kills and concurrency matter."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import psycopg
import pytest

import ledgerfiles
from dbkits import bulk_labels, commit_all, git_kit, judge, label, new_kit, populate
from pmos.db.identity import normalise_remote
from pmos.kit import open_kit
from pmos.store.packs import name_digest
from pmos.store.read import records_with_digests
from pmos.store.registry import LEDGER_KINDS

#: A kit outside git has no default branch: its working tree is its policy only when
#: the sync says so.
OUTSIDE_GIT = "--policy-from-working-tree"


def sync(cli, kit, dsn, *extra: str):
    """``pmos sync --json`` of ``kit`` (one outside git with its working tree as policy)."""
    in_git = any((folder / ".git").exists() for folder in (kit.root, *kit.root.parents))
    outside = () if in_git else (OUTSIDE_GIT,)
    result = cli("--root", str(kit.root), "sync", *outside, "--db", dsn, "--json", *extra)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def pmos_proc(*args: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "pmos", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def stored(dsn: str, table: str, kit_id: str) -> dict[bytes, dict]:
    """digest -> record of one kit's rows of ``table``."""
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            f"SELECT t.digest, t.record FROM {table} t JOIN kits k USING (kit) WHERE k.kit_id = %s",
            (kit_id,),
        ).fetchall()
    return {bytes(d): r for d, r in rows}


def in_kit(kit, kind: str) -> dict[bytes, dict]:
    return {bytes.fromhex(d): r for d, r in records_with_digests(kit.store, kind)}


def counts(dsn: str) -> dict[str, int]:
    """Rows of every pmos table: for 'nothing changed' assertions."""
    tables = ["kits", "syncs", *(k.replace("-", "_") for k in LEDGER_KINDS)]
    with psycopg.connect(dsn) as conn:
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}


def copy_of(template: Path, folder: Path):
    """A kit of the test's own: a copy of ``template``, which is written once per
    module (writing it through pmos's writers is most of a test's time)."""
    shutil.copytree(template, folder, symlinks=True)
    return open_kit(folder)


@pytest.fixture(scope="module")
def small_template(tmp_path_factory) -> Path:
    kit = new_kit(tmp_path_factory.mktemp("template") / "small")
    populate(kit, "s", ["gpt-5", "claude-opus-4"], runs=20)
    return kit.root


@pytest.fixture
def small_kit(tmp_path, small_template):
    return copy_of(small_template, tmp_path / "small")


def test_sync_stores_every_record_once_with_its_digest_json_and_typed_columns(cli, db, small_kit):
    report = sync(cli, small_kit, db, "--kit-id", "team/small")
    assert report["kit_id"] == "team/small" and report["new_kit"] is True
    for kind in LEDGER_KINDS:
        expected = in_kit(small_kit, kind)
        assert report["kinds"][kind] == {"records": len(expected), "added": len(expected)}
        assert stored(db, kind.replace("-", "_"), "team/small") == expected
    assert report["added"] == report["records"] > 0
    with psycopg.connect(db) as conn:
        evals = conn.execute(
            "SELECT record_id, recorded_at, run_id, verdict, evaluator_model, score, form, record "
            "FROM evals"
        ).fetchall()
        settings, added = conn.execute("SELECT settings, added FROM syncs").fetchone()
    for record_id, recorded_at, run_id, verdict, model, score, form, record in evals:
        assert (record_id, run_id, verdict, form) == (
            record["record_id"],
            record["run_id"],
            record["verdict"],
            record["form"],
        )
        assert model == record.get("evaluator_model") and score == record["score"]
        assert recorded_at.isoformat().replace("+00:00", "Z") == record["recorded_at"]
    assert settings["pass_fraction_window"] == 20 and settings["min_pairs"] == 20
    assert added == {kind: report["kinds"][kind]["added"] for kind in LEDGER_KINDS}


def test_a_second_sync_adds_nothing(cli, db, small_kit):
    interval = sys.getswitchinterval()
    sync(cli, small_kit, db, "--kit-id", "k")
    # A sync hands the interpreter's lock over quicker while it copies (HANDOVER_S),
    # and gives the process back as it found it.
    assert sys.getswitchinterval() == interval
    before = counts(db)
    again = sync(cli, small_kit, db, "--kit-id", "k")
    assert again["new_kit"] is False and again["added"] == 0
    assert again["records"] == sum(before[k.replace("-", "_")] for k in LEDGER_KINDS)
    assert counts(db) == {**before, "syncs": before["syncs"] + 1}


def test_a_sync_adds_exactly_the_records_the_database_lacks(cli, db, small_kit):
    sync(cli, small_kit, db, "--kit-id", "k")
    judge(small_kit, "s-new", "PASS", model="gpt-5", initiative="init-0")
    label(small_kit, "s-new", "pass")
    label(small_kit, "s-000", "fail")
    report = sync(cli, small_kit, db, "--kit-id", "k")
    assert report["added"] == 3
    assert report["kinds"]["evals"]["added"] == 1 and report["kinds"]["acceptances"]["added"] == 2
    assert stored(db, "acceptances", "k") == in_kit(small_kit, "acceptances")


def synced_packs(dsn: str, kit_id: str) -> set[str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT encode(p.pack, 'hex') FROM synced_packs p JOIN kits k USING (kit) "
            "WHERE k.kit_id = %s",
            (kit_id,),
        ).fetchall()
    return {row[0] for row in rows}


def pack_names(kit) -> set[str]:
    return {
        name_digest(path)
        for kind in LEDGER_KINDS
        for path in ledgerfiles.pack_files(kit.root, ledgerfiles.folder(kit.root, kind).name)
    }


def pack_loose(kit) -> None:
    """Fold each kind's loose records into a pack of their month, beside any earlier
    pack (as a compaction of a closed month would leave them)."""
    for kind in LEDGER_KINDS:
        files = ledgerfiles.record_files(kit.root, kind)
        if files:
            records = [orjson.loads(p.read_bytes()) for p in files]
            for record in records:
                del record["digest"]
            ledgerfiles.pack_of(kit.root, kind, records)
            for path in files:
                path.unlink()


def test_packed_records_are_copied_once_and_a_synced_pack_is_remembered(cli, db, small_kit):
    def pack() -> None:
        pack_loose(small_kit)

    first = sync(cli, small_kit, db, "--kit-id", "k")
    assert synced_packs(db, "k") == set()  # loose records only
    pack()  # the records the database has, now in packs
    judge(small_kit, "s-new", "PASS", model="gpt-5", initiative="init-0")
    second = sync(cli, small_kit, db, "--kit-id", "k")
    assert second["added"] == 1 and second["records"] == first["records"] + 1
    assert synced_packs(db, "k") == pack_names(small_kit) != set()
    third = sync(cli, small_kit, db, "--kit-id", "k")  # reads no pack: the database has them
    assert third["added"] == 0 and third["kinds"] == {
        kind: {"records": second["kinds"][kind]["records"], "added": 0} for kind in LEDGER_KINDS
    }
    label(small_kit, "s-001", "fail")
    packed_before = pack_names(small_kit)
    pack()  # folds the new label into a new pack beside the synced one
    fourth = sync(cli, small_kit, db, "--kit-id", "k")
    assert fourth["added"] == 1 and fourth["kinds"]["acceptances"]["added"] == 1
    assert synced_packs(db, "k") == packed_before | pack_names(small_kit)
    for kind in LEDGER_KINDS:
        assert stored(db, kind.replace("-", "_"), "k") == in_kit(small_kit, kind)
        assert fourth["kinds"][kind]["records"] == len(in_kit(small_kit, kind))


def test_a_record_both_loose_and_in_its_pack_is_copied_once(cli, db, small_kit):
    """A loose file left beside the pack that holds its record (a compaction on
    another branch, merged) is one record: a new kit's sync, which asks the
    database about nothing, copies it once, and the tables hold what the kit
    does."""
    kept = {path: path.read_bytes() for path in ledgerfiles.record_files(small_kit.root, "evals")}
    pack_loose(small_kit)
    for path, data in kept.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    assert ledgerfiles.record_files(small_kit.root, "evals") and pack_names(small_kit)
    report = sync(cli, small_kit, db, "--kit-id", "k")
    for kind in LEDGER_KINDS:
        assert stored(db, kind.replace("-", "_"), "k") == in_kit(small_kit, kind)
        assert report["kinds"][kind]["added"] == len(in_kit(small_kit, kind))


def test_a_synced_pack_edited_later_is_refused(cli, db, small_kit):
    pack_loose(small_kit)
    sync(cli, small_kit, db, "--kit-id", "k")
    before = counts(db)
    (pack,) = ledgerfiles.pack_files(small_kit.root, "acceptances")
    ledgerfiles.edit(pack, b'"label":"pass"', b'"label":"fail"')
    refused = cli("--root", str(small_kit.root), "sync", OUTSIDE_GIT, "--db", db, "--kit-id", "k")
    assert refused.exit_code == 1
    assert "fail verification, so nothing was copied" in refused.stderr
    assert counts(db) == before


def test_a_pack_is_verified_line_by_line_once_per_pmos_version(cli, db, small_kit):
    """A pack a sync screened is not screened again by later syncs of the same pmos
    version, but the store's rule still checks every line: nothing the database
    remembers makes a record count."""
    sync(cli, small_kit, db, "--kit-id", "k")
    # Only line-by-line verification sees that this header claims a record too many.
    labels = [
        {
            "record_id": f"acc-late-{i}",
            "recorded_at": f"2099-01-01T00:00:0{i}Z",
            "schema_version": 1,
            "run_id": "s-000",
            "label": "pass",
            "by": "pm",
        }
        for i in range(3)
    ]
    pack = ledgerfiles.pack_of(small_kit.root, "acceptances", labels)
    data = pack.read_bytes().replace(b'"records":3', b'"records":4', 1)
    pack.unlink()
    name = hashlib.sha256(data).hexdigest()
    (pack.parent / f"pack-{name}.jsonl").write_bytes(data)
    with psycopg.connect(db) as conn:
        (pmos,) = conn.execute("SELECT pmos_version FROM syncs").fetchone()

    def verified_by(version: str) -> int:
        with psycopg.connect(db) as conn:
            conn.execute(
                "INSERT INTO synced_packs (kit, pack, verified_by) "
                "SELECT kit, decode(%s, 'hex'), %s FROM kits WHERE kit_id = 'k'",
                (name, version),
            )
        return cli(
            "--root", str(small_kit.root), "sync", OUTSIDE_GIT, "--db", db, "--kit-id", "k"
        ).exit_code

    assert (
        cli(
            "--root", str(small_kit.root), "sync", OUTSIDE_GIT, "--db", db, "--kit-id", "k"
        ).exit_code
        == 1
    )
    assert verified_by("0.0.1") == 1  # an older pmos screened it: refused
    assert verified_by(pmos) == 1  # this pmos screened it (so the row says): still refused


def test_human_output_is_a_table_of_kinds(cli, db, small_kit):
    result = cli("--root", str(small_kit.root), "sync", OUTSIDE_GIT, "--db", db, "--kit-id", "k")
    assert result.exit_code == 0
    assert "kit k (new in the database)" in result.stdout
    assert "ledger" in result.stdout and "records in kit" in result.stdout
    assert any(line.startswith("total") for line in result.stdout.splitlines())


def test_a_record_with_a_nul_character_is_stored_with_a_replacement(cli, db, tmp_path):
    from pmos.gate.writers import record_acceptance

    kit = new_kit(tmp_path / "nul")
    label(kit, "r1", "pass")
    record_acceptance(kit, run_id="r2", label="fail", by="pm", note="a\x00b \\u0000 c\\d")
    sync(cli, kit, db, "--kit-id", "nul")
    notes = {r["run_id"]: r.get("note") for r in stored(db, "acceptances", "nul").values()}
    assert notes["r2"] == "a\ufffdb \\u0000 c\\d"
    assert set(stored(db, "acceptances", "nul")) == set(in_kit(kit, "acceptances"))


def test_typed_columns_keep_backslashes_tabs_and_newlines_as_the_record_has_them(cli, db, tmp_path):
    from pmos.gate.writers import record_short_verdict

    kit = new_kit(tmp_path / "escapes")
    reason = 'tab\there, newline\nhere, a \\ backslash, a "quote", \\N and a nul \x00 end'
    record_short_verdict(
        kit,
        run_id="r1",
        initiative_id="init-0",
        verdict="SKIPPED",
        skipped_reason=reason,
        evaluator_model="gpt-5",
    )
    sync(cli, kit, db, "--kit-id", "escapes")
    with psycopg.connect(db) as conn:
        stored_reason, text, record = conn.execute(
            "SELECT skipped_reason, recorded_at_text, record FROM evals"
        ).fetchone()
    assert stored_reason == reason.replace("\x00", "\ufffd") == record["skipped_reason"]
    assert text == record["recorded_at"]


# ---------------------------------------------------------------- kit identity


def test_two_clones_of_one_repository_land_in_one_kit(cli, db, tmp_path):
    first = git_kit(tmp_path / "clone-a", "git@GitHub.com:acme/shop.git")
    populate(first, "r", ["gpt-5"], runs=10)
    second_root = tmp_path / "clone-b"
    shutil.copytree(first.root, second_root, symlinks=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(second_root),
            "remote",
            "set-url",
            "origin",
            "https://ci-token:secret@github.com/acme/shop",
        ],
        check=True,
    )
    from pmos.kit import open_kit

    second = open_kit(second_root)
    judge(second, "r-extra", "FAIL", model="gpt-5", initiative="init-0")
    a = sync(cli, first, db)
    b = sync(cli, second, db)
    assert a["kit_id"] == b["kit_id"] == "github.com/acme/shop#."
    assert a["repository"] == "github.com/acme/shop" and a["path"] == "."
    assert a["new_kit"] is True and b["new_kit"] is False
    assert b["added"] == 1  # only the record the first clone did not have
    with psycopg.connect(db) as conn:
        assert conn.execute("SELECT kit_id, repository, path FROM kits").fetchall() == [
            ("github.com/acme/shop#.", "github.com/acme/shop", ".")
        ]
        text = json.dumps(conn.execute("SELECT * FROM kits").fetchall(), default=str)
    assert "secret" not in text and "ci-token" not in text
    assert stored(db, "evals", "github.com/acme/shop#.") == in_kit(second, "evals")


def test_a_vendored_kit_is_named_by_its_folder_in_the_repository(cli, db, tmp_path):
    repo = tmp_path / "product"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(repo),
            "remote",
            "add",
            "upstream",
            "ssh://git@gitlab.example:2222/a/b.git",
        ],
        check=True,
    )
    kit = new_kit(repo / "tools" / "pmos")
    commit_all(repo)
    assert sync(cli, kit, db)["kit_id"] == "gitlab.example:2222/a/b#tools/pmos"


@pytest.mark.parametrize(
    ("url", "normalised"),
    [
        ("git@github.com:acme/shop.git", "github.com/acme/shop"),
        ("https://github.com/acme/shop", "github.com/acme/shop"),
        ("https://user:token@GITHUB.com/acme/shop.git/", "github.com/acme/shop"),
        ("ssh://git@github.com/acme/shop.git", "github.com/acme/shop"),
        ("ssh://git@github.com:22/acme/shop.git", "github.com/acme/shop"),
        ("https://git.example:8443/team/kit", "git.example:8443/team/kit"),
        ("/srv/git/kit.git", "file:/srv/git/kit"),
        ("file:///srv/git/kit.git", "file:/srv/git/kit"),
    ],
)
def test_remote_urls_are_normalised(url, normalised, tmp_path):
    assert normalise_remote(url, tmp_path) == normalised


def test_a_relative_local_remote_is_resolved_against_the_repository(tmp_path):
    assert normalise_remote("../kit.git", tmp_path / "repo") == f"file:{tmp_path}/kit"


def test_a_kit_outside_git_needs_an_explicit_id(cli, db, small_kit):
    refused = cli("--root", str(small_kit.root), "sync", OUTSIDE_GIT, "--db", db)
    assert refused.exit_code == 2
    assert "not inside a git repository" in refused.stderr and "--kit-id" in refused.stderr
    assert counts(db)["kits"] == 0


def test_a_repository_without_a_remote_needs_an_explicit_id(cli, db, tmp_path):
    kit = git_kit(tmp_path / "local", None)
    refused = cli("--root", str(kit.root), "sync", "--db", db)
    assert refused.exit_code == 2
    assert "has no remote" in refused.stderr
    assert sync(cli, kit, db, "--kit-id", "local-kit")["kit_id"] == "local-kit"


@pytest.mark.parametrize(
    ("kit_id", "problem"),
    [(" ", "cannot be empty"), ("a\nb", "control characters"), ("x" * 501, "at most 500")],
)
def test_a_bad_explicit_kit_id_is_refused(cli, db, small_kit, kit_id, problem):
    refused = cli(
        "--root", str(small_kit.root), "sync", OUTSIDE_GIT, "--db", db, "--kit-id", kit_id
    )
    assert refused.exit_code == 2
    assert problem in refused.stderr
    assert counts(db)["kits"] == 0


# ---------------------------------------------------------------- refusals


def tamper(kit, marker: str, replacement: str) -> None:
    """Edit a stored record in place, wherever the store keeps it."""
    assert len(marker) == len(replacement)
    for path in sorted(Path(kit.root, "state").rglob("*")):
        if path.is_file() and marker.encode() in path.read_bytes():
            path.write_bytes(path.read_bytes().replace(marker.encode(), replacement.encode()))
            return
    raise AssertionError(f"no stored record holds {marker!r}")


def test_a_tampered_kit_is_refused_and_nothing_is_copied(cli, db, small_kit):
    from pmos.gate.writers import record_acceptance

    record_acceptance(small_kit, run_id="s-003", label="pass", by="pm", note="TAMPER-ME")
    tamper(small_kit, "TAMPER-ME", "TAMPER-OK")
    interval = sys.getswitchinterval()
    refused = cli("--root", str(small_kit.root), "sync", OUTSIDE_GIT, "--db", db, "--kit-id", "k")
    assert refused.exit_code == 1
    assert "fail verification, so nothing was copied" in refused.stderr
    assert "acceptances" in refused.stderr
    assert set(counts(db).values()) == {0}
    assert sys.getswitchinterval() == interval


def test_a_kit_tampered_after_a_sync_leaves_the_database_as_it_was(cli, db, small_kit):
    from pmos.gate.writers import record_acceptance

    record_acceptance(small_kit, run_id="s-004", label="fail", by="pm", note="TAMPER-ME")
    sync(cli, small_kit, db, "--kit-id", "k")
    before = counts(db)
    judge(small_kit, "s-late", "PASS", model="gpt-5", initiative="init-0")
    tamper(small_kit, "TAMPER-ME", "TAMPER-OK")
    refused = cli("--root", str(small_kit.root), "sync", OUTSIDE_GIT, "--db", db, "--kit-id", "k")
    assert refused.exit_code == 1
    assert counts(db) == before


def test_without_a_kit_root_sync_says_so(cli, db, tmp_path, monkeypatch):
    monkeypatch.delenv("PMOS_ROOT")
    monkeypatch.chdir(tmp_path)
    refused = cli("sync", OUTSIDE_GIT, "--db", db, "--kit-id", "k")
    assert refused.exit_code == 2
    assert "no kit root found" in refused.stderr


# ---------------------------------------------------------------- crashes and concurrency


# The watchers below ask over one autocommit connection (each query its own
# transaction, so each sees the statistics afresh): a connection per poll cost a
# server process per poll, hundreds while a sync starts.


def copy_in_progress(watch: psycopg.Connection) -> int:
    """Rows a running COPY of a sync into this database has received so far (0: none)."""
    row = watch.execute(
        "SELECT max(p.tuples_processed) FROM pg_stat_progress_copy p "
        "JOIN pg_stat_activity a USING (pid) "
        "WHERE a.application_name = 'pmos sync' AND p.datname = current_database() "
        "AND p.command = 'COPY FROM'"
    ).fetchone()
    return row[0] or 0


def sync_backends(watch: psycopg.Connection, *, waiting_on_a_lock: bool = False) -> int:
    return watch.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pmos sync' "
        "AND datname = current_database() AND (NOT %s OR wait_event_type = 'Lock')",
        (waiting_on_a_lock,),
    ).fetchone()[0]


@pytest.fixture(scope="module")
def big_template(tmp_path_factory) -> Path:
    kit = new_kit(tmp_path_factory.mktemp("template") / "big")
    populate(kit, "b", ["gpt-5", "claude-opus-4"], runs=20)
    bulk_labels(kit, 600, note_bytes=50_000)
    return kit.root


@pytest.fixture
def big_kit(tmp_path, big_template):
    return copy_of(big_template, tmp_path / "big")


@pytest.mark.parametrize("when", ["mid-copy", "before-commit"])
@pytest.mark.slow
def test_a_sync_killed_with_sigkill_commits_nothing_and_the_next_one_completes(
    cli, db, pg_server, big_kit, when
):
    # A first, complete sync of part of the kit: the kill must leave exactly this.
    sync(cli, big_kit, db, "--kit-id", "big")
    before = counts(db)
    bulk_labels(big_kit, 600, prefix="more", note_bytes=50_000)
    # Holding a lock on syncs keeps the sync from committing, whatever the timing:
    # the kill always lands before the commit.
    blocker = psycopg.connect(db)
    blocker.execute("LOCK TABLE syncs IN SHARE MODE")
    watch = psycopg.connect(db, autocommit=True)
    proc = pmos_proc(
        "--root", str(big_kit.root), "sync", OUTSIDE_GIT, "--db", db, "--kit-id", "big"
    )
    try:
        deadline = time.monotonic() + 120
        seen = 0
        while not seen and time.monotonic() < deadline and proc.poll() is None:
            if when == "mid-copy":
                seen = copy_in_progress(watch)
            else:
                seen = sync_backends(watch, waiting_on_a_lock=True)
            if not seen:
                time.sleep(0.005)
        assert seen, f"never saw the sync {when}; it ended with {proc.poll()}"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        blocker.rollback()
        blocker.close()
    assert proc.returncode == -signal.SIGKILL
    # The server notices the dead client and rolls its transaction back.
    deadline = time.monotonic() + 60
    try:
        while sync_backends(watch) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        watch.close()
    assert counts(db) == before
    report = sync(cli, big_kit, db, "--kit-id", "big")
    assert report["added"] == 600 and report["kinds"]["acceptances"]["added"] == 600
    assert stored(db, "acceptances", "big") == in_kit(big_kit, "acceptances")
    assert counts(db)["acceptances"] == before["acceptances"] + 600


@pytest.mark.slow
def test_four_concurrent_syncs_of_different_kits(db, tmp_path):
    kits = []
    for n in range(4):
        kit = new_kit(tmp_path / f"kit-{n}")
        populate(kit, f"k{n}", ["gpt-5", "claude-opus-4"], runs=12, seed=n)
        bulk_labels(kit, 150, prefix=f"bulk{n}")
        kits.append(kit)
    procs = [
        pmos_proc(
            "--root",
            str(kit.root),
            "sync",
            OUTSIDE_GIT,
            "--db",
            db,
            "--kit-id",
            f"kit-{n}",
            "--json",
        )
        for n, kit in enumerate(kits)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert json.loads(out)["new_kit"] is True
    for n, kit in enumerate(kits):
        for kind in ("runs", "evals", "acceptances"):
            assert stored(db, kind, f"kit-{n}") == in_kit(kit, kind)
    assert counts(db)["kits"] == 4 and counts(db)["syncs"] == 4


@pytest.mark.parametrize("as_kit_role", [False, True], ids=["owner", "kit-role"])
def test_concurrent_syncs_of_one_kit_store_each_record_once(cli, db, small_kit, as_kit_role):
    bulk_labels(small_kit, 300)
    dsn = as_role(db, grant_kit(cli, db, "one")["role"]) if as_kit_role else db
    procs = [
        pmos_proc(
            "--root",
            str(small_kit.root),
            "sync",
            OUTSIDE_GIT,
            "--db",
            dsn,
            "--kit-id",
            "one",
            "--json",
        )
        for _ in range(3)
    ]
    reports = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        reports.append(json.loads(out))
    total = sum(len(in_kit(small_kit, kind)) for kind in LEDGER_KINDS)
    assert sorted(r["added"] for r in reports) == [0, 0, total]
    assert sum(r["new_kit"] for r in reports) == 1
    assert stored(db, "acceptances", "one") == in_kit(small_kit, "acceptances")
    assert counts(db)["kits"] == 1


# ---------------------------------------------------------------- roles


@pytest.fixture
def roles(db, pg_server):
    """Login roles made by the owner (access -> role name); dropped with the database."""
    database = db.split("dbname=")[1].split()[0]
    names = {access: f"{access}_{database}" for access in ("sync", "read", "none")}
    with psycopg.connect(pg_server.dsn(), autocommit=True) as conn:
        for name in names.values():
            conn.execute(f"CREATE ROLE {name} LOGIN")
    yield names
    with psycopg.connect(pg_server.dsn(), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
        for name in names.values():
            conn.execute(f"DROP ROLE IF EXISTS {name}")


def as_role(dsn: str, role: str) -> str:
    return " ".join(part for part in dsn.split() if not part.startswith("user=")) + f" user={role}"


def grant_kit(cli, db: str, kit_id: str, *extra: str) -> dict:
    granted = cli("db", "grant", "--kit", kit_id, "--db", db, "--json", *extra)
    assert granted.exit_code == 0, granted.output
    return json.loads(granted.stdout)


def test_a_kits_role_syncs_its_kit_and_cannot_read_change_or_write_another(cli, db, small_kit):
    granted = grant_kit(cli, db, "k")
    assert granted["created"] is True and len(granted["password"]) >= 32
    assert any("INSERT" in s for s in granted["statements"])
    dsn = as_role(db, granted["role"])
    first = sync(cli, small_kit, dsn, "--kit-id", "k")
    label(small_kit, "s-001", "fail")
    second = sync(cli, small_kit, dsn, "--kit-id", "k")
    assert first["added"] > 0 and second["added"] == 1
    assert first["new_kit"] is True and second["new_kit"] is False
    assert stored(db, "acceptances", "k") == in_kit(small_kit, "acceptances")
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("INSERT INTO kits (kit_id) VALUES ('other')")
        other = conn.execute("SELECT kit FROM kits WHERE kit_id = 'other'").fetchone()[0]
    with psycopg.connect(dsn, autocommit=True) as conn:
        for statement in (
            "SELECT record FROM evals",
            "UPDATE evals SET record = '{}'",
            "DELETE FROM acceptances",
            "UPDATE kits SET kit_id = 'x'",
            "UPDATE kits SET role = current_user WHERE kit_id = 'other'",
            "INSERT INTO kits (kit_id) VALUES ('mine')",
            "DELETE FROM syncs",
            "TRUNCATE runs",
            # Row-level security: a row of another kit is refused.
            f"INSERT INTO runs (kit, digest, record) VALUES ({other}, '\\x{'ab' * 32}', '{{}}')",
            f"INSERT INTO syncs (kit, pmos_version, settings, records, added) "
            f"VALUES ({other}, 'x', '{{}}', '{{}}', '{{}}')",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
        # COPY, which a sync uses, is held to the same rule: another kit's row is
        # refused, the role's own kit's row goes in.
        own = conn.execute("SELECT kit FROM kits WHERE role = current_user").fetchone()[0]
        for kit, refused in ((other, True), (own, False)):
            row = (kit, bytes([kit]) * 32, "{}")
            with contextlib.ExitStack() as stack:
                if refused:
                    stack.enter_context(pytest.raises(psycopg.errors.InsufficientPrivilege))
                with conn.cursor().copy("COPY runs (kit, digest, record) FROM STDIN") as copy:
                    copy.write_row(row)
    with psycopg.connect(db) as conn:
        held = conn.execute("SELECT kit, count(*) FROM runs WHERE record = '{}' GROUP BY kit")
        assert held.fetchall() == [(own, 1)]


def test_grant_kit_again_gives_the_same_role_a_new_password_in_a_file(cli, db, tmp_path):
    first = grant_kit(cli, db, "k")
    secret = tmp_path / "k.secret"
    again = grant_kit(cli, db, "k", "--password-file", str(secret))
    assert again["role"] == first["role"] and again["created"] is False
    assert again["password"] is None and again["password_file"] == str(secret)
    written = secret.read_text().strip()
    assert len(written) >= 32 and written != first["password"]
    assert secret.stat().st_mode & 0o777 == 0o600
    human = cli("db", "grant", "--kit", "k", "--db", db)
    assert human.exit_code == 0 and "password (shown once)" in human.stdout
    refused = cli("db", "grant", "--kit", "k", "--password-file", str(secret), "--db", db)
    assert refused.exit_code == 2 and "exists" in refused.stderr
    both = cli("db", "grant", "someone", "--as", "read", "--kit", "k", "--db", db)
    assert both.exit_code == 2 and "not both" in both.stderr


def test_a_kit_syncing_as_another_kit_is_refused_and_nothing_is_written(cli, db, tmp_path):
    """Repository B copies kit A's remote URL (so its computed id is A's), lowers the
    thresholds in its pmos.yaml and syncs with its own role: refused, exit 2,
    nothing written, and A's figures as they were. B naming A's id by hand too."""
    a = git_kit(tmp_path / "a", "git@github.com:acme/a.git")
    populate(a, "a", ["gpt-5"], runs=20)
    b = git_kit(tmp_path / "b", "git@github.com:acme/b.git")
    config = b.root / "pmos.yaml"
    text = config.read_text()
    text = text.replace("kappa_threshold: 0.60", "kappa_threshold: 0").replace(
        "min_pairs: 20", "min_pairs: 2"
    )
    config.write_text(text)
    commit_all(b.root, "lenient")
    b = open_kit(b.root)
    populate(b, "b", ["gpt-5"], runs=12, seed=7)
    role_a = grant_kit(cli, db, "github.com/acme/a#.")["role"]
    role_b = grant_kit(cli, db, "github.com/acme/b#.")["role"]
    sync(cli, a, as_role(db, role_a))
    before = counts(db)
    with psycopg.connect(db) as conn:
        view_before = conn.execute("SELECT * FROM v_calibration").fetchall()
    metrics_before = cli("metrics", "--db", db, "--json", "--kit", "github.com/acme/a#.")
    subprocess.run(
        ["git", "-C", str(b.root), "remote", "set-url", "origin", "git@github.com:acme/a.git"],
        check=True,
    )
    for extra in ((), ("--kit-id", "github.com/acme/a#.")):
        refused = cli("--root", str(b.root), "sync", "--db", as_role(db, role_b), *extra)
        assert refused.exit_code == 2, refused.output
        assert "writes kit 'github.com/acme/b#.' only" in refused.stderr
        assert "'github.com/acme/a#.'" in refused.stderr and "nothing was written" in refused.stderr
    assert counts(db) == before
    with psycopg.connect(db) as conn:
        assert conn.execute("SELECT * FROM v_calibration").fetchall() == view_before
    after = cli("metrics", "--db", db, "--json", "--kit", "github.com/acme/a#.")
    assert after.stdout == metrics_before.stdout
    # B's own role under B's own id works (its remote named again).
    subprocess.run(
        ["git", "-C", str(b.root), "remote", "set-url", "origin", "git@github.com:acme/b.git"],
        check=True,
    )
    assert sync(cli, b, as_role(db, role_b))["added"] > 0


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_settings_reach_the_database_only_from_the_default_branch(cli, db, tmp_path):
    """A feature branch that lowers the thresholds (committed on the branch, and more
    in the working tree) syncs under the default branch's pmos.yaml, and says so."""
    kit = git_kit(tmp_path / "kit", "git@github.com:acme/kit.git")
    populate(kit, "r", ["gpt-5"], runs=20)
    commit_all(kit.root, "records")  # with the override anchors the writers made
    default = git(kit.root, "symbolic-ref", "HEAD")
    git(kit.root, "checkout", "-q", "-b", "feature")
    config = kit.root / "pmos.yaml"
    config.write_text(config.read_text().replace("kappa_threshold: 0.60", "kappa_threshold: 0"))
    commit_all(kit.root, "lower the bar")
    config.write_text(config.read_text().replace("min_pairs: 20", "min_pairs: 2"))
    result = cli("--root", str(kit.root), "sync", "--db", db, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["added"] > 0 and report["policy"] == f"{default}:pmos.yaml"
    assert report["policy_differs"] == ["pmos.yaml"]
    assert "policy differs from the default branch's" in result.stderr
    assert "in pmos.yaml: the sync applies the default branch's" in result.stderr
    with psycopg.connect(db) as conn:
        settings, reported = conn.execute(
            "SELECT settings, metrics->>'kappa_threshold' FROM v_kit_reports"
        ).fetchone()
    assert settings["kappa_threshold"] == 0.6 and settings["min_pairs"] == 20
    assert float(reported) == 0.6
    metrics = cli("metrics", "--db", db, "--json", "--kit", "github.com/acme/kit#.")
    assert json.loads(metrics.stdout)["kappa_threshold"] == 0.6
    # On the default branch, with its policy as committed, nothing differs.
    git(kit.root, "checkout", "-q", "--", "pmos.yaml")
    git(kit.root, "checkout", "-q", default.removeprefix("refs/heads/"))
    again = cli("--root", str(kit.root), "sync", "--db", db, "--json")
    assert again.exit_code == 0 and json.loads(again.stdout)["policy_differs"] == []
    assert "differs" not in again.stderr


def test_a_signer_added_on_a_branch_changes_nothing_the_database_shows(cli, db, tmp_path):
    """The default branch allows one PM's key. A branch adds another key to the
    allowed-signers file in its working tree, and a label signed with it: under
    the default branch's signers that label is not the PM's, so the sync is
    refused (exit 1) with nothing written, and says which policy it applied."""
    keys = tmp_path / "keys"
    keys.mkdir()
    for name in ("pm", "intruder"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(keys / name)],
            check=True,
        )

    def public(name: str) -> str:
        return " ".join((keys / f"{name}.pub").read_text().split()[:2])

    kit = git_kit(tmp_path / "kit", "git@github.com:acme/kit.git")
    (kit.root / "allowed_signers").write_text(f"ana@example.com {public('pm')}\n")
    with (kit.root / "pmos.yaml").open("a", encoding="utf-8") as config:
        config.write("signing:\n  allowed_signers: allowed_signers\n  required: false\n")
    kit = open_kit(kit.root)
    populate(kit, "r", ["gpt-5"], runs=20)
    commit_all(kit.root, "signing")
    first = sync(cli, kit, db)
    assert first["added"] > 0 and first["policy_differs"] == []
    before = counts(db)
    with psycopg.connect(db) as conn:
        view_before = conn.execute("SELECT * FROM v_calibration").fetchall()
    metrics_before = cli("metrics", "--db", db, "--json").stdout
    git(kit.root, "checkout", "-q", "-b", "feature")
    with (kit.root / "allowed_signers").open("a", encoding="utf-8") as signers:
        signers.write(f"mallory@example.com {public('intruder')}\n")
    judge(kit, "r-new", "PASS", model="gpt-5", initiative="init-0")
    signed = cli(
        *("--root", str(kit.root), "accept", "r-new", "--label", "pass"),
        *("--by", "mallory@example.com", "--sign-key", str(keys / "intruder")),
    )
    assert signed.exit_code == 0, signed.output  # the working tree allows it
    refused = cli("--root", str(kit.root), "sync", "--db", db, "--json")
    assert refused.exit_code == 1, refused.output
    assert "fail verification" in refused.stderr and "nothing was copied" in refused.stderr
    assert "does not allow to sign as 'mallory@example.com'" in refused.stderr
    assert "in allowed_signers: the sync applies the default branch's" in refused.stderr
    assert counts(db) == before
    with psycopg.connect(db) as conn:
        assert conn.execute("SELECT * FROM v_calibration").fetchall() == view_before
    assert cli("metrics", "--db", db, "--json").stdout == metrics_before


def test_a_kit_outside_git_syncs_only_when_told_its_working_tree_is_its_policy(
    cli, db, small_kit, tmp_path
):
    refused = cli("--root", str(small_kit.root), "sync", "--db", db, "--kit-id", "k")
    assert refused.exit_code == 2
    assert "is not in a git repository" in refused.stderr
    assert "pass --policy-from-working-tree" in refused.stderr
    assert counts(db)["kits"] == 0
    report = sync(cli, small_kit, db, "--kit-id", "k")  # with the option
    assert report["added"] > 0 and report["policy"].startswith("the working tree")
    # In git the option is refused: a branch does not choose its own policy.
    kit = git_kit(tmp_path / "kit", "git@github.com:acme/kit.git")
    told = cli("--root", str(kit.root), "sync", OUTSIDE_GIT, "--db", db)
    assert told.exit_code == 2
    assert "only for a kit outside git" in told.stderr
    assert counts(db)["kits"] == 1


def test_the_default_branch_is_the_one_pmos_yaml_names(cli, db, tmp_path):
    """pmos.yaml on git's default branch names another branch (pack.default_branch):
    that branch's committed policy applies; a name no branch has is refused."""
    kit = git_kit(tmp_path / "kit", None)
    populate(kit, "r", ["gpt-5"], runs=10)
    start = git(kit.root, "symbolic-ref", "--short", "HEAD")
    config = kit.root / "pmos.yaml"
    base = config.read_text()
    config.write_text(base + "pack:\n  default_branch: trunk\n")
    commit_all(kit.root, "trunk is the default")
    git(kit.root, "checkout", "-q", "-b", "trunk")
    config.write_text(config.read_text().replace("kappa_threshold: 0.60", "kappa_threshold: 0.75"))
    commit_all(kit.root, "stricter on trunk")
    git(kit.root, "checkout", "-q", start)
    report = sync(cli, kit, db, "--kit-id", "k")
    assert report["policy"] == "refs/heads/trunk:pmos.yaml"
    with psycopg.connect(db) as conn:
        (settings,) = conn.execute("SELECT settings FROM v_kit_reports").fetchone()
    assert settings["kappa_threshold"] == 0.75
    config.write_text(base + "pack:\n  default_branch: nowhere\n")
    commit_all(kit.root, "a branch nobody has")
    refused = cli("--root", str(kit.root), "sync", "--db", db, "--kit-id", "k")
    assert refused.exit_code == 2
    assert "names 'nowhere' as the default branch" in refused.stderr


def test_a_kit_whose_pmos_yaml_is_not_on_the_default_branch_is_refused(cli, db, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("a product\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    remote = ["git", "-C", str(repo), "remote", "add", "origin", "git@github.com:acme/repo.git"]
    subprocess.run(remote, check=True)
    commit_all(repo)  # the default branch has a commit, but no kit
    vendored = new_kit(repo / "tools" / "pmos")  # not committed yet
    refused = cli("--root", str(vendored.root), "sync", "--db", db)
    assert refused.exit_code == 2
    assert "not committed on the default branch" in refused.stderr
    assert counts(db)["kits"] == 0


def test_a_read_only_role_reads_views_and_metrics_but_writes_nothing(cli, db, roles, small_kit):
    sync(cli, small_kit, db, "--kit-id", "k")
    read_role = roles["read"]
    assert cli("db", "grant", read_role, "--as", "read", "--db", db).exit_code == 0
    dsn = as_role(db, read_role)
    metrics = cli("metrics", "--db", dsn, "--json")
    assert metrics.exit_code == 0, metrics.output
    assert json.loads(metrics.stdout)["kits"] == ["k"]
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM v_calibration").fetchone()[0] == 1
        assert conn.execute("SELECT count(*) FROM evals").fetchone()[0] > 0
        for statement in (
            "INSERT INTO kits (kit_id) VALUES ('x')",
            "DELETE FROM evals",
            "UPDATE team_settings SET settings = '{}'",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
    refused = cli("--root", str(small_kit.root), "sync", OUTSIDE_GIT, "--db", dsn, "--kit-id", "k2")
    assert refused.exit_code == 2
    assert "the database refused" in refused.stderr and "pmos db grant" in refused.stderr


def test_a_role_without_grants_is_refused_with_what_to_do(cli, db, roles, small_kit):
    refused = cli(
        "--root",
        str(small_kit.root),
        "sync",
        OUTSIDE_GIT,
        "--db",
        as_role(db, roles["none"]),
        "--kit-id",
        "k",
    )
    assert refused.exit_code == 2
    assert "pmos db grant" in refused.stderr
    assert counts(db)["kits"] == 0


# ---------------------------------------------------------------- one validity


OUT_OF_RANGE = (
    "timestamp '0000-01-01T00:00:00Z' is out of range: a record's time must fall in the "
    "years 1970 to 9999 (UTC)"
)


def test_a_record_of_the_year_0_is_refused_alike_by_verify_and_sync(cli, db, tmp_path):
    kit = new_kit(tmp_path / "zero")
    judge(kit, "ok", "PASS", model="gpt-5", initiative="i")
    ledgerfiles.forge(
        kit.root, "runs", ledgerfiles.run_record("r0", recorded_at="0000-01-01T00:00:00Z")
    )
    verify = cli("--root", str(kit.root), "ledger", "verify")
    assert verify.exit_code == 1
    assert OUT_OF_RANGE in verify.output
    refused = cli("--root", str(kit.root), "sync", OUTSIDE_GIT, "--db", db, "--kit-id", "zero")
    assert refused.exit_code == 1, refused.output
    assert "nothing was copied" in refused.stderr and OUT_OF_RANGE in refused.stderr
    assert set(counts(db).values()) == {0}


@pytest.mark.parametrize(
    ("stamp", "epoch", "verified"),
    [
        ("1970-01-01T00:00:00Z", 0, 0),
        # The range's last instant: dated in the future (pmos.gate.clock), so
        # verify and sync refuse it alike, for that reason.
        ("9999-12-31T23:59:59Z", 253402300799, 1),
        ("2026-01-01t00:00:00z", 1767225600, 0),
        ("2026-01-01T00:00:00.123456789Z", 1767225600.123457, 0),
        ("2026-01-01T14:00:00+14:00", 1767225600, 0),
    ],
)
def test_a_record_at_any_stamp_verify_accepts_is_stored(cli, db, tmp_path, stamp, epoch, verified):
    kit = new_kit(tmp_path / "edge")
    ledgerfiles.forge(kit.root, "runs", ledgerfiles.run_record("r0", recorded_at=stamp))
    checked = cli("--root", str(kit.root), "ledger", "verify")
    assert checked.exit_code == verified, checked.output
    if verified:
        assert "future-dated" in checked.output
        refused = cli("--root", str(kit.root), "sync", OUTSIDE_GIT, "--db", db, "--kit-id", "edge")
        assert refused.exit_code == 1 and "future-dated" in refused.stderr
        assert counts(db)["runs"] == 0
        return
    assert sync(cli, kit, db, "--kit-id", "edge")["added"] == 1
    with psycopg.connect(db) as conn:
        at, text = conn.execute(
            "SELECT extract(epoch FROM recorded_at), recorded_at_text FROM runs"
        ).fetchone()
    assert float(at) == pytest.approx(epoch, abs=1e-6) and text == stamp


def test_a_report_is_stored_when_records_or_settings_changed_and_only_then(cli, db, small_kit):
    def reports() -> list[int]:
        with psycopg.connect(db) as conn:
            found = conn.execute(
                "SELECT (metrics->>'pairs')::int FROM syncs WHERE metrics IS NOT NULL ORDER BY sync"
            ).fetchall()
        return [pairs for (pairs,) in found]

    sync(cli, small_kit, db, "--kit-id", "k")
    first = reports()
    sync(cli, small_kit, db, "--kit-id", "k")
    assert reports() == first  # nothing new: the report stands
    judge(small_kit, "s-new", "FAIL", model="gpt-5", initiative="init-0")
    sync(cli, small_kit, db, "--kit-id", "k")
    assert len(reports()) == 2
    config = small_kit.root / "pmos.yaml"
    config.write_text(config.read_text().replace("min_pairs: 20", "min_pairs: 3"))
    sync(cli, small_kit, db, "--kit-id", "k")
    assert len(reports()) == 3
    with psycopg.connect(db) as conn:
        (settings,) = conn.execute("SELECT settings FROM v_kit_reports").fetchone()
    assert settings["min_pairs"] == 3  # a kit outside git: its working tree is its policy
