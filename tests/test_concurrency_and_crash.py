"""Real processes: concurrent writers, a writer killed mid-storm, racing registrations."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

import ledgerfiles
from conftest import REGISTER_R, pmos_process
from pmos.kit import open_kit
from pmos.store import read
from pmos.store.layout import TEMP_PREFIX

WORKER = """
import sys
from pmos.kit import open_kit
from pmos.gate.writers import record_acceptance

kit = open_kit()
worker, count = sys.argv[1], int(sys.argv[2])
for i in range(count):
    written = record_acceptance(kit, run_id=f"w{worker}-{i}", label="pass", by=f"pm{worker}",
                                note="x" * int(sys.argv[3]))
    print(written.record["record_id"], flush=True)
"""


def spawn(worker: int, count: int, pad: int = 0) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", WORKER, str(worker), str(count), str(pad)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def temps(kit_root) -> list:
    folder = ledgerfiles.folder(kit_root, "acceptances")
    return sorted(p for p in folder.rglob(f"{TEMP_PREFIX}*"))


@pytest.mark.slow
def test_eight_processes_append_1600_records_each_stored_once(kit_root):
    workers = [spawn(w, 200) for w in range(8)]
    acked: list[str] = []
    for proc in workers:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        acked += out.split()
    assert len(acked) == 1600
    assert len(ledgerfiles.record_files(kit_root, "acceptances")) == 1600
    assert temps(kit_root) == []
    records = list(read.records(open_kit(kit_root).store, "acceptances"))
    assert sorted(r["record_id"] for r in records) == sorted(acked)  # each exactly once
    for w in range(8):  # each writer's own records read back in the order it wrote them
        mine = [r["run_id"] for r in records if r["by"] == f"pm{w}"]
        assert mine == [f"w{w}-{i}" for i in range(200)]
    result = pmos_process("ledger", "verify", "--schema")
    assert result.returncode == 0, result.stdout
    # The open month is never packed; the records read back the same.
    assert pmos_process("ledger", "pack").returncode == 0
    assert len(ledgerfiles.record_files(kit_root, "acceptances")) == 1600
    assert list(read.records(open_kit(kit_root).store, "acceptances")) == records
    assert pmos_process("ledger", "verify").returncode == 0


def stopped(pid: int) -> bool:
    """Whether the process has come to a halt after SIGSTOP (state T in /proc)."""
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] in ("T", "t")


def storm_and_kill(kit_root, acks: int, pad: int) -> list[str]:
    """Start a writer of large records and, after ``acks`` acknowledgements, SIGKILL it
    in the middle of a write.

    Seeing its temporary file and then killing it is a race the writer may win (it
    renames the file in between). So the writer is first frozen with SIGSTOP; only if
    its temporary file is still there once it has stopped is it killed, otherwise it
    is let go on and caught at a later write."""
    proc = spawn(0, 100_000, pad=pad)
    assert proc.stdout is not None
    acked: list[str] = []
    while len(acked) < acks:
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else "the writer ended"
        acked.append(line.strip())
    folder = ledgerfiles.folder(kit_root, "acceptances")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if not any(folder.rglob(f"{TEMP_PREFIX}*")):
            continue
        os.kill(proc.pid, signal.SIGSTOP)
        while not stopped(proc.pid):
            time.sleep(0.001)
        if temps(kit_root):
            break
        os.kill(proc.pid, signal.SIGCONT)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    # Anything printed before the kill was acknowledged (after the fsyncs).
    acked += proc.stdout.read().split()
    return acked


@pytest.mark.slow
def test_sigkill_mid_storm_loses_no_acknowledged_record_and_leaves_no_torn_file(kit_root):
    # (notes of 60 kB: large, yet within what a text field may hold)
    acked = storm_and_kill(kit_root, acks=5, pad=60_000)
    left = temps(kit_root)
    assert left, "the writer was never caught in the middle of a write"

    # No torn or partial record file: every one verifies, leftovers are ignored.
    done = pmos_process("ledger", "verify")
    assert done.returncode == 0, done.stdout
    store = open_kit(kit_root).store
    stored = {r["record_id"] for r in read.records(store, "acceptances")}
    assert set(acked) <= stored
    # The lock died with the writer: the next one proceeds.
    result = pmos_process(
        "accept", "after-crash", "--label", "pass", "--by", "pm", "--allow-unknown-run"
    )
    assert result.returncode == 0, result.stderr

    # A young temporary file may be a write in flight: pack keeps it...
    assert pmos_process("ledger", "pack", "acceptances").returncode == 0
    assert temps(kit_root) == left
    # ...and removes it once it is older than an hour.
    hour_ago = time.time() - 3700
    for path in left:
        os.utime(path, (hour_ago, hour_ago))
    assert pmos_process("ledger", "pack", "acceptances").returncode == 0
    assert temps(kit_root) == []
    after = [r["record_id"] for r in read.records(store, "acceptances")]
    assert sorted(after) == sorted(stored | {result.stdout.strip()})  # each once, none lost
    assert pmos_process("ledger", "verify").returncode == 0


def test_concurrent_registrations_of_one_run_store_it_once(kit_root):
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "pmos", *REGISTER_R, "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    outcomes = [(p.communicate(timeout=120), p.returncode) for p in procs]
    codes = sorted(code for _, code in outcomes)
    assert codes == [0, 2, 2, 2, 2, 2], outcomes
    refused = [err for (_, err), code in outcomes if code == 2]
    assert all("already registered" in err for err in refused), refused
    (stored,) = ledgerfiles.stored(kit_root, "runs")
    assert stored["run_id"] == "r"
    assert pmos_process("ledger", "verify").returncode == 0
