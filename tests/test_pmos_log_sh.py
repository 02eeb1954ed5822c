"""scripts/pmos-log.sh as a product repository calls it: real bash processes.

The script must find its own kit however it is reached (a relative path with
CDPATH exported, a symlink, a chain of symlinks), must never let a vendored
``pmos/`` folder stand in for the installed package, and must say how to
install pmos when it is missing instead of failing inside Python.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import ledgerfiles
import pmos
from conftest import ledger_bytes
from pmos.kit import init_kit

SRC = str(Path(pmos.__file__).resolve().parents[1])
RUN = ("run", "--run-id", "r1", "--initiative-id", "i1", "--builder-model", "claude-sonnet-4")


def path_without_pmos() -> str:
    """$PATH minus every folder that holds a pmos executable."""
    keep = [d for d in os.environ["PATH"].split(os.pathsep) if not (Path(d) / "pmos").exists()]
    return os.pathsep.join(keep)


def shell_env(**extra: str) -> dict[str, str]:
    """A product shell: no PMOS_ROOT, no pmos on PATH, this checkout's pmos importable."""
    env = {k: v for k, v in os.environ.items() if k not in ("PMOS_ROOT", "PMOS_BIN", "CDPATH")}
    env.update(PATH=path_without_pmos(), PYTHON=sys.executable)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (SRC, env.get("PYTHONPATH")) if p)
    env.update(extra)
    return env


def bash(script: str | Path, *args: str, cwd: Path, env: dict[str, str]):
    return subprocess.run(
        ["bash", str(script), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def product(tmp_path: Path) -> Path:
    """A product repository with the kit vendored as pmos/ (a folder named like the package)."""
    repo = tmp_path / "product"
    init_kit(repo / "pmos")
    return repo


def registered(kit: Path) -> list[str]:
    return [r["run_id"] for r in ledgerfiles.stored(kit, "runs")]


def test_help_shows_the_three_forms(product):
    result = bash("pmos/scripts/pmos-log.sh", "--help", cwd=product, env=shell_env())
    assert result.returncode == 0
    for form in ("eval RUN_ID INITIATIVE_ID SCORE", "SKIPPED REASON", "run --run-id", "accept"):
        assert form in result.stdout
    bare = bash("pmos/scripts/pmos-log.sh", cwd=product, env=shell_env())
    assert bare.returncode == 2 and "usage:" in bare.stdout


def test_an_unknown_form_is_a_usage_error(product):
    result = bash("pmos/scripts/pmos-log.sh", "label", "r1", cwd=product, env=shell_env())
    assert result.returncode == 2 and "unknown form 'label'" in result.stderr


def test_a_vendored_pmos_folder_never_shadows_the_package(product):
    # No pmos on PATH, and the working directory holds a pmos/ folder (a namespace
    # package to Python): the script runs the installed package, not the folder.
    result = bash("pmos/scripts/pmos-log.sh", *RUN, cwd=product, env=shell_env())
    assert result.returncode == 0, result.stderr
    assert registered(product / "pmos") == ["r1"]


def test_without_pmos_installed_it_says_how_to_install_and_writes_nothing(product, tmp_path):
    # A Python that cannot import pmos: no site-packages, no PYTHONPATH.
    bare_python = tmp_path / "python-without-pmos"
    bare_python.write_text(f'#!/bin/sh\nexec {sys.executable} -S -E "$@"\n')
    bare_python.chmod(0o755)
    before = ledger_bytes(product / "pmos")
    result = bash(
        "pmos/scripts/pmos-log.sh", *RUN, cwd=product, env=shell_env(PYTHON=str(bare_python))
    )
    assert result.returncode == 2
    assert "pmos command is not installed" in result.stderr and "pip install" in result.stderr
    assert "Traceback" not in result.stderr and "No module named" not in result.stderr
    assert ledger_bytes(product / "pmos") == before


def test_an_exported_cdpath_does_not_change_the_root(product, tmp_path):
    decoy = tmp_path / "decoy"
    (decoy / "pmos" / "scripts").mkdir(parents=True)
    env = shell_env(CDPATH=f"{decoy}:.")
    result = bash("pmos/scripts/pmos-log.sh", *RUN, cwd=product, env=env)
    assert result.returncode == 0, result.stderr
    assert registered(product / "pmos") == ["r1"]


def test_called_through_symlinks_it_finds_its_own_kit(product, tmp_path):
    bin_dir = product / "bin"
    bin_dir.mkdir()
    (bin_dir / "pmos-log").symlink_to("../pmos/scripts/pmos-log.sh")  # relative
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "log").symlink_to(bin_dir / "pmos-log")  # absolute, to a relative link
    for n, link in enumerate((bin_dir / "pmos-log", elsewhere / "log")):
        args = ("run", "--run-id", f"r{n}", "--initiative-id", "i", "--builder-model", "m")
        result = bash(link, *args, cwd=elsewhere, env=shell_env(CDPATH="."))
        assert result.returncode == 0, result.stderr
    assert registered(product / "pmos") == ["r0", "r1"]
    assert not (bin_dir.parent / "state").exists() and not (tmp_path / "state").exists()
