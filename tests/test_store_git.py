"""Ledgers that live in git: branches that each record anything merge cleanly, on any host.

A product repository vendors a kit; three branches off one base each record
runs, full and short verdicts, labels, assessments, task scores and follow-ups,
while the PM labels and packs on main. For every pair of histories the paths
changed since their merge base must be disjoint (or identical changes), so no
merge strategy of any host can conflict; then every way of combining them
(merge, rebase, squash, cherry-pick) succeeds with no merge driver and no git
config, and the combined kit verifies and reports the metrics of all records.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import Cli, good_verdict, write_json
from pmos.kit import init_kit

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ENV},
    )
    if check and done.returncode:
        raise AssertionError(f"git {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done


class Product:
    """A product repository with a vendored kit at pmos/."""

    def __init__(self, path: Path, cli: Cli) -> None:
        self.path = path
        self.kit = path / "pmos"
        self.cli = cli
        self.work = path / "app"

    def pmos(self, *args: str, input: str | None = None, ok: bool = True):
        result = self.cli("--root", str(self.kit), *args, input=input)
        if ok:
            assert result.exit_code == 0, (args, result.stdout, result.stderr)
        return result

    def commit(self, message: str) -> None:
        git(self.path, "add", "-A")
        git(self.path, "commit", "-q", "-m", message)

    def record_run(self, run: str, gate: str, label: str | None, *, full: bool) -> None:
        """Register a run with a contract, judge it, assess it, score it, follow it up."""
        contract = self.path / f"{run}-contract.json"
        write_json(contract, {"done_criteria": [{"id": "c1", "text": "works", "test_method": "x"}]})
        self.pmos(
            "run", "register", "--run-id", run, "--initiative-id", "init-1",
            "--builder-model", "claude-sonnet-4", "--contract", str(contract),
        )  # fmt: skip
        contract.unlink()
        spec = self.path / "spec.json"
        write_json(spec, {"expectations": [{"type": "script", "command": "true"}]})
        self.pmos("assess", str(spec), "--cwd", str(self.work), "--task-id", f"t-{run}",
                  "--run-id", run)  # fmt: skip
        spec.unlink()
        if full:
            verdict = good_verdict(run_id=run, initiative_id="init-1")
            verdict["criteria"] = [
                {"id": "c1", "result": "pass", "evidence": "app/x.py:1", "verified": True}
            ]
            if gate == "FAIL":
                verdict = _failing(verdict)
            self.pmos("eval", "record", "--file", "-", input=json.dumps(verdict))
        else:
            axis = "pass" if gate == "PASS" else "fail"
            score = "0.9" if gate == "PASS" else "0.8"
            self.pmos(
                "eval", "log", run, "init-1", score, gate,
                "planning/evals/agent-run-eval-rubric.md", "gpt-5",
                "--spec", axis, "--standards", "pass", *_criteria(axis),
            )  # fmt: skip
        if label is not None:
            self.label(run, label)
        collected = json.loads(self.pmos("score", "collect", "--run-id", run, "--json").stdout)
        template = collected["template"]
        for category in template["categories"].values():
            category["aiScore"] = 70
            category["rationale"] = "checked by hand"
        self.pmos("score", "record", "--file", "-", input=json.dumps(template))
        self.pmos("followups", "suggest", "--run-id", run, "--policy", "create")

    def label(self, run: str, label: str) -> None:
        self.pmos("accept", run, "--label", label, "--by", "pm", "--note", "looked at it")


def _criteria(axis: str) -> list[str]:
    """The short form grades the contract's criteria where the CLI supports it."""
    help_text = Cli()("eval", "log", "--help").stdout
    return ["--criterion", f"c1={axis}:app/x.py:1"] if "--criterion" in help_text else []


def _failing(verdict: dict) -> dict:
    verdict["verdict"] = "FAIL"
    verdict["criteria"][0]["result"] = "fail"
    verdict["axes"]["spec"] = {"verdict": "fail", "rationale": "c1 not met"}
    verdict["note"] = "Spec: fail. Standards: pass."
    return verdict


def changed_paths(repo: Path, base: str, tip: str) -> dict[str, str]:
    """Path -> blob (or 'deleted') of every path ``tip`` changed since ``base``."""
    out = {}
    diff = git(repo, "diff", "--no-renames", "--name-status", base, tip).stdout.splitlines()
    for line in diff:
        status, path = line.split("\t", 1)
        blob = "deleted" if status == "D" else git(repo, "rev-parse", f"{tip}:{path}").stdout
        out[path] = blob.strip()
    return out


@pytest.fixture
def product(tmp_path: Path) -> Product:
    repo = tmp_path / "product"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "app").mkdir()
    (repo / "app" / "x.py").write_text("print('hello')\n")
    init_kit(repo / "pmos")
    made = Product(repo, Cli())
    made.commit("base: vendor pmos")
    return made


#: run -> (gate verdict, PM label) per branch; the PM labels some runs on main later.
BRANCHES = {
    "a": [("a1", "PASS", "pass"), ("a2", "FAIL", "fail"), ("a3", "PASS", None)],
    "b": [("b1", "PASS", "fail"), ("b2", "FAIL", None), ("b3", "PASS", "pass")],
    "c": [("c1", "FAIL", "fail"), ("c2", "PASS", "pass"), ("c3", "FAIL", "pass")],
}
ON_MAIN = [("m1", "PASS", "pass")]
LATER_LABELS = {"a3": "pass", "b2": "fail"}


@pytest.mark.slow
def test_branches_that_record_merge_without_conflict_everywhere(product: Product):
    repo = product.path
    git(repo, "tag", "base")
    for name, runs in BRANCHES.items():
        git(repo, "checkout", "-q", "-b", name, "base")
        for i, (run, gate, label) in enumerate(runs):
            product.record_run(run, gate, label, full=i % 2 == 0)
        product.commit(f"branch {name}: records")
    # Meanwhile on main: a run, the PM's labels, and a pack of everything there.
    git(repo, "checkout", "-q", "main")
    for run, gate, label in ON_MAIN:
        product.record_run(run, gate, label, full=True)
    product.pmos("ledger", "pack")
    product.commit("main: a run, labels, pack")

    tips = ["a", "b", "c", "main"]
    for i, left in enumerate(tips):
        for right in tips[i + 1 :]:
            base = git(repo, "merge-base", left, right).stdout.strip()
            ours, theirs = changed_paths(repo, base, left), changed_paths(repo, base, right)
            shared = {p for p in ours.keys() & theirs.keys() if ours[p] != theirs[p]}
            assert not shared, f"{left} and {right} change the same paths differently: {shared}"

    assert not (repo / ".gitattributes").exists()
    # Merge every branch into main, one after the other.
    for name in ("a", "b"):
        git(repo, "merge", "-q", "--no-edit", name)
    # c arrives as a squash merge; a copy of it is also rebased and cherry-picked.
    git(repo, "merge", "-q", "--squash", "c")
    git(repo, "commit", "-q", "-m", "squash c")
    git(repo, "checkout", "-q", "-b", "c-rebased", "c")
    git(repo, "rebase", "-q", "main")
    git(repo, "checkout", "-q", "-b", "picked", "base")
    git(repo, "cherry-pick", "c")
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-edit", "picked")  # the same records again, from a pick
    for run, label in LATER_LABELS.items():
        product.label(run, label)
    product.commit("main: labels after the merges")
    assert git(repo, "status", "--porcelain").stdout == ""

    assert product.pmos("ledger", "verify").exit_code == 0
    metrics = json.loads(product.pmos("metrics", "--json").stdout)
    # Every run once, by construction: gate verdict against the PM's (latest) label.
    expected = {"tp": 0, "fn": 0, "fp": 0, "tn": 0}
    labels = {run: label for runs in BRANCHES.values() for run, _, label in runs if label}
    labels |= {run: label for run, _, label in ON_MAIN} | LATER_LABELS
    gates = {run: gate for runs in BRANCHES.values() for run, gate, _ in runs}
    gates |= {run: gate for run, gate, _ in ON_MAIN}
    for run, label in labels.items():
        gate_pass = gates[run] == "PASS"
        key = ("tp" if gate_pass else "fn") if label == "pass" else ("fp" if gate_pass else "tn")
        expected[key] += 1
    assert metrics["confusion"] == expected
    assert metrics["pairs"] == len(labels) == 10
    runs = json.loads(product.pmos("ledger", "show", "runs", "--json").stdout)
    assert sorted(r["run_id"] for r in runs) == sorted(gates)  # each record exactly once
    # Packing the merged kit folds the copies (two packs and a cherry-picked copy) into one.
    product.pmos("ledger", "pack")
    again = json.loads(product.pmos("metrics", "--json").stdout)
    assert again["confusion"] == expected
    assert product.pmos("ledger", "verify", "--since", "base").exit_code == 0


def test_latest_verdict_is_decided_by_time_not_by_merge_order(product: Product):
    """Two branches judge one run; whichever merges last, the later verdict counts."""
    repo = product.path
    product.record_run("r", "PASS", None, full=True)
    product.commit("run r")
    git(repo, "tag", "start")
    git(repo, "checkout", "-q", "-b", "early", "start")
    failing = _failing(good_verdict(run_id="r", initiative_id="init-1"))
    failing["criteria"] = [
        {"id": "c1", "result": "fail", "evidence": "app/x.py:1", "verified": True}
    ]
    product.pmos("eval", "record", "--file", "-", input=json.dumps(failing))
    product.commit("early verdict: FAIL")
    git(repo, "checkout", "-q", "-b", "late", "start")
    verdict = good_verdict(run_id="r", initiative_id="init-1")
    verdict["criteria"] = [
        {"id": "c1", "result": "pass", "evidence": "app/x.py:1", "verified": True}
    ]
    product.pmos("eval", "record", "--file", "-", input=json.dumps(verdict))
    product.commit("late verdict: PASS")
    answers = []
    for first, second in (("early", "late"), ("late", "early")):
        git(repo, "checkout", "-q", "-B", f"m-{first}", "start")
        git(repo, "merge", "-q", "--no-edit", first)
        git(repo, "merge", "-q", "--no-edit", second)
        queue = json.loads(product.pmos("queue", "--json", ok=False).stdout)
        answers.append([e["verdict"] for e in queue["acceptance_debt"]])
    assert answers == [["PASS"], ["PASS"]]
