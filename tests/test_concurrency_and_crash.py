"""Real processes: concurrent writers, and a writer killed mid-storm."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import pmos_process
from pmos.store import chain as ledger

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


def test_eight_processes_append_800_valid_chained_lines(kit_root):
    workers = [spawn(w, 100) for w in range(8)]
    acked: list[str] = []
    for proc in workers:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        acked += out.split()
    path = kit_root / "state/acceptances.jsonl"
    records = list(ledger.iter_records(path, "acceptances"))
    assert len(records) == 800 and len(acked) == 800
    assert {r["record_id"] for r in records} == set(acked)
    for w in range(8):  # each writer's own records stay in its order
        mine = [r["run_id"] for r in records if r["by"] == f"pm{w}"]
        assert mine == [f"w{w}-{i}" for i in range(100)]
    result = pmos_process("ledger", "verify")
    assert result.returncode == 0, result.stdout


def test_sigkill_mid_storm_loses_no_acknowledged_record(kit_root):
    path = kit_root / "state/acceptances.jsonl"
    # Large records make a kill during the write itself more likely.
    proc = spawn(0, 100_000, pad=200_000)
    acked: list[str] = []
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    while len(acked) < 40 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line:
            acked.append(line.strip())
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    # Anything printed before the kill was acknowledged (after fsync).
    acked += proc.stdout.read().split()
    assert len(acked) >= 40

    # The next append repairs whatever the kill left, then the ledger verifies.
    result = pmos_process(
        "accept", "after-crash", "--label", "pass", "--by", "pm", "--allow-unknown-run"
    )
    assert result.returncode == 0, result.stderr
    assert pmos_process("ledger", "verify").returncode == 0
    stored = {r["record_id"] for r in ledger.iter_records(path, "acceptances")}
    assert set(acked) <= stored


def test_simulated_torn_write_is_repaired_and_kept_aside(kit_root):
    path = kit_root / "state/acceptances.jsonl"
    assert (
        pmos_process(
            "accept", "a", "--label", "pass", "--by", "pm", "--allow-unknown-run"
        ).returncode
        == 0
    )
    whole = path.read_bytes()
    # A crash that got only half of a second line onto the disk.
    second = pmos_process("accept", "b", "--label", "fail", "--by", "pm", "--allow-unknown-run")
    assert second.returncode == 0
    line = path.read_bytes()[len(whole) :]
    path.write_bytes(whole + line[: len(line) // 2])
    assert pmos_process("ledger", "verify").returncode == 1
    third = pmos_process("accept", "c", "--label", "pass", "--by", "pm", "--allow-unknown-run")
    assert third.returncode == 0 and "quarantine" in third.stderr
    assert pmos_process("ledger", "verify").returncode == 0
    quarantine = Path(str(path) + ".quarantine")
    assert quarantine.read_text().count("\n") == 1
    runs = [r["run_id"] for r in ledger.iter_records(path, "acceptances")]
    assert runs == ["a", "c"]
