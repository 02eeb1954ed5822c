"""The type checker passes on the library, and it catches what it is for.

.ci/run runs ``.venv/bin/mypy`` with no arguments: what it checks, and how
strictly, comes from ``[tool.mypy]`` in pyproject.toml. These tests run that
same command on the source tree as it is, then on a copy with deliberate type
errors added, so a configuration that has stopped checking (a ``files`` that
misses the package, strictness turned off) fails here instead of passing CI
silently.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MYPY = Path(sys.executable).with_name("mypy")


def _mypy(root: Path) -> subprocess.CompletedProcess[str]:
    """``mypy`` as .ci/run calls it, from ``root`` (its pyproject.toml configures it)."""
    return subprocess.run(
        [str(MYPY), "--cache-dir", str(root / ".mypy_cache")],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_ci_runs_the_type_checker_without_arguments():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    commands = [line.split("#", 1)[0].split() for line in ci]
    assert [".venv/bin/mypy"] in commands


def test_the_library_type_checks_strictly(tmp_path: Path):
    shutil.copytree(ROOT / "src" / "pmos", tmp_path / "src" / "pmos")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    clean = _mypy(tmp_path)
    assert clean.returncode == 0, clean.stdout[-4000:] + clean.stderr[-2000:]
    assert "Success: no issues found" in clean.stdout

    # One error plain mypy reports, and one only --strict reports, in two packages.
    bad = {
        "store/bad_types.py": "def count() -> int:\n    return 'three'\n",
        "cli/bad_untyped.py": "def untyped(value):\n    return value\n",
    }
    for name, text in bad.items():
        (tmp_path / "src" / "pmos" / name).write_text(text, encoding="utf-8")
    broken = _mypy(tmp_path)
    assert broken.returncode == 1, broken.stdout[-4000:] + broken.stderr[-2000:]
    assert "src/pmos/store/bad_types.py:2: error:" in broken.stdout
    assert "[return-value]" in broken.stdout
    assert "src/pmos/cli/bad_untyped.py:1: error:" in broken.stdout
    assert "[no-untyped-def]" in broken.stdout
