"""A kit from before the folder layout: its single hash-chained files still read
the same, and ``pmos ledger pack`` converts them keeping every record and digest.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable

import pytest

import ledgerfiles
from conftest import good_verdict, pmos_in_process
from pmos.gate import writers
from pmos.kit import open_kit
from pmos.store import read
from pmos.store.digest import record_digest
from test_metrics import judge


@pytest.fixture
def pmos() -> Callable[..., subprocess.CompletedProcess]:
    """pmos in this process (see conftest.pmos_in_process): these tests are about
    what the readers and verify find, not about processes."""
    return pmos_in_process


def _old_records(kit) -> dict[str, list[dict]]:
    """Records as an older pmos wrote them: made by today's writers, then moved into
    single chained files (``state/<kind>.jsonl``) and their record files removed."""
    writers.register_run(kit, run_id="r1", initiative_id="init-1", builder_model="claude-x")
    writers.register_run(kit, run_id="r2", initiative_id="init-1", builder_model="claude-x")
    writers.record_verdict(kit, good_verdict(run_id="r1"))
    judge(kit, "r2", "FAIL")
    writers.record_acceptance(kit, run_id="r1", label="pass", by="pm")
    writers.record_acceptance(kit, run_id="r2", label="fail", by="pm")
    out = {}
    for kind in ("runs", "evals", "acceptances"):
        out[kind] = ledgerfiles.stored(kit.root, kind)
        for path in ledgerfiles.record_files(kit.root, kind):
            path.unlink()
        ledgerfiles.legacy_ledger(kit.root, kind, out[kind])
    return out


@pytest.fixture
def old(kit):
    return _old_records(kit)


def _views(cli) -> dict:
    """What the commands that read these ledgers say."""
    return {
        "metrics": json.loads(cli("metrics", "--json").stdout),
        "queue": {k: v for k, v in json.loads(cli("queue", "--json").stdout).items() if k != "now"},
        "show": {
            kind: json.loads(cli("ledger", "show", kind, "--json").stdout)
            for kind in ("runs", "evals", "acceptances")
        },
        "last": json.loads(cli("ledger", "show", "evals", "--last", "1", "--json").stdout),
    }


def _no_chain(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in ("prev_hash", "hash")} for r in rows]


def test_an_older_kit_reads_the_same_then_packs_keeping_every_record(old, kit, cli, pmos):
    assert all(ledgerfiles.record_files(kit.root, k) == [] for k in old)
    before = _views(cli)
    for kind, records in old.items():
        assert _no_chain(before["show"][kind]) == records
    assert before["metrics"]["pairs"] == 2
    verified = pmos("ledger", "verify", "--json")
    assert verified.returncode == 0, verified.stdout
    heads = {e["kind"]: e["head"] for e in json.loads(verified.stdout)["ledgers"]}

    packed = cli("ledger", "pack", "--json")
    assert packed.exit_code == 0
    report = {r["kind"]: r for r in json.loads(packed.stdout)["ledgers"]}
    for kind, records in old.items():
        assert report[kind]["legacy_folded"] is True and report[kind]["records"] == len(records)
        assert not (kit.root / "state" / f"{kind}.jsonl").exists()
        (pack,) = ledgerfiles.pack_files(kit.root, kind)
        rows = pack.read_bytes().splitlines()[1:]
        # Each record keeps its content digest: the one of the record without chain fields.
        assert [json.loads(row)["digest"] for row in rows] == [record_digest(r) for r in records]
        assert ledgerfiles.stored(kit.root, kind) == records

    after = _views(cli)
    assert _no_chain(before["last"]) == after["last"]
    for kind in old:
        assert _no_chain(before["show"][kind]) == after["show"][kind]
    assert after["metrics"] == before["metrics"] and after["queue"] == before["queue"]
    verified = pmos("ledger", "verify", "--json")
    assert verified.returncode == 0
    # The same records, however stored, verify to the same digest.
    assert {e["kind"]: e["head"] for e in json.loads(verified.stdout)["ledgers"]} == heads


def test_new_records_follow_the_old_ones_until_and_after_packing(old, kit, cli):
    writers.record_acceptance(kit, run_id="r3", label="pass", by="pm")
    runs = [r["run_id"] for r in read.records(kit.store, "acceptances")]
    assert runs == ["r1", "r2", "r3"]
    assert [r["run_id"] for r in read.newest_first(kit.store, "acceptances")] == runs[::-1]
    legacy = kit.root / "state/acceptances.jsonl"  # never written to any more
    assert _no_chain([json.loads(x) for x in legacy.read_text().splitlines()]) == old["acceptances"]
    assert cli("ledger", "pack").exit_code == 0
    assert [r["run_id"] for r in read.records(open_kit(kit.root).store, "acceptances")] == runs


def test_a_torn_tail_of_an_old_writer_is_skipped_then_kept_aside_by_pack(old, kit, cli, pmos):
    legacy = kit.root / "state/acceptances.jsonl"
    with legacy.open("ab") as handle:
        handle.write(b'{"record_id":"half-writ')
    # Readers skip it (an old writer may have died mid-line); verify reports it.
    assert [r["run_id"] for r in read.records(kit.store, "acceptances")] == ["r1", "r2"]
    result = pmos("ledger", "verify", "--json")
    assert result.returncode == 1
    [entry] = [e for e in json.loads(result.stdout)["ledgers"] if e["kind"] == "acceptances"]
    assert [(p["file"], p["line"]) for p in entry["problems"]] == [(str(legacy), 3)]
    assert "unterminated" in entry["problems"][0]["problem"]

    packed = pmos("ledger", "pack")
    assert packed.returncode == 0
    assert "moved to" in packed.stderr and "quarantine" in packed.stderr
    quarantine = legacy.with_name(legacy.name + ".quarantine")
    assert json.loads(quarantine.read_text())["text"] == '{"record_id":"half-writ'
    assert ledgerfiles.stored(kit.root, "acceptances") == old["acceptances"]
    assert pmos("ledger", "verify").returncode == 0


def test_a_broken_chain_is_not_converted(old, kit, cli, pmos):
    legacy = kit.root / "state/evals.jsonl"
    lines = legacy.read_bytes().splitlines(keepends=True)
    lines[0] = lines[0].replace(b'"r1"', b'"r9"')
    legacy.write_bytes(b"".join(lines))
    before = legacy.read_bytes()
    verified = pmos("ledger", "verify")
    assert verified.returncode == 1 and f"{legacy}:1: " in verified.stdout
    for args in (("metrics",), ("ledger", "show", "evals"), ("queue",)):
        result = pmos(*args)
        assert result.returncode == 2 and f"{legacy}:1" in result.stderr, args
    packed = pmos("ledger", "pack", "evals")
    assert packed.returncode == 2 and "not converted while its chain is broken" in packed.stderr
    assert legacy.read_bytes() == before and ledgerfiles.pack_files(kit.root, "evals") == []


def test_a_line_copied_from_another_kinds_old_file_is_named(old, kit, pmos):
    runs = (kit.root / "state/runs.jsonl").read_bytes()
    (kit.root / "state/acceptances.jsonl").write_bytes(runs)
    result = pmos("ledger", "verify", "--json")
    assert result.returncode == 1
    [entry] = [e for e in json.loads(result.stdout)["ledgers"] if e["kind"] == "acceptances"]
    assert entry["problems"][0]["line"] == 1
