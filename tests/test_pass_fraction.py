"""The pass-fraction disclosure every new verdict carries (as it stood before the record)."""

from __future__ import annotations

import json

import pytest
import yaml

from conftest import RUBRIC, good_verdict, ledger_bytes, write_json
from pmos.gate.pass_fraction import PassFraction


def log(cli, run, verdict):
    if verdict == "SKIPPED":
        args = [
            "eval",
            "log",
            run,
            "init-1",
            "SKIPPED",
            "evaluator unavailable",
            "--allow-unknown-run",
        ]
    else:
        passing = verdict != "FAIL"
        score = "0.9" if passing else "0.3"
        axis = "pass" if passing else "fail"
        args = [
            "eval",
            "log",
            run,
            "init-1",
            score,
            verdict,
            RUBRIC,
            "gpt-5",
            "--allow-unknown-run",
        ]
        args += ["--spec", axis, "--standards", axis]
    result = cli(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_first_verdict_discloses_unknown_then_the_number_before_it(cli):
    assert log(cli, "r1", "PASS")["pass_fraction"] == "unknown"
    assert log(cli, "r2", "FAIL")["pass_fraction"] == 1.0  # r1 only
    assert log(cli, "r3", "PASS-WITH-FINDINGS")["pass_fraction"] == 0.5  # r1, r2
    # r1, r2, r3: PASS and PASS-WITH-FINDINGS are both pass-side.
    assert log(cli, "r4", "FAIL")["pass_fraction"] == pytest.approx(0.666667)


def test_skipped_verdicts_are_excluded(cli):
    assert log(cli, "r1", "SKIPPED")["pass_fraction"] == "unknown"
    assert log(cli, "r2", "PASS")["pass_fraction"] == "unknown"  # a skip judged nothing
    assert log(cli, "r3", "SKIPPED")["pass_fraction"] == 1.0
    assert log(cli, "r4", "FAIL")["pass_fraction"] == 1.0  # r2 only; r3 skipped
    assert log(cli, "r5", "PASS")["pass_fraction"] == 0.5


def test_window_comes_from_pmos_yaml(cli, kit_root):
    config = kit_root / "pmos.yaml"
    data = yaml.safe_load(config.read_text())
    data["pass_fraction_window"] = 2
    config.write_text(yaml.safe_dump(data))
    for run, verdict in (("r1", "PASS"), ("r2", "PASS"), ("r3", "FAIL")):
        log(cli, run, verdict)
    assert log(cli, "r4", "SKIPPED")["pass_fraction"] == 0.5  # r2, r3
    assert log(cli, "r5", "PASS")["pass_fraction"] == 0.5  # still r2, r3: the skip is no verdict


def test_full_verdicts_carry_it_too(cli, tmp_path):
    log(cli, "r0", "FAIL")
    path = write_json(tmp_path / "v.json", good_verdict(run_id="r1"))
    result = cli("eval", "record", "--file", str(path), "--json", "--allow-unknown-run")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["pass_fraction"] == 0.0


def test_the_author_cannot_supply_it(cli, kit_root, tmp_path):
    before = ledger_bytes(kit_root)
    path = write_json(tmp_path / "v.json", good_verdict(pass_fraction=0.1))
    result = cli("eval", "record", "--file", str(path))
    assert result.exit_code == 2
    assert "pass_fraction" in result.stderr and "writer-owned-field" in result.stderr
    assert ledger_bytes(kit_root) == before


def test_pass_fraction_rule():
    tally = PassFraction(3)
    assert tally.value is None and not tally.full
    for verdict in ["FAIL", "SKIPPED", "PASS", "PASS-WITH-FINDINGS"]:
        tally.add(verdict)
    assert tally.value == pytest.approx(0.666667) and tally.full
    tally.add("PASS")  # the FAIL leaves the window
    assert tally.value == 1.0
    assert PassFraction.of(["SKIPPED"] * 5, 3).value is None
    with pytest.raises(ValueError):
        PassFraction(0)
