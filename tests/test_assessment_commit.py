"""Issue 24.7: an assessment binds to a commit, and a verdict cannot pass what it failed.

Real git repositories (default settings), real ``pmos assess`` running a
``test`` expectation tied to a contract criterion, real ``pmos eval log``."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from conftest import ledger_bytes
from pmos.gate import rules

RUBRIC = "planning/evals/agent-run-eval-rubric.md"
CONTRACT = {
    "done_criteria": [
        {
            "id": "c1",
            "text": "The build leaves done.txt.",
            "test_method": {"type": "test", "command": "test -f done.txt"},
        }
    ]
}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    folder = tmp_path / "product"
    folder.mkdir()
    git(folder, "init", "-q", "-b", "main")
    git(folder, "config", "user.email", "dev@example.com")
    git(folder, "config", "user.name", "dev")
    (folder / "README.md").write_text("product\n")
    git(folder, "add", "README.md")
    git(folder, "commit", "-q", "-m", "start")
    return folder


def register(cli, tmp_path: Path, repo: Path, *, head: bool = True, run: str = "r1") -> None:
    contract = tmp_path / "contract.yaml"
    contract.write_text(yaml.safe_dump(CONTRACT))
    args = ["run", "register", "--run-id", run, "--initiative-id", "i1"]
    args += ["--builder-model", "claude-sonnet-4", "--contract", str(contract)]
    if head:
        args += ["--repo", str(repo), "--head", "HEAD"]
    result = cli(*args)
    assert result.exit_code == 0, result.output


def assess(cli, repo: Path, run: str = "r1"):
    result = cli("assess", "--run-id", run, "--cwd", str(repo), "--json")
    assert result.exit_code in (0, 1), result.output
    return result, json.loads(result.stdout)


def verdict(cli, grade: str, verdict: str = "PASS", run: str = "r1"):
    # A pass cites the assessment's check of c1 as its evidence (a pass without
    # evidence is unverified, and refused as such).
    evidence = ":check:c1" if grade == "pass" else ""
    return cli(
        "eval", "log", run, "i1", "0.9", verdict, RUBRIC, "gpt-5",
        "--criterion", f"c1={grade}{evidence}", "--standards", "pass",
    )  # fmt: skip


def test_an_assessment_records_the_commit_and_a_clean_tree(cli, tmp_path, repo):
    register(cli, tmp_path, repo)
    result, out = assess(cli, repo)
    assert result.exit_code == 1
    assert out["commit"] == git(repo, "rev-parse", "HEAD")
    assert out["dirty"] is False and out["dirty_paths"] is None
    shown = cli("assess", "history", "r1")
    assert f"tree: {out['commit']} clean" in shown.stdout


def test_a_dirty_tree_is_recorded_shown_and_warned_about(cli, tmp_path, repo):
    register(cli, tmp_path, repo)
    (repo / "done.txt").write_text("planted\n")  # untracked: not what the commit holds
    (repo / "README.md").write_text("changed\n")
    result, out = assess(cli, repo)
    assert result.exit_code == 0  # the check passed, on a tree that is not the commit
    assert out["dirty"] is True
    assert sorted(out["dirty_paths"]) == [" M README.md", "?? done.txt"]
    assert "the work tree is dirty (2 path(s) differ" in result.stderr
    shown = cli("assess", "history", "r1")
    assert "DIRTY (2 path(s) differ; the assessment is not of the commit)" in shown.stdout


def test_a_folder_outside_git_records_no_commit(cli, tmp_path):
    register(cli, tmp_path, tmp_path, head=False)
    plain = tmp_path / "plain"
    plain.mkdir()
    result, out = assess(cli, plain)
    assert out["commit"] is None and out["dirty"] is None
    assert "records no commit" in result.stderr


def test_a_pass_over_a_failed_check_is_refused_naming_both_records(cli, tmp_path, repo, kit_root):
    """The reproduction: the assessment of the run's head failed c1's check; a verdict
    grading c1 pass is refused (exit 2, nothing written), naming the verdict and the
    assessment; the honest verdict (c1 fail) is recorded."""
    register(cli, tmp_path, repo)
    _, failed = assess(cli, repo)
    before = ledger_bytes(kit_root)
    refused = verdict(cli, "pass")
    assert refused.exit_code == 2, refused.output
    assert f"[{rules.ASSESSMENT_CONTRADICTED}] criteria/0/result" in refused.stderr
    assert failed["record_id"] in refused.stderr and "grades criterion 'c1' pass" in refused.stderr
    assert "verdict ev-" in refused.stderr
    assert ledger_bytes(kit_root) == before
    honest = verdict(cli, "fail", "FAIL")
    assert honest.exit_code == 0, honest.output


def test_a_dirty_pass_does_not_outvote_a_clean_failure(cli, tmp_path, repo):
    register(cli, tmp_path, repo)
    _, clean = assess(cli, repo)
    (repo / "done.txt").write_text("planted\n")
    result, dirty = assess(cli, repo)
    assert result.exit_code == 0 and dirty["dirty"] is True
    refused = verdict(cli, "pass")
    assert refused.exit_code == 2 and clean["record_id"] in refused.stderr


def test_a_failure_seen_only_in_a_dirty_tree_still_counts(cli, tmp_path, repo):
    register(cli, tmp_path, repo)
    (repo / "scratch.txt").write_text("x\n")
    _, dirty = assess(cli, repo)
    assert dirty["dirty"] is True and dirty["passed"] is False
    refused = verdict(cli, "pass")
    assert refused.exit_code == 2 and dirty["record_id"] in refused.stderr
    assert "dirty tree" in refused.stderr


def test_an_assessment_of_another_commit_does_not_bind_the_run(cli, tmp_path, repo):
    """The run registered its head; an assessment of a later commit is of something
    else (and says so), so it neither refuses nor vouches."""
    register(cli, tmp_path, repo)
    (repo / "other.txt").write_text("x\n")
    git(repo, "add", "other.txt")
    git(repo, "commit", "-q", "-m", "later")
    result, out = assess(cli, repo)
    assert out["passed"] is False
    assert "not the run's registered head" in result.stderr
    assert verdict(cli, "pass").exit_code == 0


def test_a_run_without_a_head_answers_to_its_latest_clean_assessment(cli, tmp_path, repo):
    register(cli, tmp_path, repo, head=False)
    assess(cli, repo)
    assert verdict(cli, "pass").exit_code == 2
    (repo / "done.txt").write_text("built\n")
    git(repo, "add", "done.txt")
    git(repo, "commit", "-q", "-m", "build")
    result, passed = assess(cli, repo)
    assert result.exit_code == 0 and passed["dirty"] is False
    recorded = verdict(cli, "pass")
    assert recorded.exit_code == 0, recorded.output


def test_the_draft_takes_its_results_from_the_assessment_the_writer_holds_it_to(
    cli, tmp_path, repo
):
    register(cli, tmp_path, repo)
    assess(cli, repo)
    (repo / "done.txt").write_text("planted\n")
    assess(cli, repo)  # dirty, passing: not the one the verdict answers to
    draft = json.loads(cli("eval", "draft", "--run-id", "r1", "--json").stdout)
    assert [c["result"] for c in draft["criteria"]] == ["fail"]


def test_the_rule_itself_on_records():
    """governing_assessment and check_against_assessments as the merge gate calls them."""
    now = datetime(2026, 6, 1, tzinfo=UTC)

    def assessment(rid, at, *, commit="a" * 40, dirty=False, passed=False, run="r1"):
        check = {"index": 0, "type": "test", "passed": passed, "reason": "exit 1"}
        check["criterion_id"] = "c1"
        return {
            "record_id": rid,
            "recorded_at": at,
            "run_id": run,
            "commit": commit,
            "dirty": dirty,
            "checks": [check],
        }

    graded = {
        "record_id": "ev-1",
        "run_id": "r1",
        "verdict": "PASS",
        "criteria": [{"id": "c1", "result": "pass"}],
    }
    run = {"run_id": "r1", "head": "a" * 40}
    old_fail = assessment("as-1", "2026-05-01T00:00:00Z")
    new_pass = assessment("as-2", "2026-05-02T00:00:00Z", passed=True)
    other_commit = assessment("as-3", "2026-05-03T00:00:00Z", commit="b" * 40)
    other_run = assessment("as-4", "2026-05-03T00:00:00Z", run="r2")
    future = assessment("as-5", (now + timedelta(days=1)).isoformat())

    def check(*found):
        return rules.check_against_assessments(graded, run, list(found), now=now)

    assert [v.rule for v in check(old_fail)] == [rules.ASSESSMENT_CONTRADICTED]
    assert check(old_fail, new_pass) == []  # the latest clean one of the head passed
    assert check(new_pass, other_commit, other_run) == []
    assert check(other_commit) == [] and check(other_run) == []
    assert check(future) == []  # a date after the time of checking is no one's latest
    assert (
        rules.check_against_assessments({**graded, "verdict": "SKIPPED"}, run, [old_fail], now=now)
        == []
    )
    assert (
        rules.check_against_assessments(
            {**graded, "criteria": [{"id": "c1", "result": "fail"}]}, run, [old_fail], now=now
        )
        == []
    )
    assert rules.governing_assessment(None, "r1", [old_fail, other_commit], now=now) == (
        other_commit
    )
