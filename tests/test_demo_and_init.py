"""What a newcomer runs first: scripts/demo.sh and `pmos init`, as real processes.

The demo's transcript must paste back into a shell and run, the demo must remove
what it created, and init's next steps must be commands that work as printed.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import pmos

REPO = Path(__file__).resolve().parents[1]
SRC = str(Path(pmos.__file__).resolve().parents[1])


def pmos_on_path(tmp_path: Path) -> dict[str, str]:
    """An environment whose `pmos` is this checkout's, and no kit root preset."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "pmos"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m pmos "$@"\n')
    shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("PMOS_ROOT", "CDPATH")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (SRC, env.get("PYTHONPATH")) if p)
    return env


@pytest.mark.slow
def test_demo_cleans_up_and_its_transcript_pastes_back(tmp_path):
    env = pmos_on_path(tmp_path)
    temp = tmp_path / "tmp"
    temp.mkdir()
    env["TMPDIR"] = str(temp)
    demo = subprocess.run(
        ["bash", str(REPO / "scripts" / "demo.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert demo.returncode == 0, demo.stderr
    assert list(temp.iterdir()) == [], "the demo left files behind"
    commands = [line[2:] for line in demo.stdout.splitlines() if line.startswith("$ ")]
    accept = "pmos accept demo-run-1 --label pass --by demo-pm --note 'works as asked'"
    assert any(command.startswith(accept) for command in commands), commands
    # Pasted back into a shell, the transcript runs again from the start.
    replay = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", "\n".join(commands)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert replay.returncode == 0, replay.stderr
    assert "ok" in replay.stdout


def test_init_prints_a_summary_and_three_next_steps_that_work(tmp_path):
    env = pmos_on_path(tmp_path)
    product = tmp_path / "product"
    product.mkdir()

    def sh(command: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["bash", "-c", command], cwd=product, env=env, capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip

    for git in ("git init -q", "git config user.email pm@example.com", "git config user.name pm"):
        assert sh(git).returncode == 0
    result = sh("pmos init pmos")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) <= 15, "init output is a summary, not a file list"
    assert "created" in lines[1] and "schemas/ (" in lines[1]
    steps = [line.strip() for line in lines if line.strip()[:2] in ("1.", "2.", "3.")]
    assert len(steps) == 3
    assert "commit" in steps[0] and "CI" in steps[1] and "verdict" in steps[2]
    commands = [line.strip() for line in lines if line.startswith("       ")]
    commit, gate, first_verdict = commands
    assert sh(commit).returncode == 0
    assert "pmos/state/evals/.pmos-ledger" in sh("git ls-files").stdout
    # The CI gate passes on the empty kit; the first verdict is recorded as printed,
    # with its placeholders filled in.
    assert sh(gate).returncode == 0, sh(gate).stderr
    filled = first_verdict.replace("INITIATIVE_ID", "init-1").replace("BUILDER_MODEL", "m")
    recorded = sh(filled.replace("EVALUATOR_MODEL", "gpt-5"))
    assert recorded.returncode == 0, recorded.stderr
    assert len(list((product / "pmos" / "state" / "evals").glob("*/*/*.json"))) == 1
