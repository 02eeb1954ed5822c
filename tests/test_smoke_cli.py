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
