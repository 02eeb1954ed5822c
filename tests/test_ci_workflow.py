"""Issue 24.8: the CI job `pmos init --ci` writes runs as written.

A product repository with a bare ``origin`` and a pull-request branch; the
workflow file is parsed as YAML and its steps run as the CI system would run
them: ``actions/checkout`` with ``fetch-depth: 0`` is a full clone checked out
at the branch, ``actions/setup-python`` a fresh Python first on ``PATH``, and
every ``run:`` step (GitLab: every ``script:`` line) runs in bash with the
expressions of the file filled in the way GitHub fills them. pmos is installed
by the workflow's own install step, from this checkout (``PMOS_PIP_SPEC``).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest
import yaml

from conftest import ledger_bytes

REPO = Path(__file__).resolve().parents[1]
SRC = str(REPO / "src")
GATE_LINE = 'pmos gate --base "origin/${{ github.base_ref }}" --summary "$GITHUB_STEP_SUMMARY"'
GITLAB_GATE_LINE = (
    'pmos gate --base "origin/$CI_MERGE_REQUEST_TARGET_BRANCH_NAME" --summary pmos-gate.md'
)
RUBRIC = "planning/evals/agent-run-eval-rubric.md"


def base_env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PMOS_ROOT", "CDPATH")}
    env.update(
        GIT_AUTHOR_NAME="dev", GIT_AUTHOR_EMAIL="dev@example.com",
        GIT_COMMITTER_NAME="dev", GIT_COMMITTER_EMAIL="dev@example.com",
        GIT_CONFIG_GLOBAL=str(tmp / "gitconfig"), GIT_CONFIG_NOSYSTEM="1",
    )  # fmt: skip
    (tmp / "gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
    return env


def dev_env(tmp: Path) -> dict[str, str]:
    """A developer's shell: this checkout's pmos on PATH."""
    bin_dir = tmp / "dev-bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "pmos"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m pmos "$@"\n')
    shim.chmod(0o755)
    env = base_env(tmp)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (SRC, env.get("PYTHONPATH")) if p)
    return env


def sh(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", command],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def ok(command: str, cwd: Path, env: dict[str, str]) -> str:
    result = sh(command, cwd, env)
    assert result.returncode == 0, f"{command}\n{result.stdout}\n{result.stderr}"
    return result.stdout


# ---------------------------------------------------------------- the product


def product(tmp: Path, system: str) -> tuple[Path, Path, dict[str, str]]:
    """A product with the kit and its CI job on main, pushed to a bare origin."""
    env = dev_env(tmp)
    origin, dev = tmp / "origin.git", tmp / "dev"
    ok(f"git init -q --bare {origin}", tmp, env)
    ok(f"git clone -q {origin} {dev}", tmp, env)
    (dev / "shop.py").write_text("def price(cents):\n    return cents / 100\n")
    ok(f"pmos init pmos --ci {system}", dev, env)
    ok(
        "git add -A && git commit -q -m 'Add pmos and its merge gate' && git push -q origin main",
        dev,
        env,
    )
    return origin, dev, env


def pull_request(dev: Path, env: dict[str, str], branch: str, *, passing: bool) -> None:
    """A branch whose run is judged PASS and labelled pass by the PM, or judged FAIL."""
    run = f"run-{branch}"
    (dev / "contract.yaml").write_text(
        "done_criteria:\n  - id: c1\n    text: price() is exact.\n    test_method: by review\n"
    )
    # A pass cites its evidence (a verified pass without any is refused).
    grade, verdict = ("pass:contract.yaml", "PASS") if passing else ("fail", "FAIL")
    commands = [
        f"git checkout -q -b {branch} main",
        f"pmos run register --run-id {run} --initiative-id checkout "
        "--builder-model claude-sonnet-4 --contract contract.yaml",
        f"pmos eval log {run} checkout 0.9 {verdict} {RUBRIC} gpt-5 "
        f"--criterion c1={grade} --standards pass",
    ]
    if passing:
        commands.append(f"pmos accept {run} --label pass --by pm@example.com --note 'Exact now.'")
    commands.append(f"git add -A && git commit -q -m 'Run {run}' && git push -q origin {branch}")
    for command in commands:
        ok(command, dev, env)
    ok("git checkout -q main", dev, env)


def checkout(tmp: Path, origin: Path, branch: str, env: dict[str, str]) -> Path:
    """actions/checkout with fetch-depth: 0 (and GitLab's GIT_DEPTH 0): the whole
    history, every remote branch, the pull request's head checked out."""
    workspace = tmp / f"ci-{branch}"
    ok(f"git clone -q --no-checkout {origin} {workspace}", tmp, env)
    ok(f"git checkout -q --detach origin/{branch}", workspace, env)
    return workspace


class CiPython(NamedTuple):
    """actions/setup-python (python-version 3.11), then the workflow's install step."""

    bin: Path
    #: The install step as it ran (the same in every workflow pmos writes).
    install: str


@pytest.fixture(scope="module")
def ci_python(tmp_path_factory: pytest.TempPathFactory) -> CiPython:
    """A fresh Python first on PATH, with pmos installed by the install step of a
    workflow `pmos init --ci github` wrote, from this checkout: once per worker, as
    installing pmos and its dependencies takes most of a minute."""
    tmp = tmp_path_factory.mktemp("ci-python")
    folder = tmp / "python"
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True, capture_output=True)
    _, dev, _ = product(tmp, "github")
    workflow = yaml.safe_load((dev / ".github/workflows/pmos-gate.yml").read_text())
    install = github_steps(workflow)[1][2]
    assert install["name"] == "Install pmos"
    env = {**ci_env(tmp, folder / "bin"), "PMOS_PIP_SPEC": str(REPO)}
    ok(filled(install["run"], env), dev, env)
    return CiPython(folder / "bin", install["run"])


def ci_env(tmp: Path, python_bin: Path) -> dict[str, str]:
    env = base_env(tmp)
    env["PATH"] = f"{python_bin}{os.pathsep}{env['PATH']}"
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)
    return env


# ---------------------------------------------------------------- GitHub Actions


def github_steps(workflow: dict) -> tuple[dict, list[dict]]:
    """The job and its steps, with the workflow's structure checked on the way."""
    assert set(workflow[True]) == {"pull_request"}  # YAML 1.1 reads the key `on` as True
    assert workflow["permissions"] == {"contents": "read"}
    job = workflow["jobs"]["pmos-gate"]
    assert job["name"] == "pmos gate"  # the name a required status check lists
    return job, job["steps"]


def filled(command: str, env: dict[str, str]) -> str:
    """GitHub's expressions in a run: line, filled in as for a pull request into main."""
    values = {"github.base_ref": "main", "vars.PMOS_PIP_SPEC": env["PMOS_PIP_SPEC"]}
    out = re.sub(r"\$\{\{\s*([^}]+?)\s*\}\}", lambda m: values[m.group(1)], command)
    assert "${{" not in out
    return out


def run_github_setup(tmp: Path, workflow: dict, workspace: Path, python: CiPython) -> dict:
    """Every step before the gate, as GitHub runs them; returns the step environment.
    The install step is the one :func:`ci_python` ran (pmos is installed already)."""
    job, steps = github_steps(workflow)
    checkout_step, python_step, install, _ = steps
    assert checkout_step["uses"] == "actions/checkout@v4"
    assert checkout_step["with"] == {"fetch-depth": 0}
    assert python_step["uses"] == "actions/setup-python@v5"
    assert python_step["with"] == {"python-version": "3.11"}
    env = ci_env(tmp, python.bin)
    env.update(GITHUB_ACTIONS="true", CI="true", GITHUB_BASE_REF="main")
    env["GITHUB_STEP_SUMMARY"] = str(tmp / "step-summary.md")
    assert job["env"] == {"PMOS_PIP_SPEC": "${{ vars.PMOS_PIP_SPEC }}"}
    env["PMOS_PIP_SPEC"] = str(REPO)  # the repository variable: where pmos comes from
    assert install["run"] == python.install
    return env


@pytest.mark.slow
def test_the_github_workflow_installs_pmos_and_reaches_the_gate(tmp_path, ci_python):
    """Every step of the workflow, run in a product repository on a pull-request
    branch: the checkout has the base branch's history, the install step puts pmos
    on PATH, and the gate step is the documented command (run by
    test_workflow_gate_step_runs)."""
    origin, dev, env = product(tmp_path, "github")
    pull_request(dev, env, "feature", passing=True)
    workflow = yaml.safe_load((dev / ".github/workflows/pmos-gate.yml").read_text())
    workspace = checkout(tmp_path, origin, "feature", env)
    step_env = run_github_setup(tmp_path, workflow, workspace, ci_python)
    installed = ok("command -v pmos && pmos --version", workspace, step_env).split()
    assert installed[0] == str(ci_python.bin / "pmos") and installed[-1] == pmos_version()
    # What the gate step needs is there: the base revision and the kit at it.
    base = ok("git rev-parse origin/main", workspace, step_env).strip()
    assert ok("git merge-base HEAD origin/main", workspace, step_env).strip() == base
    ok(f"git cat-file -e {base}:pmos/pmos.yaml", workspace, step_env)
    ok("pmos root", workspace, step_env)
    gate = github_steps(workflow)[1][-1]
    assert gate["name"] == "Decide whether the change may merge"
    assert gate["run"].strip() == GATE_LINE


def test_the_install_step_says_what_to_set_when_pmos_has_no_source(tmp_path, ci_python):
    _, dev, _ = product(tmp_path, "github")
    workflow = yaml.safe_load((dev / ".github/workflows/pmos-gate.yml").read_text())
    install = github_steps(workflow)[1][2]
    step_env = {**ci_env(tmp_path, ci_python.bin), "PMOS_PIP_SPEC": ""}
    result = sh(filled(install["run"], step_env), dev, step_env)
    assert result.returncode == 2
    assert "::error::set the repository variable PMOS_PIP_SPEC" in result.stdout


# ---------------------------------------------------------------- GitLab CI


@pytest.mark.slow
def test_the_gitlab_job_installs_pmos_and_reaches_the_gate(tmp_path, ci_python):
    origin, dev, env = product(tmp_path, "gitlab")
    snippet = yaml.safe_load((dev / ".gitlab/pmos-gate.gitlab-ci.yml").read_text())
    job = snippet["pmos-gate"]
    assert job["image"] == "python:3.11"
    assert job["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'}]
    assert job["variables"] == {"GIT_DEPTH": "0"}
    assert job["artifacts"] == {
        "when": "always",
        "expose_as": "pmos gate",
        "paths": ["pmos-gate.md"],
    }
    pull_request(dev, env, "feature", passing=True)
    workspace = checkout(tmp_path, origin, "feature", env)
    step_env = ci_env(tmp_path, ci_python.bin)
    step_env.update(
        GITLAB_CI="true", CI="true", CI_PIPELINE_SOURCE="merge_request_event",
        CI_MERGE_REQUEST_TARGET_BRANCH_NAME="main", PMOS_PIP_SPEC=str(REPO),
    )  # fmt: skip
    *setup, gate = job["script"]
    for line in setup:
        ok(line, workspace, step_env)
    assert ok("pmos --version", workspace, step_env).split()[-1] == pmos_version()
    assert ok("git rev-parse origin/main", workspace, step_env).strip()
    assert gate == GITLAB_GATE_LINE
    text = (dev / ".gitlab/pmos-gate.gitlab-ci.yml").read_text(encoding="utf-8")
    assert "#   include:\n#     - local: .gitlab/pmos-gate.gitlab-ci.yml\n" in text


# ---------------------------------------------------------------- the gate step itself


@pytest.mark.slow
def test_workflow_gate_step_runs(tmp_path, ci_python):
    """The gate step of the written workflow, run in CI's checkout of a pull request:
    a change whose run is judged PASS and labelled pass by the PM may merge (exit 0,
    the report in the job summary); one whose run is judged FAIL may not (exit 1)."""
    origin, dev, env = product(tmp_path, "github")
    pull_request(dev, env, "good", passing=True)
    pull_request(dev, env, "bad", passing=False)
    workflow = yaml.safe_load((dev / ".github/workflows/pmos-gate.yml").read_text())
    gate = github_steps(workflow)[1][-1]["run"]
    for branch, expected in (("good", 0), ("bad", 1)):
        workspace = checkout(tmp_path, origin, branch, env)
        step_env = run_github_setup(tmp_path, workflow, workspace, ci_python)
        summary = Path(step_env["GITHUB_STEP_SUMMARY"])
        summary.unlink(missing_ok=True)
        result = sh(filled(gate, step_env), workspace, step_env)
        assert result.returncode == expected, result.stdout + result.stderr
        assert f"run-{branch}" in summary.read_text(encoding="utf-8")


# ---------------------------------------------------------------- pmos init --ci


def pmos_version() -> str:
    import pmos

    return pmos.__version__


def test_init_ci_refuses_an_existing_file_and_writes_nothing(cli, tmp_path):
    env = dev_env(tmp_path)
    repo = tmp_path / "repo"
    ok(f"git init -q {repo}", tmp_path, env)
    workflow = repo / ".github/workflows/pmos-gate.yml"
    workflow.parent.mkdir(parents=True)
    workflow.write_text("name: ours\n")
    result = cli("init", str(repo / "pmos"), "--ci", "github")
    assert result.exit_code == 2 and "exists; pmos init never overwrites" in result.stderr
    assert workflow.read_text() == "name: ours\n"
    assert not (repo / "pmos").exists()  # refused before anything was written
    gitlab = cli("init", str(repo / "pmos"), "--ci", "gitlab", "--json")
    assert gitlab.exit_code == 0, gitlab.output
    written = json.loads(gitlab.stdout)["ci"]
    assert written == str(repo.resolve() / ".gitlab/pmos-gate.gitlab-ci.yml")
    again = cli("init", str(repo / "pmos"), "--ci", "gitlab")
    assert again.exit_code == 2 and "exists" in again.stderr


def test_init_ci_needs_a_git_repository(cli, tmp_path):
    result = cli("init", str(tmp_path / "plain" / "pmos"), "--ci", "github")
    assert result.exit_code == 2 and "is not in a git repository" in result.stderr
    assert not (tmp_path / "plain").exists()
    bad = cli("init", str(tmp_path / "pmos"), "--ci", "jenkins")
    assert bad.exit_code == 2


def test_a_kit_pmos_does_not_find_by_itself_is_named_in_the_job(cli, tmp_path, kit_root):
    env = dev_env(tmp_path)
    repo = tmp_path / "repo"
    ok(f"git init -q {repo}", tmp_path, env)
    before = ledger_bytes(kit_root)
    assert cli("init", str(repo / "tools" / "kit"), "--ci", "github").exit_code == 0
    job = yaml.safe_load((repo / ".github/workflows/pmos-gate.yml").read_text())["jobs"]
    assert job["pmos-gate"]["env"]["PMOS_ROOT"] == "tools/kit"
    assert cli("init", str(repo / "tools" / "kit"), "--ci", "gitlab").exit_code == 0
    snippet = yaml.safe_load((repo / ".gitlab/pmos-gate.gitlab-ci.yml").read_text())
    assert snippet["pmos-gate"]["variables"]["PMOS_ROOT"] == "tools/kit"
    assert ledger_bytes(kit_root) == before


def test_the_how_to_shows_the_workflow_init_writes(cli, tmp_path):
    """docs/how-to/gate-merges-in-ci.md shows the job as pmos writes it."""
    env = dev_env(tmp_path)
    repo = tmp_path / "repo"
    ok(f"git init -q {repo}", tmp_path, env)
    assert cli("init", str(repo / "pmos"), "--ci", "github").exit_code == 0
    written = (repo / ".github/workflows/pmos-gate.yml").read_text(encoding="utf-8")
    body = "".join(line for line in written.splitlines(True) if not line.startswith("#"))
    page = (REPO / "docs/how-to/gate-merges-in-ci.md").read_text(encoding="utf-8")
    shown = re.findall(r"(?ms)^```yaml\n(.*?)^```", page)
    assert body in shown
