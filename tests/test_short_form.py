"""`pmos eval log` (the kit's short form) and scripts/pmos-log.sh."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ledger_bytes

RUBRIC = "planning/evals/agent-run-eval-rubric.md"


def log(cli, *args: str):
    return cli("eval", "log", *args, "--json")


def test_short_form_records_a_verdict(cli):
    result = log(
        cli,
        "r1",
        "i1",
        "0.8",
        "PASS",
        RUBRIC,
        "gpt-5",
        "--spec",
        "pass",
        "--standards",
        "pass",
        "--note",
        "Spec: pass. Standards: pass.",
    )
    assert result.exit_code == 0, result.stderr
    stored = json.loads(result.stdout)
    assert stored["form"] == "short"
    assert stored["axes"] == {"spec": {"verdict": "pass"}, "standards": {"verdict": "pass"}}
    assert "dimensions" not in stored and stored["evaluator_model"] == "gpt-5"


def test_short_form_skipped(cli):
    result = log(cli, "r1", "i1", "SKIPPED", "runner crashed before review")
    assert result.exit_code == 0, result.stderr
    stored = json.loads(result.stdout)
    assert stored["verdict"] == "SKIPPED" and stored["score"] is None
    assert stored["skipped_reason"] == "runner crashed before review"
    result = log(cli, "r1", "i1", "SKIPPED", "why", RUBRIC, "gpt-5")
    assert json.loads(result.stdout)["rubric_path"] == RUBRIC


@pytest.mark.parametrize(
    ("args", "rule"),
    [
        # below the threshold, standards cannot pass
        (("0.5", "PASS", RUBRIC, "m", "--spec", "pass", "--standards", "pass"), "[standards-axis]"),
        # a failed spec axis is always FAIL
        (
            ("0.9", "PASS-WITH-FINDINGS", RUBRIC, "m", "--spec", "fail", "--standards", "pass"),
            "[combine-rule]",
        ),
        # a failed standards axis is never a clean PASS
        (("0.9", "PASS", RUBRIC, "m", "--spec", "pass", "--standards", "fail"), "[combine-rule]"),
        (("1.5", "PASS", RUBRIC, "m", "--spec", "pass", "--standards", "pass"), "[schema:maximum]"),
        (("0.9", "GREAT", RUBRIC, "m", "--spec", "pass", "--standards", "pass"), "[schema:enum]"),
        (("0.9", "PASS", "nope.md", "m", "--spec", "pass", "--standards", "pass"), "[rubric-path]"),
        # the parser refuses a choice it does not know, naming the valid ones
        (("0.9", "PASS", RUBRIC, "m", "--spec", "maybe", "--standards", "pass"), "'pass', 'fail'"),
        # a missing model names the argument to add and the variable that stands for it
        (
            ("0.9", "PASS", RUBRIC, "--spec", "pass", "--standards", "pass"),
            "sixth argument, after RUBRIC_PATH, or set PMOS_EVALUATOR_MODEL",
        ),
        # a rubric path is relative to the kit root, and the error lists the rubrics there
        (
            (
                "0.9",
                "PASS",
                "evals/agent-run-eval-rubric.md",
                "m",
                "--spec",
                "pass",
                "--standards",
                "pass",
            ),
            f"relative to the kit root, not to the working directory); rubrics found: {RUBRIC}",
        ),
    ],
)
def test_short_form_rules(cli, kit_root, args, rule):
    before = ledger_bytes(kit_root)
    result = log(cli, "r1", "i1", *args)
    assert result.exit_code == 2
    assert rule in " ".join(result.stderr.split())
    assert ledger_bytes(kit_root) == before


@pytest.mark.parametrize(
    "args",
    [
        ("r1", "i1", "0.9"),
        ("r1", "i1", "high", "PASS", RUBRIC, "--spec", "pass", "--standards", "pass"),
        ("r1", "i1", "nan", "PASS", RUBRIC, "--spec", "pass", "--standards", "pass"),
        ("r1", "i1", "0.9", "PASS", RUBRIC, "m", "--spec", "pass"),
        ("r1", "i1", "0.9", "PASS", RUBRIC, "m", "extra", "--spec", "pass", "--standards", "pass"),
        ("r1", "i1", "SKIPPED", "why", RUBRIC, "m", "extra"),
        ("r1", "i1", "SKIPPED", "why", "--spec", "pass"),
    ],
)
def test_short_form_usage_errors(cli, kit_root, args):
    before = ledger_bytes(kit_root)
    result = cli("eval", "log", *args)
    assert result.exit_code == 2
    assert ledger_bytes(kit_root) == before


def test_evaluator_model_from_the_environment(cli, monkeypatch):
    monkeypatch.setenv("PMOS_EVALUATOR_MODEL", "gemini-2.5-pro")
    result = log(cli, "r1", "i1", "0.9", "PASS", RUBRIC, "--spec", "pass", "--standards", "pass")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["evaluator_model"] == "gemini-2.5-pro"


def test_pmos_log_sh_forwards_from_any_directory(kit_root, tmp_path):
    script = kit_root / "scripts" / "pmos-log.sh"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PMOS_ROOT"}
    env["PYTHON"] = sys.executable
    env["PMOS_BIN"] = ""

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["bash", str(script), *args],
            cwd=elsewhere,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    assert (
        run(
            "run", "--run-id", "r1", "--initiative-id", "i1", "--builder-model", "claude-sonnet-4"
        ).returncode
        == 0
    )
    result = run(
        "eval", "r1", "i1", "0.85", "PASS", RUBRIC, "gpt-5", "--spec", "pass", "--standards", "pass"
    )
    assert result.returncode == 0, result.stderr
    result = run(
        "eval", "r1", "i1", "0.5", "PASS", RUBRIC, "gpt-5", "--spec", "pass", "--standards", "pass"
    )
    assert result.returncode == 2 and "[standards-axis]" in result.stderr
    assert run("accept", "r1", "--label", "pass", "--by", "pm").returncode == 0
    assert run("bogus").returncode == 2
    lines = Path(kit_root / "state/evals.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["score"] == 0.85


def test_library_refuses_axes_on_a_skipped_short_verdict(kit):
    from pmos.errors import BadInput
    from pmos.gate.writers import record_short_verdict

    before = ledger_bytes(kit.root)
    with pytest.raises(BadInput, match="SKIPPED verdict takes no"):
        record_short_verdict(
            kit, run_id="r", initiative_id="i", verdict="SKIPPED", skipped_reason="why", spec="pass"
        )
    assert ledger_bytes(kit.root) == before
