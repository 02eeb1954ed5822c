"""The import contracts in pyproject.toml hold, and they catch what they are for.

import-linter reads them (``lint-imports``, also run by .ci/run); these tests
run it on the source tree as it is, then on a copy with one violation added,
so a contract that has stopped catching anything fails here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(src: Path, config: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(config), "--no-cache"],
        cwd=config.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_source_tree_keeps_every_contract():
    done = _lint(ROOT / "src", ROOT / "pyproject.toml")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


#: One violation each: (files to add or replace, relative to src/pmos; the contract it breaks).
VIOLATIONS = {
    "store-imports-gate": ({"store/bad.py": "from pmos.gate import writers\n"}, "Layers"),
    "relative-import-upwards": ({"store/bad.py": "from ..gate import writers\n"}, "Layers"),
    "function-level-import-upwards": (
        {"kit/bad.py": "def f():\n    from pmos.calibration import metrics\n"},
        "Layers",
    ),
    "module-outside-every-layer": ({"newthing.py": "X = 1\n"}, "Layers"),
    "assess-imports-gate": ({"assess/bad.py": "import pmos.gate.rules\n"}, "Assessment"),
    "board-imports-tasks": ({"board/bad.py": "import pmos.tasks.scoring\n"}, "board"),
    "cycle-inside-a-package": (
        {
            "gate/cycle_a.py": "from . import cycle_b\n",
            "gate/cycle_b.py": "def f():\n    from pmos.gate import cycle_a\n",
        },
        "No import cycle",
    ),
}


@pytest.mark.parametrize("case", sorted(VIOLATIONS))
def test_a_violation_breaks_a_contract(case: str, tmp_path: Path):
    files, contract = VIOLATIONS[case]
    shutil.copytree(ROOT / "src" / "pmos", tmp_path / "src" / "pmos")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    for name, text in files.items():
        (tmp_path / "src" / "pmos" / name).write_text(text, encoding="utf-8")
    done = _lint(tmp_path / "src", tmp_path / "pyproject.toml")
    assert done.returncode == 1, done.stdout[-3000:]
    broken = [line for line in done.stdout.splitlines() if line.endswith("BROKEN")]
    assert any(contract in line for line in broken), done.stdout[-3000:]
