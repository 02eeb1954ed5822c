"""Vendoring the kit into a product repository: what `pmos init` copies, and using it there."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import ledgerfiles
import pmos
from pmos.assets import kit_source
from pmos.gate.exemplars import parse_log
from pmos.kit import KIT_TEMPLATE_PATHS

REPO = kit_source()
SRC = str(Path(pmos.__file__).resolve().parents[1])


def product_env() -> dict[str, str]:
    """The environment of a shell in the product repo: no PMOS_ROOT, this pmos importable."""
    env = {k: v for k, v in os.environ.items() if k != "PMOS_ROOT"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (SRC, env.get("PYTHONPATH")) if p)
    env["PYTHON"] = sys.executable
    return env


def run(args: list[str], cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        args, cwd=cwd, env=product_env(), input=stdin, capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def product(tmp_path: Path) -> Path:
    repo = tmp_path / "product"
    (repo / "src").mkdir(parents=True)
    (repo / "README.md").write_text("# A product\n", encoding="utf-8")
    result = run([sys.executable, "-m", "pmos", "init", "product/pmos"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    return repo


def test_init_copies_everything_the_skills_link(product):
    kit = product / "pmos"
    for rel in (
        "AGENTS.md",
        "CLAUDE.md",
        "skills/SKILL-FORMAT.md",
        "skills/evaluator/SKILL.md",
        "skills/acceptance/SKILL.md",
        "planning/evals/agent-run-eval-rubric.md",
        "planning/evals/calibration-method.md",
        "planning/evals/exemplars.yaml",
        "planning/research/llm-judge-calibration.md",
        "planning/research/injection-defenses.md",
        "schemas/exemplar.schema.json",
        "scripts/pmos-log.sh",
    ):
        assert (kit / rel).is_file(), rel
    shipped = sorted(p.name for p in (REPO / "planning/evals/known-bad").iterdir())
    assert sorted(p.name for p in (kit / "planning/evals/known-bad").iterdir()) == shipped
    assert not (kit / "README.md").exists()


def test_the_kit_gets_the_product_agents_md_and_no_decisions(product):
    """The kit's AGENTS.md speaks to agents in the product; pmos's own (for its
    developers) and DECISIONS.md stay in the pmos repository."""
    kit = product / "pmos"
    shipped = (kit / "AGENTS.md").read_text(encoding="utf-8")
    assert shipped == (REPO / "kit/AGENTS.md").read_text(encoding="utf-8")
    assert shipped != (REPO / "AGENTS.md").read_text(encoding="utf-8")
    assert "## What you must never do" in shipped and "Never record a PM label" in shipped
    assert not (kit / "DECISIONS.md").exists() and not (kit / "kit").exists()
    for doc in kit.rglob("*.md"):
        assert re.search(r"\]\([^)]*DECISIONS\.md", doc.read_text(encoding="utf-8")) is None, doc


def test_the_vendored_exemplar_log_is_valid_and_holds_no_history(product):
    text = (product / "pmos/planning/evals/exemplars.yaml").read_text(encoding="utf-8")
    assert parse_log(text) == []


def test_the_wheel_bundles_every_template_path():
    """`pmos init` from an installed wheel copies from pmos/_kit: each path must be packaged."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    bundled = config["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    for rel in KIT_TEMPLATE_PATHS:
        top = rel.split("/")[0]
        assert top in bundled, f"{rel} is copied by pmos init but not in the wheel"
        assert bundled[top] == f"pmos/_kit/{top}"


@pytest.mark.slow
def test_an_agent_in_the_product_repo_records_a_run_end_to_end(product):
    """From the product root: register, verdict via the kit script, PM label, metrics."""
    kit = product / "pmos"
    contract = product / "contract.yaml"
    contract.write_text(
        "done_criteria:\n"
        "  - id: c1\n    text: The export escapes formulas.\n"
        "    test_method: tests/test_export.py passes\n",
        encoding="utf-8",
    )
    pmos_cmd = [sys.executable, "-m", "pmos"]

    root = run([*pmos_cmd, "root"], cwd=product)
    assert root.returncode == 0, root.stderr
    assert Path(root.stdout.strip()) == kit.resolve()

    registered = run(
        [
            *pmos_cmd,
            "run",
            "register",
            "--run-id",
            "run-7",
            "--initiative-id",
            "exports",
            "--builder-model",
            "claude-sonnet-4-5",
            "--contract",
            "contract.yaml",
        ],
        cwd=product,
    )
    assert registered.returncode == 0, registered.stderr

    logged = run(
        [
            "bash",
            "pmos/scripts/pmos-log.sh",
            "eval",
            "run-7",
            "exports",
            "0.82",
            "PASS-WITH-FINDINGS",
            "planning/evals/agent-run-eval-rubric.md",
            "gpt-5",
            "--criterion",
            "c1=pass:tests/test_export.py::test_csv passed",
            "--standards",
            "pass",
            "--note",
            "Spec: pass. Standards: pass with a should-fix finding.",
        ],
        cwd=product,
    )
    assert logged.returncode == 0, logged.stderr

    accepted = run([*pmos_cmd, "accept", "run-7", "--label", "pass", "--by", "pm-ana"], cwd=product)
    assert accepted.returncode == 0, accepted.stderr

    metrics = run([*pmos_cmd, "metrics", "--json"], cwd=product)
    assert metrics.returncode == 0, metrics.stderr
    data = json.loads(metrics.stdout)
    assert data["pairs"] == 1
    assert data["confusion"] == {"tp": 1, "fn": 0, "fp": 0, "tn": 0}
    assert data["calibrated"] is False

    evals = ledgerfiles.stored(kit, "evals")
    assert [(e["run_id"], e["verdict"], e["form"]) for e in evals] == [
        ("run-7", "PASS-WITH-FINDINGS", "short")
    ]
    verify = run([*pmos_cmd, "ledger", "verify"], cwd=product)
    assert verify.returncode == 0, verify.stdout


def test_the_vendored_documents_pass_skill_check(product):
    result = run([sys.executable, "-m", "pmos", "skill", "check"], cwd=product)
    assert result.returncode == 0, result.stdout
