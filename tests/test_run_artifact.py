"""`pmos run register --repo --base --head` and `pmos evidence` reading them (issue 11.7)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import REGISTER_R, ledger_bytes
from test_evidence import git


@pytest.fixture(scope="module")
def product(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository of 5 commits on main; built once, only read."""
    path = tmp_path_factory.mktemp("artifact")
    git(path, "init", "-q", "-b", "main")
    for i in range(5):
        (path / f"f{i}.txt").write_text(f"{i}\n")
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", f"change {i}")
    return path


def register(cli, *extra: str):
    return cli(*REGISTER_R, *extra, "--json")


def test_register_stores_repo_relative_to_the_kit_and_revisions_as_commits(cli, product, kit_root):
    result = register(cli, "--repo", str(product), "--base", "HEAD~3", "--head", "main")
    assert result.exit_code == 0, result.output
    stored = json.loads(result.stdout)
    assert stored["repo"] == Path(os.path.relpath(product, kit_root.resolve())).as_posix()
    assert stored["base"] == git(product, "rev-parse", "HEAD~3").strip()
    assert stored["head"] == git(product, "rev-parse", "HEAD").strip()
    shown = json.loads(cli("ledger", "show", "runs", "--json").stdout)
    assert shown[0]["head"] == stored["head"]


def test_register_takes_a_remote_repository_as_given(cli):
    url = "https://git.example.com/team/product.git"
    result = register(cli, "--repo", url, "--base", "v1.2", "--head", "feature/x")
    assert result.exit_code == 0, result.output
    stored = json.loads(result.stdout)
    assert (stored["repo"], stored["base"], stored["head"]) == (url, "v1.2", "feature/x")


def test_repository_fields_are_optional(cli):
    stored = json.loads(register(cli).stdout)
    assert not {"repo", "base", "head"} & set(stored)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--base", "main"), "--base and --head need --repo"),
        (("--repo", "{product}", "--base", "main"), "--base needs --head"),
        (("--repo", "{product}", "--head", "nope"), "--head 'nope' is not a commit"),
        (("--repo", "{product}", "--head", "-x"), "is not a revision"),
        (("--repo", "{missing}"), "is not a folder"),
        (("--repo", "{plain}"), "is not a git repository"),
    ],
)
def test_bad_repository_fields_write_nothing(cli, product, tmp_path, kit_root, args, message):
    plain = tmp_path / "plain"
    plain.mkdir()
    values = {"product": str(product), "missing": str(tmp_path / "missing"), "plain": str(plain)}
    before = ledger_bytes(kit_root)
    result = cli(*REGISTER_R, *(a.format(**values) for a in args))
    assert result.exit_code == 2
    assert message in result.stderr
    assert ledger_bytes(kit_root) == before


def test_evidence_reads_the_registered_range_by_default(cli, product):
    assert (
        register(cli, "--repo", str(product), "--base", "HEAD~2", "--head", "HEAD").exit_code == 0
    )
    data = json.loads(cli("evidence", "--run-id", "r", "--json").stdout)
    assert data["sources"]["repo_from"] == "run"
    assert data["sources"]["repo"] == str(product.resolve())
    commits = next(g for g in data["groups"] if g["group"] == "commits")
    assert commits["total"] == 2
    assert "change 4" in commits["entries"][0]["excerpt"]  # newest first
    # An explicit --range still wins.
    wider = json.loads(
        cli(
            "evidence", "--run-id", "r", "--repo", str(product), "--range", "HEAD~4..HEAD", "--json"
        ).stdout
    )
    assert wider["sources"]["repo_from"] == "option"
    assert next(g for g in wider["groups"] if g["group"] == "commits")["total"] == 4


def test_evidence_reads_the_current_repository_when_none_is_named(cli, product, monkeypatch):
    assert register(cli).exit_code == 0
    monkeypatch.chdir(product)
    data = json.loads(cli("evidence", "--run-id", "r", "--json").stdout)
    assert data["sources"]["repo_from"] == "cwd"
    assert data["sources"]["repo"] == str(product.resolve())
    commits = next(g for g in data["groups"] if g["group"] == "commits")
    assert commits["total"] == 5


def test_evidence_uses_a_remote_runs_revisions_when_this_clone_has_them(cli, product, monkeypatch):
    base = git(product, "rev-parse", "HEAD~1").strip()
    url = "https://git.example.com/team/product.git"
    assert register(cli, "--repo", url, "--base", base, "--head", "HEAD").exit_code == 0
    monkeypatch.chdir(product)
    data = json.loads(cli("evidence", "--run-id", "r", "--json").stdout)
    assert (data["sources"]["repo_from"], data["sources"]["range"]) == ("run", f"{base}..HEAD")
