"""A newcomer on a fresh machine: README's quick start, then the tutorial, literally.

Nothing of this checkout's environment is lent: the pmos source is copied to
``$HOME/src/pmos`` (where the tutorial's first step looks for it), ``PATH`` holds
only the system's folders, and every step runs as written, its installs
included: the quick start's virtual environment and demo, then every block of
the tutorial in order (its own install block too) until the new product
repository's CI job runs ``pmos gate`` and the gate lets its branch merge. Only
the package index is the machine's (its pip configuration, when it has one), as
a newcomer's would be.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from test_docs import quick_start, sh_blocks

REPO = Path(__file__).resolve().parents[1]
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


def copy_source(dest: Path) -> None:
    """The files a clone of the repository has (tracked or new, never ignored)."""
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "-co", "--exclude-standard"],
        capture_output=True,
        check=True,
    ).stdout.decode()
    for rel in filter(None, listed.split("\0")):
        source = REPO / rel
        if not source.is_file():
            continue  # deleted in the work tree
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)


def fresh_env(home: Path) -> dict[str, str]:
    env = {
        "HOME": str(home),
        "PATH": SYSTEM_PATH,
        "LANG": "C.UTF-8",
        "GIT_AUTHOR_NAME": "newcomer",
        "GIT_AUTHOR_EMAIL": "newcomer@example.com",
        "GIT_COMMITTER_NAME": "newcomer",
        "GIT_COMMITTER_EMAIL": "newcomer@example.com",
        "GIT_CONFIG_NOSYSTEM": "1",
        "TMPDIR": os.environ.get("TMPDIR", "/tmp"),
    }
    # The machine's package index, as a newcomer's pip would find it.
    for name, value in os.environ.items():
        if name.startswith("PIP_"):
            env[name] = value
    user_config = Path(os.path.expanduser("~/.config/pip/pip.conf"))
    if user_config.is_file():
        env["PIP_CONFIG_FILE"] = str(user_config)
    return env


def bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )


@pytest.mark.slow
def test_a_newcomer_follows_readme_and_the_tutorial_to_a_gated_product(tmp_path):
    home = tmp_path / "home"
    source = home / "src" / "pmos"
    copy_source(source)
    env = fresh_env(home)
    assert shutil.which("pmos", path=SYSTEM_PATH) is None, "pmos is not installed yet"

    # README's quick start, its first line, from the clone.
    demo, _tests = quick_start()
    done = bash(demo, source, env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "demo finished" in done.stdout
    board = (source / "board.html").read_text(encoding="utf-8")
    assert board.startswith("<!DOCTYPE html>") and 'id="gate-sentence"' in board

    # The tutorial, every block (its install step included), in order.
    tutorial = (REPO / "docs" / "tutorial.md").read_text(encoding="utf-8")
    blocks = re.findall(r"(?ms)^```sh\n(.*?)^```", tutorial)
    assert len(blocks) > len(sh_blocks(tutorial)), "the install block runs here too"
    work = home / "work"
    work.mkdir()
    done = bash("\n".join(blocks), work, env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    shop = work / "shop"
    workflow = (shop / ".github/workflows/pmos-gate.yml").read_text(encoding="utf-8")
    assert 'pmos gate --base "origin/${{ github.base_ref }}"' in workflow
    pmos = home / ".venvs" / "pmos" / "bin" / "pmos"
    assert pmos.is_file(), "the tutorial installed pmos where it says"
    gate = bash(f"{pmos} gate --base main", shop, env)
    assert gate.returncode == 0, gate.stdout + gate.stderr
    assert (work / "board.html").is_file()
