"""The documentation cannot rot: generated pages match the code, the tutorial runs,
and the quick start is the command CI runs."""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

import pmos

REPO = Path(__file__).resolve().parents[1]
SRC = str(Path(pmos.__file__).resolve().parents[1])
SKIP_MARK = "<!-- tutorial-test: skip"


def load_generator():
    spec = importlib.util.spec_from_file_location(
        "gen_reference", REPO / "scripts/gen-reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_reference_pages_match_the_code(capsys):
    status = load_generator().main(["--check"])
    assert status == 0, capsys.readouterr().err


def test_the_generator_names_undocumented_keys_and_commands(monkeypatch):
    gen = load_generator()
    real = gen.load_meanings()
    trimmed = {**real, "queue": {**real["queue"], "keys": dict(real["queue"]["keys"])}}
    del trimmed["queue"]["keys"]["now"]
    trimmed["queue"]["keys"]["gone"] = "a key pmos never prints"
    monkeypatch.setattr(gen, "load_meanings", lambda: trimmed)
    # A command with --json that the sample session does not run is named too.
    session = gen.sample_session
    monkeypatch.setattr(
        gen, "sample_session", lambda work: [s for s in session(work) if s[0] != "exemplars"]
    )
    problems: list[str] = []
    gen.json_page(problems)
    assert "json-keys.yaml: 'queue' prints key 'now' with no meaning" in problems
    assert "json-keys.yaml: 'queue' describes 'gone', which it never prints" in problems
    assert any(p.startswith("pmos exemplars takes --json but") for p in problems), problems


def sh_blocks(markdown: str) -> list[str]:
    """The ```sh blocks of a document, in order, less those marked to skip."""
    blocks = []
    for match in re.finditer(r"(?ms)^```sh\n(.*?)^```", markdown):
        before = markdown[: match.start()].rstrip().splitlines()
        if before and before[-1].startswith(SKIP_MARK):
            continue
        blocks.append(match.group(1))
    return blocks


def pmos_env(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "pmos"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m pmos "$@"\n')
    shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("PMOS_ROOT", "CDPATH")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (SRC, env.get("PYTHONPATH")) if p)
    env.update(
        GIT_AUTHOR_NAME="pm", GIT_AUTHOR_EMAIL="pm@example.com",
        GIT_COMMITTER_NAME="pm", GIT_COMMITTER_EMAIL="pm@example.com",
        GIT_CONFIG_GLOBAL=str(tmp_path / "gitconfig"), GIT_CONFIG_NOSYSTEM="1",
    )  # fmt: skip
    return env


class Tutorial(NamedTuple):
    work: Path
    env: dict[str, str]
    result: subprocess.CompletedProcess


@pytest.fixture(scope="module")
def tutorial(tmp_path_factory: pytest.TempPathFactory) -> Tutorial:
    """The tutorial's shell blocks, run once in order, as a reader runs them."""
    tmp_path = tmp_path_factory.mktemp("tutorial")
    text = (REPO / "docs" / "tutorial.md").read_text(encoding="utf-8")
    blocks = sh_blocks(text)
    assert len(blocks) >= 10 and text.count(SKIP_MARK) == 1
    env = pmos_env(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", "\n".join(blocks)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return Tutorial(work, env, result)


@pytest.mark.slow
def test_the_tutorial_runs_as_written_and_ends_with_a_gated_product(tutorial):
    result, env = tutorial.result, tutorial.env
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    shop = tutorial.work / "shop"
    # The product's CI runs the merge gate on every pull request, with the history.
    workflow = (shop / ".github/workflows/pmos-gate.yml").read_text(encoding="utf-8")
    assert 'pmos gate --base "origin/${{ github.base_ref }}"' in workflow
    assert "fetch-depth: 0" in workflow and "pip install" in workflow
    git = ["git", "-C", str(shop)]
    branch = subprocess.run([*git, "branch", "--show-current"], env=env, capture_output=True)
    assert branch.stdout.decode().strip() == "decimal-prices"
    status = subprocess.run([*git, "status", "--porcelain"], env=env, capture_output=True)
    assert status.stdout == b"", "the tutorial leaves everything committed"
    shown = subprocess.run([*git, "show", "main:.github/workflows/pmos-gate.yml"], env=env)
    assert shown.returncode == 0, "the gate's job is on the branch changes merge into"


@pytest.mark.slow
def test_the_tutorial_ends_with_a_branch_the_gate_lets_merge(tutorial):
    """The tutorial's branch may merge; a new run without a verdict closes the gate."""
    assert tutorial.result.returncode == 0, tutorial.result.stderr[-3000:]
    shop, env = tutorial.work / "shop", tutorial.env

    def sh(command: str) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "-c", command], cwd=shop, env=env, capture_output=True)

    gate = sh("pmos gate --base main")
    assert gate.returncode == 0, gate.stdout + gate.stderr
    register = "pmos/scripts/pmos-log.sh run --run-id run-2 --initiative-id x --builder-model m"
    assert sh(f"{register} && git add pmos && git commit -q -m run-2").returncode == 0
    assert sh("pmos gate --base main").returncode == 1


def quick_start() -> list[str]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    [block] = re.findall(r"(?ms)^```sh\n(.*?)^```", section)
    return block.strip().splitlines()


def test_the_quick_start_is_two_lines_and_ci_runs_the_same_test_command():
    demo, tests = quick_start()
    assert demo.startswith("python3 -m venv .venv && ") and "scripts/demo.sh" in demo
    assert tests.startswith("python3 -m venv .venv && ") and "pytest" in tests
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert tests in ci.splitlines()
    assert "ruff check ." in ci and "ruff format --check ." in ci
    assert "python3-venv" in ci


def test_readme_documents_every_form_of_the_kit_script():
    usage = subprocess.run(
        ["bash", str(REPO / "scripts/pmos-log.sh"), "--help"], capture_output=True, text=True
    ).stdout
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for form in ("eval", "run", "accept"):
        assert f"pmos/scripts/pmos-log.sh {form} " in readme, form
        assert f"pmos-log.sh {form} " in usage, form
