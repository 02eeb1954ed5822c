"""Issue 25.5: runs are named once. A verdict for a run that is not registered is
refused unless asked for; 'pmos run register' makes unique ids; a run id that two
branches registered is reported after the merge, with both records and the way out."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from conftest import RUBRIC, good_verdict, ledger_bytes, write_json

SHORT = ("0.9", "PASS", RUBRIC, "gpt-5", "--spec", "pass", "--standards", "pass")


def register(cli, run: str, initiative: str = "i1", model: str = "m"):
    return cli(
        "run", "register", "--run-id", run, "--initiative-id", initiative, "--builder-model", model
    )


def test_a_verdict_for_a_typo_of_a_registered_run_is_refused(cli, kit_root):
    assert register(cli, "run-7").exit_code == 0
    before = ledger_bytes(kit_root)
    result = cli("eval", "log", "run-77", "i1", *SHORT)
    assert result.exit_code == 2
    assert "[unknown-run]" in result.stderr and "did you mean 'run-7'" in result.stderr
    assert "--allow-unknown-run" in result.stderr
    assert ledger_bytes(kit_root) == before
    assert cli("eval", "log", "run-7", "i1", *SHORT).exit_code == 0


def test_allow_unknown_run_records_it_flagged(cli, kit_root):
    result = cli("eval", "log", "elsewhere-1", "i1", *SHORT, "--allow-unknown-run", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["flags"] == ["unregistered-run"]


def test_eval_record_refuses_an_unregistered_run_too(cli, kit_root, tmp_path):
    path = write_json(tmp_path / "verdict.json", good_verdict(run_id="run-x"))
    before = ledger_bytes(kit_root)
    result = cli("eval", "record", "--file", str(path))
    assert result.exit_code == 2 and "[unknown-run]" in result.stderr
    assert ledger_bytes(kit_root) == before
    allowed = cli("eval", "record", "--file", str(path), "--allow-unknown-run", "--json")
    assert allowed.exit_code == 0, allowed.output
    assert "unregistered-run" in json.loads(allowed.stdout)["flags"]


def test_run_register_without_an_id_makes_a_unique_one_and_prints_it(cli, kit_root):
    ids = []
    for _ in range(3):
        result = cli("run", "register", "--initiative-id", "i1", "--builder-model", "m")
        assert result.exit_code == 0, result.output
        run_id = result.stdout.strip()
        assert re.fullmatch(r"run-\d{8}T\d{12}Z-[0-9a-f]{8}", run_id), run_id
        assert f"registered run {run_id}" in result.stderr
        ids.append(run_id)
    assert len(set(ids)) == 3 and ids == sorted(ids)  # unique and time-ordered
    runs = json.loads(cli("ledger", "show", "runs", "--json").stdout)
    assert [r["run_id"] for r in runs] == ids
    assert cli("eval", "log", ids[0], "i1", *SHORT).exit_code == 0
    as_json = cli("run", "register", "--initiative-id", "i1", "--builder-model", "m", "--json")
    assert json.loads(as_json.stdout)["run_id"].startswith("run-")


def git(cwd: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "PATH": "/usr/bin:/bin",
        "HOME": str(cwd),
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    ).stdout


def test_a_run_id_two_branches_registered_is_reported_after_the_merge(cli, kit_root):
    """The reproduction: two branches each register run-z; each passes verify alone;
    after a clean merge verify reports the second registration with both records
    and the documented way out, and metrics says which verdict it left out."""
    git(kit_root, "init", "-q", "-b", "main")
    git(kit_root, "add", "-A")
    git(kit_root, "commit", "-q", "-m", "kit")
    git(kit_root, "checkout", "-q", "-b", "a")
    assert register(cli, "run-z", "checkout", "claude-sonnet-4").exit_code == 0
    assert cli("eval", "log", "run-z", "checkout", *SHORT).exit_code == 0
    assert cli("ledger", "verify").exit_code == 0
    git(kit_root, "add", "-A")
    git(kit_root, "commit", "-q", "-m", "a")
    git(kit_root, "checkout", "-q", "main")
    git(kit_root, "checkout", "-q", "-b", "b")
    assert register(cli, "run-z", "search", "gpt-5").exit_code == 0
    assert (
        cli("eval", "log", "run-z", "search", *SHORT[:3], "claude-opus", *SHORT[4:]).exit_code == 0
    )
    assert cli("ledger", "verify").exit_code == 0
    git(kit_root, "add", "-A")
    git(kit_root, "commit", "-q", "-m", "b")
    git(kit_root, "merge", "-q", "--no-edit", "a")
    runs = json.loads(cli("ledger", "show", "runs", "--json").stdout)
    assert [r["run_id"] for r in runs] == ["run-z", "run-z"]
    result = cli("ledger", "verify", "--json")
    assert result.exit_code == 1
    problems = [p for r in json.loads(result.stdout)["ledgers"] for p in r["problems"]]
    [duplicate] = [p for p in problems if "registered twice" in p["problem"]]
    for run in runs:
        assert run["record_id"] in duplicate["problem"]
    assert "pmos run register' without --run-id" in duplicate["problem"]
    assert "git rm" in duplicate["problem"] and duplicate["file"]
    human = cli("ledger", "verify")
    assert human.exit_code == 1 and "registered twice" in human.output
