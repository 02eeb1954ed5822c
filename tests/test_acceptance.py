"""The acceptance writer: which verdict a PM label is stored against, and labelling once."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import good_verdict, ledger_bytes, write_json
from pmos.gate import writers
from pmos.gate.exemplars import read_log
from pmos.kit import open_kit

LOG = "planning/evals/exemplars.yaml"
RUBRIC = "planning/evals/agent-run-eval-rubric.md"


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
    ok(cli("eval", "log", "run-1", "init-1", "SKIPPED", "no time", "--allow-unknown-run"))
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


# ---------------------------------------------------------------- unknown runs


def test_a_label_for_a_run_the_kit_never_saw_is_refused_and_writes_nothing(cli, kit_root):
    before = ledger_bytes(kit_root)
    result = cli("accept", "run-99", "--label", "pass", "--by", "pm-ana")
    assert result.exit_code == 2
    assert "[unknown-run]" in result.stderr and "--allow-unknown-run" in result.stderr
    assert ledger_bytes(kit_root) == before


def test_allow_unknown_run_labels_it_flagged(cli):
    result = cli("accept", "run-99", "--label", "fail", "--by", "pm-ana", "--allow-unknown-run")
    ok(result)
    assert last_label(cli)["flags"] == ["unregistered-run"]


def test_a_registered_run_or_one_with_any_verdict_is_known(cli):
    ok(cli("run", "register", "--run-id", "run-1", "--initiative-id", "i", "--builder-model", "m"))
    ok(cli("accept", "run-1", "--label", "pass", "--by", "pm-ana"))
    # An unregistered run with only a SKIPPED verdict has still been seen by the gate.
    ok(cli("eval", "log", "run-2", "i", "SKIPPED", "no time", "--allow-unknown-run"))
    ok(cli("accept", "run-2", "--label", "fail", "--by", "pm-ana"))


def test_the_library_refuses_only_when_asked(kit):
    import pytest

    from pmos.errors import RecordRejected

    with pytest.raises(RecordRejected, match="unknown-run"):
        writers.record_acceptance(kit, run_id="x", label="pass", by="pm", refuse_unknown_run=True)
    written = writers.record_acceptance(kit, run_id="x", label="pass", by="pm")
    assert written is not None and written.record["flags"] == ["unregistered-run"]


# ---------------------------------------------------------------- --verdict


def logged(cli, run: str, verdict: str) -> dict:
    """A short-form verdict on ``run`` through 'pmos eval log'; returns the stored record."""
    if verdict == "SKIPPED":
        args = ["SKIPPED", "no time"]
    else:
        side = "fail" if verdict == "FAIL" else "pass"
        score = "0.3" if side == "fail" else "0.9"
        args = [score, verdict, RUBRIC, "gpt-5", "--spec", side, "--standards", side]
    result = cli("eval", "log", run, "init-1", *args, "--json", "--allow-unknown-run")
    ok(result)
    return json.loads(result.stdout)


def test_verdict_labels_an_earlier_judged_verdict_and_metrics_pairs_with_it(cli, kit_root):
    first = logged(cli, "run-1", "FAIL")
    logged(cli, "run-1", "PASS")  # the gate judged the run again; the PM read the FAIL
    ok(cli("accept", "run-1", "--label", "fail", "--by", "pm-ana", "--verdict", first["record_id"]))
    acceptance = last_label(cli)
    assert (acceptance["gate_verdict"], acceptance["gate_record_id"]) == (
        "FAIL",
        first["record_id"],
    )
    # Agreeing with the named FAIL is no override, whatever the latest verdict says.
    assert not (kit_root / "planning/evals/overrides").exists()
    report = json.loads(cli("metrics", "--json").stdout)
    assert report["confusion"] == {"tp": 0, "fn": 0, "fp": 0, "tn": 1}  # the latest would be fp
    assert report["labels_superseded"] == 1  # a newer verdict waits for a label
    ok(cli("ledger", "verify"))  # the stored label passes the re-check of gate_record_id


def test_a_label_against_the_named_verdict_is_an_override_naming_it(cli, kit_root):
    first = logged(cli, "run-1", "FAIL")
    logged(cli, "run-1", "PASS")
    verdict = ("--verdict", first["record_id"])
    result = cli("accept", "run-1", "--label", "pass", "--by", "pm-ana", *verdict)
    ok(result)
    assert "overrides the gate's FAIL" in result.stderr
    [entry] = read_log(open_kit(kit_root))
    assert entry["gate_record_id"] == first["record_id"] == last_label(cli)["gate_record_id"]
    report = json.loads(cli("metrics", "--json").stdout)
    assert report["confusion"] == {"tp": 0, "fn": 1, "fp": 0, "tn": 0}


def refused(cli, kit_root: Path, *args: str) -> str:
    before = ledger_bytes(kit_root)
    result = cli("accept", "run-1", "--label", "pass", "--by", "pm-ana", *args)
    assert result.exit_code == 2, result.output
    assert "[gate-record]" in result.stderr and "--verdict" in result.stderr
    assert ledger_bytes(kit_root) == before
    return result.stderr


def test_verdict_refuses_an_unknown_record_id(cli, kit_root):
    logged(cli, "run-1", "PASS")
    assert "no verdict with that record id" in refused(cli, kit_root, "--verdict", "ev-nope")


def test_verdict_refuses_another_runs_verdict(cli, kit_root):
    logged(cli, "run-1", "PASS")
    other = logged(cli, "run-2", "FAIL")
    stderr = refused(cli, kit_root, "--verdict", other["record_id"])
    assert "judges run 'run-2', not 'run-1'" in stderr


def test_verdict_refuses_a_skipped_verdict(cli, kit_root):
    logged(cli, "run-1", "PASS")
    skip = logged(cli, "run-1", "SKIPPED")
    assert "SKIPPED verdict" in refused(cli, kit_root, "--verdict", skip["record_id"])
