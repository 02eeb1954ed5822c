"""Real processes (issue 29, item 6): readers running while a pack runs, and a torn
loose file, never raise a false alarm, a "try again", or block reading."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

import ledgerfiles
from conftest import pmos_process
from pmos.kit import open_kit
from pmos.store import integrity
from pmos.store.append import Draft, append

#: Pack cycles: each adds records to closed months, then packs them in a real process.
CYCLES = 4
PER_CYCLE = 240


def _add_closed_month_runs(kit_root: Path, cycle: int, appended: list[str]) -> None:
    """Register runs dated in three closed months (through the store's append);
    ``appended`` lists each once it is stored."""
    store = open_kit(kit_root).store
    for i in range(PER_CYCLE):
        record = ledgerfiles.run_record(f"c{cycle}-r{i}")
        month = 1 + i % 3
        record["recorded_at"] = f"2026-0{month}-1{cycle}T00:00:{i % 60:02d}.{i:06d}Z"
        append(store, "runs", lambda r=record: Draft([r]))
        appended.append(record["run_id"])


def _read_in_a_loop(
    command: list[str], stop: threading.Event, appended: list[str], seen: list
) -> None:
    """Run ``command`` until ``stop``; each reading with how many runs were stored
    before it started and after it ended."""
    while not stop.is_set():
        before = len(appended)
        done = pmos_process(*command, timeout=300)
        seen.append((before, len(appended), done.returncode, done.stdout, done.stderr))


def _label_in_a_loop(stop: threading.Event, seen: list) -> None:
    """A PM labelling runs meanwhile: 'pmos accept' reads the ledgers before it writes."""
    while not stop.is_set():
        run_id = f"labelled-{len(seen)}"
        seen.append(pmos_process("accept", run_id, "--label", "pass", "--by", "pm",
                                 "--allow-unknown-run", timeout=300))  # fmt: skip


@pytest.mark.slow
def test_readers_see_a_consistent_kit_while_packs_run(kit_root):
    """'pmos ledger verify', 'pmos queue' and 'pmos accept' run over and over in
    their own processes while 'pmos ledger pack' folds loose files into packs:
    every reading is clean (no tamper alarm, no record missing or read twice, no
    retry asked) and every label is stored."""
    stop = threading.Event()
    appended: list[str] = []
    verifies: list = []
    queues: list = []
    labels: list = []
    readers = [
        threading.Thread(
            target=_read_in_a_loop, args=(["ledger", "verify"], stop, appended, verifies)
        ),
        threading.Thread(
            target=_read_in_a_loop, args=(["queue", "--json"], stop, appended, queues)
        ),
        threading.Thread(target=_label_in_a_loop, args=(stop, labels)),
    ]
    packs = []
    try:
        for reader in readers:
            reader.start()
        for cycle in range(CYCLES):
            _add_closed_month_runs(kit_root, cycle, appended)
            packs.append(pmos_process("ledger", "pack", "runs", "--force", timeout=300))
    finally:
        stop.set()
        for reader in readers:
            reader.join(timeout=600)
    for done in packs:
        assert done.returncode == 0, done.stderr
    assert len(ledgerfiles.pack_files(kit_root, "runs")) == 3
    assert ledgerfiles.record_files(kit_root, "runs") == []
    assert verifies and queues and labels
    for done in labels:
        assert done.returncode == 0, done.stderr
    for _, _, code, out, err in verifies:
        assert code == 0, out + err
        assert "try again" not in out + err
    for before, after, code, out, err in queues:
        assert code in (0, 1), err  # 1: runs without a verdict are owed one
        found = json.loads(out)
        assert found["excluded_records"] == [], found["excluded_records"]
        # (the labelled runs, never registered nor judged, are owed a verdict too)
        owed = [d["run_id"] for d in found["verification_debt"] if d["run_id"][0] == "c"]
        # Each run once, and every run stored before the reading began: never a
        # record lost or doubled while its loose file and its pack changed places.
        assert len(owed) == len(set(owed))
        assert set(appended[:before]) <= set(owed) <= set(appended[:after])


@pytest.mark.parametrize("month", ["2026-01", "open"])
def test_a_torn_loose_file_is_left_out_with_its_reason_and_blocks_nothing(kit_root, month):
    """A loose file cut short (by truncation: pmos's own writers never leave one,
    tests/test_concurrency_and_crash kills them to show it) is left out of every
    reading with the reason, named by 'pmos ledger verify' (exit 1), and neither
    the readers nor the writers nor 'pmos ledger pack' stop at it."""
    store = open_kit(kit_root).store
    for i in range(3):
        record = ledgerfiles.run_record(f"r{i}")
        if month != "open":
            record["recorded_at"] = f"{month}-0{i + 1}T00:00:00.000000Z"
        append(store, "runs", lambda r=record: Draft([r]))
    torn = ledgerfiles.holding(kit_root, "runs", b'"r1"')
    torn.write_bytes(torn.read_bytes()[:40])

    queue = pmos_process("queue", "--json")
    assert queue.returncode == 1, queue.stderr  # r0 and r2 are owed a verdict
    found = json.loads(queue.stdout)
    assert sorted(d["run_id"] for d in found["verification_debt"]) == ["r0", "r2"]
    (left_out,) = found["excluded_records"]
    assert left_out["problem"] == "a record file holds exactly one line"
    metrics = pmos_process("metrics", "--json")
    assert metrics.returncode == 0, metrics.stderr
    verify = pmos_process("ledger", "verify")
    assert verify.returncode == 1 and torn.name in verify.stdout
    assert "a record file holds exactly one line" in verify.stdout
    written = pmos_process("run", "register", "--run-id", "r3", "--initiative-id", "i",
                           "--builder-model", "m")  # fmt: skip
    assert written.returncode == 0, written.stderr
    packed = pmos_process("ledger", "pack", "--force")
    assert packed.returncode == 0, packed.stderr
    if month != "open":
        assert "not packed" in packed.stdout + packed.stderr and torn.exists()
    again = json.loads(pmos_process("queue", "--json").stdout)
    assert sorted(d["run_id"] for d in again["verification_debt"]) == ["r0", "r2", "r3"]


def test_a_reading_listed_before_a_pack_and_read_after_it_misses_nothing(kit_root):
    """The race above, made certain: a reader lists the ledger, a real 'pmos ledger
    pack' then folds the listed loose files into a pack and removes them, and only
    then does the reader read what it listed. It reads the month again and sees
    every record once."""
    appended: list[str] = []
    _add_closed_month_runs(kit_root, 0, appended)
    store = open_kit(kit_root).store
    listed = store.sources("runs")
    assert listed.buckets and all(b.loose and not b.packs for b in listed.buckets)
    packed = pmos_process("ledger", "pack", "runs", "--force")
    assert packed.returncode == 0, packed.stderr
    assert ledgerfiles.record_files(kit_root, "runs") == []
    scans = list(integrity.scan(listed, "runs"))
    assert [r.refused for r in scans] == [[], [], []]
    read_ids = [json.loads(s.raw)["run_id"] for r in scans for s in r.stored]
    assert sorted(read_ids) == sorted(appended)


def test_a_month_read_ahead_then_packed_again_is_read_as_it_is_now(kit_root):
    """A scan reads the next month's packs while its reader is on this month
    (integrity.ReadAhead). A pack that ran in between (a new pack of the month
    written, what it folded removed) leaves the month as it is now: listed and read
    again, every record once; and no reading thread outlives the scan."""
    store = open_kit(kit_root).store

    def run(run_id: str, at: str) -> dict:
        return {**ledgerfiles.run_record(run_id), "recorded_at": at}

    january = run("a1", "2025-01-01T00:00:00Z")
    ledgerfiles.pack_of(kit_root, "runs", [january])
    february = [run("b1", "2025-02-01T00:00:00Z"), run("b2", "2025-02-02T00:00:00Z")]
    old = ledgerfiles.pack_of(kit_root, "runs", february[:1])
    loose = ledgerfiles.forge(kit_root, "runs", february[1])
    scan = integrity.scan(store.sources("runs"), "runs")
    first = next(scan)  # February's pack is being read ahead
    assert [e.key[1] for e in first.stored] == [january["record_id"]]
    new = ledgerfiles.pack_of(kit_root, "runs", february)
    old.unlink()
    loose.unlink()
    rest = list(scan)
    assert [e.key[1] for bucket in rest for e in bucket.stored] == [
        r["record_id"] for r in february
    ]
    assert {p.path for bucket in rest for p in bucket.packs if p.ok} == {new}
    assert not [t for t in threading.enumerate() if t.name.startswith("pmos-read-ahead")]
