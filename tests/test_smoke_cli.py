"""The writers end to end through the in-process CLI."""

from __future__ import annotations

import json

from conftest import good_verdict, ledger_bytes, write_json


def test_register_record_accept_verify(cli, kit_root, tmp_path):
    assert (
        cli(
            "run",
            "register",
            "--run-id",
            "run-1",
            "--initiative-id",
            "init-1",
            "--builder-model",
            "claude-sonnet-4",
        ).exit_code
        == 0
    )
    path = write_json(tmp_path / "v.json", good_verdict())
    result = cli("eval", "record", "--file", str(path), "--json")
    assert result.exit_code == 0, result.output
    stored = json.loads(result.stdout)
    assert stored["verdict"] == "PASS" and stored["form"] == "full"
    assert cli("accept", "run-1", "--label", "pass", "--by", "pm").exit_code == 0
    assert cli("ledger", "verify").exit_code == 0


def test_rejected_verdict_writes_nothing(cli, kit_root, tmp_path):
    before = ledger_bytes(kit_root)
    path = write_json(tmp_path / "v.json", good_verdict(verdict="FAIL"))
    result = cli("eval", "record", "--file", str(path))
    assert result.exit_code == 2
    assert "[combine-rule]" in result.stderr
    assert ledger_bytes(kit_root) == before


def test_a_reader_that_stops_reading_ends_the_command_quietly(kit_root):
    """'pmos ledger verify | head -1': the reader goes away before pmos prints.
    pmos stops as Unix tools do, with no error message and exit 141, not with
    "bad input" (2); read to the end, the same command exits 0."""
    import subprocess
    import sys

    command = [sys.executable, "-m", "pmos", "ledger", "verify"]
    proc = subprocess.Popen(command, cwd=kit_root, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # before pmos has printed anything
    stderr = proc.stderr.read()
    assert proc.wait(timeout=60) == 141, stderr
    assert stderr == b""
    done = subprocess.run(command, cwd=kit_root, capture_output=True, timeout=60)
    assert done.returncode == 0 and b"ok" in done.stdout
