"""`pmos eval log` (the kit's short form) and scripts/pmos-log.sh."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import ledgerfiles
from conftest import ledger_bytes

RUBRIC = "planning/evals/agent-run-eval-rubric.md"


def log(cli, *args: str):
    return cli("eval", "log", *args, "--json", "--allow-unknown-run")


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


@pytest.mark.parametrize(
    "score",
    ["0.8_2", "1e-1", " 0.8", "0.8 ", "+0.8", ".5", "5.", "infinity", "0x1", "\u0660.\u0668"],
)
def test_score_is_a_plain_decimal(cli, kit_root, score):
    """Issue 16 item 14: float() read "0.8_2" as 0.82; only plain decimals are scores."""
    before = ledger_bytes(kit_root)
    result = cli(
        "eval",
        "log",
        "r1",
        "i1",
        score,
        "PASS",
        RUBRIC,
        "m",
        "--spec",
        "pass",
        "--standards",
        "pass",
    )
    assert result.exit_code == 2
    assert "SCORE must be a plain decimal number from 0 to 1" in result.stderr
    assert repr(score) in result.stderr
    assert ledger_bytes(kit_root) == before


@pytest.mark.parametrize(("score", "stored"), [("0.82", 0.82), ("1", 1.0), ("0.80", 0.8)])
def test_plain_decimal_scores_are_accepted(cli, score, stored):
    result = log(
        cli, "r1", "i1", score, "PASS", RUBRIC, "m", "--spec", "pass", "--standards", "pass"
    )
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["score"] == stored


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
    (record,) = ledgerfiles.stored(kit_root, "evals")
    assert record["score"] == 0.85


def test_library_refuses_axes_on_a_skipped_short_verdict(kit):
    from pmos.errors import BadInput
    from pmos.gate.writers import record_short_verdict

    before = ledger_bytes(kit.root)
    with pytest.raises(BadInput, match="SKIPPED verdict takes no"):
        record_short_verdict(
            kit, run_id="r", initiative_id="i", verdict="SKIPPED", skipped_reason="why", spec="pass"
        )
    assert ledger_bytes(kit.root) == before


# ------------------------------------------------------------ the contract (issue 11.1)

CONTRACT4 = "done_criteria:\n" + "".join(
    f"  - {{id: c{i}, text: criterion {i}, test_method: read it}}\n" for i in range(1, 5)
)


def register_with_contract(cli, tmp_path, run_id: str = "r1") -> None:
    contract = tmp_path / "contract.yaml"
    contract.write_text(CONTRACT4, encoding="utf-8")
    result = cli(
        "run",
        "register",
        "--run-id",
        run_id,
        "--initiative-id",
        "i1",
        "--builder-model",
        "claude-sonnet-4",
        "--contract",
        str(contract),
    )
    assert result.exit_code == 0, result.output


def grades(*results: str) -> list[str]:
    out: list[str] = []
    for i, result in enumerate(results, 1):
        evidence = "" if result == "unverified" else f":tests/test_c.py::test_c{i}"
        out += ["--criterion", f"c{i}={result}{evidence}"]
    return out


def test_short_form_without_criteria_is_refused_on_a_run_with_a_contract(cli, tmp_path, kit_root):
    # The reproduction: both axes declared, no criterion graded, was accepted and
    # cleared the run's verification debt.
    register_with_contract(cli, tmp_path)
    before = ledger_bytes(kit_root)
    result = log(
        cli, "r1", "i1", "0.95", "PASS", RUBRIC, "m", "--spec", "pass", "--standards", "pass"
    )
    assert result.exit_code == 2
    for cid in ("c1", "c2", "c3", "c4"):
        assert f"contract criterion {cid!r} is not graded (--criterion {cid}=" in result.stderr
    assert ledger_bytes(kit_root) == before
    queue = json.loads(cli("queue", "--json").stdout)
    assert [d["run_id"] for d in queue["verification_debt"]] == ["r1"]
    partial = log(
        cli,
        "r1",
        "i1",
        "0.95",
        "PASS",
        RUBRIC,
        "m",
        *grades("pass", "pass", "pass"),
        "--standards",
        "pass",
    )
    assert partial.exit_code == 2 and "'c4' is not graded" in partial.stderr
    extra = log(
        cli,
        "r1",
        "i1",
        "0.95",
        "PASS",
        RUBRIC,
        "m",
        *grades("pass", "pass", "pass", "pass", "pass"),
        "--standards",
        "pass",
    )
    assert extra.exit_code == 2 and "'c5' is not a criterion of the contract" in extra.stderr
    assert ledger_bytes(kit_root) == before


def test_short_form_grades_the_contract_and_derives_the_spec_axis(cli, tmp_path):
    register_with_contract(cli, tmp_path)
    result = log(
        cli,
        "r1",
        "i1",
        "0.95",
        "PASS",
        RUBRIC,
        "m",
        "--criterion",
        "c1=pass:tests/test_a.py::test_x passed",
        "--criterion",
        "c2=PASS:tests/test_a.py::test_c2",
        "--criterion",
        "c3=pass:tests/test_a.py::test_c3",
        "--criterion",
        "c4=pass:tests/test_a.py::test_c4",
        "--standards",
        "pass",
    )
    assert result.exit_code == 0, result.stderr
    stored = json.loads(result.stdout)
    assert stored["schema_version"] == 2
    assert stored["axes"]["spec"] == {"verdict": "pass"}
    assert stored["criteria"][0] == {
        "id": "c1",
        "result": "pass",
        "verified": True,
        "evidence": "tests/test_a.py::test_x passed",
    }
    assert stored["criteria"][1] == {
        "id": "c2",
        "result": "pass",
        "verified": True,
        "evidence": "tests/test_a.py::test_c2",
    }
    queue = json.loads(cli("queue", "--json").stdout)
    assert queue["verification_debt"] == []


def test_short_form_failed_criterion_gives_a_failed_spec_axis(cli, tmp_path, kit_root):
    register_with_contract(cli, tmp_path)
    before = ledger_bytes(kit_root)
    passed = log(
        cli,
        "r1",
        "i1",
        "0.95",
        "PASS",
        RUBRIC,
        "m",
        *grades("pass", "fail", "pass", "pass"),
        "--standards",
        "pass",
    )
    assert passed.exit_code == 2 and "[combine-rule]" in passed.stderr
    declared = log(
        cli,
        "r1",
        "i1",
        "0.95",
        "FAIL",
        RUBRIC,
        "m",
        *grades("pass", "fail", "pass", "pass"),
        "--spec",
        "pass",
        "--standards",
        "pass",
    )
    assert declared.exit_code == 2
    assert "[spec-axis]" in declared.stderr and "derived fail" in declared.stderr
    assert ledger_bytes(kit_root) == before
    ok = log(
        cli,
        "r1",
        "i1",
        "0.95",
        "FAIL",
        RUBRIC,
        "m",
        *grades("pass", "unverified", "pass", "pass"),
        "--standards",
        "pass",
    )
    assert ok.exit_code == 0, ok.stderr
    stored = json.loads(ok.stdout)
    assert stored["axes"]["spec"]["verdict"] == "fail"
    assert stored["criteria"][1] == {"id": "c2", "result": "fail", "verified": False}


@pytest.mark.parametrize(
    ("criterion", "message"),
    [
        ("c1", "expected ID=pass|fail|unverified"),
        ("c1=maybe", "expected ID=pass|fail|unverified"),
        ("=pass", "expected ID=pass|fail|unverified"),
        ("c1=pass:could not run it", "[verified-admission]"),
    ],
)
def test_short_form_bad_criterion(cli, tmp_path, kit_root, criterion, message):
    register_with_contract(cli, tmp_path)
    before = ledger_bytes(kit_root)
    result = log(
        cli,
        "r1",
        "i1",
        "0.9",
        "PASS",
        RUBRIC,
        "m",
        "--criterion",
        criterion,
        *grades("pass", "pass", "pass", "pass")[2:],
        "--standards",
        "pass",
    )
    assert result.exit_code == 2
    assert message in result.stderr
    assert ledger_bytes(kit_root) == before


def test_short_form_on_a_run_without_a_contract_still_takes_both_axes(cli):
    result = log(cli, "r1", "i1", "0.9", "PASS", RUBRIC, "m", "--standards", "pass")
    assert result.exit_code == 2 and "--spec or --criterion" in result.stderr
    assert (
        log(
            cli, "r1", "i1", "0.9", "PASS", RUBRIC, "m", "--spec", "pass", "--standards", "pass"
        ).exit_code
        == 0
    )


def test_pmos_log_sh_forwards_criteria(kit_root, tmp_path, cli):
    register_with_contract(cli, tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "PMOS_ROOT"}
    env.update(PYTHON=sys.executable, PMOS_BIN="")
    script = kit_root / "scripts" / "pmos-log.sh"
    args = [
        "eval",
        "r1",
        "i1",
        "0.9",
        "PASS",
        RUBRIC,
        "gpt-5",
        "--spec",
        "pass",
        "--standards",
        "pass",
    ]
    refused = subprocess.run(
        ["bash", str(script), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2 and "'c1' is not graded" in refused.stderr
    done = subprocess.run(
        ["bash", str(script), *args, *grades("pass", "pass", "pass", "pass")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


def test_metrics_counts_pairs_from_short_form_verdicts(cli, tmp_path):
    assert (
        log(
            cli, "r1", "i1", "0.9", "PASS", RUBRIC, "m", "--spec", "pass", "--standards", "pass"
        ).exit_code
        == 0
    )
    assert (
        log(
            cli, "r2", "i1", "0.9", "PASS", RUBRIC, "m", "--spec", "pass", "--standards", "pass"
        ).exit_code
        == 0
    )
    from conftest import good_verdict, write_json

    path = write_json(tmp_path / "v.json", good_verdict(run_id="r3"))
    assert cli("eval", "record", "--file", str(path), "--allow-unknown-run").exit_code == 0
    for run in ("r1", "r3"):
        assert cli("accept", run, "--label", "pass", "--by", "pm").exit_code == 0
    report = json.loads(cli("metrics", "--json").stdout)
    assert (report["pairs"], report["short_form_pairs"]) == (2, 1)
