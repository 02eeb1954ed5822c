"""The acceptance writer: which verdict a PM label is stored against, and labelling once."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import good_verdict, ledger_bytes, write_json
from pmos.gate import writers
from pmos.gate.exemplars import read_log
from pmos.kit import open_kit

LOG = "planning/evals/eval-calibration.md"


def ok(result) -> None:
    assert result.exit_code == 0, result.output


def judged_then_skipped(cli, tmp_path: Path) -> dict:
    """run-1: a PASS verdict, then a SKIPPED one; returns the PASS record."""
    ok(cli("run", "register", "--run-id", "run-1", "--initiative-id", "init-1",
           "--builder-model", "claude-sonnet-4"))  # fmt: skip
    ok(cli("eval", "record", "--file", str(write_json(tmp_path / "v.json", good_verdict()))))
    passed = json.loads(cli("ledger", "show", "evals", "--json").stdout)[-1]
    ok(cli("eval", "log", "run-1", "init-1", "SKIPPED", "rerun later"))
    return passed


def last_label(cli) -> dict:
    return json.loads(cli("ledger", "show", "acceptances", "--json").stdout)[-1]


def test_label_and_its_override_entry_name_the_same_judged_verdict(cli, kit_root, tmp_path):
    passed = judged_then_skipped(cli, tmp_path)
    result = cli("accept", "run-1", "--label", "fail", "--by", "pm-ana")
    ok(result)
    assert "overrides the gate's PASS" in result.stderr
    acceptance = last_label(cli)
    assert (acceptance["gate_verdict"], acceptance["gate_record_id"]) == (
        "PASS",
        passed["record_id"],
    )
    [entry] = read_log(open_kit(kit_root))
    assert entry["gate_record_id"] == acceptance["gate_record_id"]
    assert entry["acceptance_record_id"] == acceptance["record_id"]


def test_a_label_with_only_skipped_verdicts_names_no_gate_verdict(cli, kit_root):
    ok(cli("eval", "log", "run-1", "init-1", "SKIPPED", "no time"))
    before = (kit_root / LOG).read_bytes()
    ok(cli("accept", "run-1", "--label", "fail", "--by", "pm-ana"))
    acceptance = last_label(cli)
    assert acceptance["gate_verdict"] is None and acceptance["gate_record_id"] is None
    assert (kit_root / LOG).read_bytes() == before
    assert not (kit_root / "planning/evals/overrides").exists()


def test_only_if_unlabelled_writes_the_first_label_only(kit, kit_root):
    first = writers.record_acceptance(
        kit, run_id="run-1", label="fail", by="seeded", only_if_unlabelled=True
    )
    assert first is not None and first.record["label"] == "fail"
    before = ledger_bytes(kit_root)
    again = writers.record_acceptance(
        kit, run_id="run-1", label="pass", by="seeded", only_if_unlabelled=True
    )
    assert again is None
    assert ledger_bytes(kit_root) == before
    # without the option a later label supersedes, as 'pmos accept' does
    later = writers.record_acceptance(kit, run_id="run-1", label="pass", by="pm")
    assert later is not None and later.record["label"] == "pass"
    assert ledger_bytes(kit_root) != before
