"""The hardened git runner (pmos._util.git): each property against real git."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pmos._util.git import Repository
from pmos.errors import BadInput, GitError


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def make_repo(path: Path, files: dict[str, str]) -> str:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "t@example.com")
    git(path, "config", "user.name", "T")
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "files")
    return git(path, "rev-parse", "HEAD")


def test_reads_a_revisions_files_from_a_subfolder(tmp_path):
    head = make_repo(tmp_path / "repo", {"a/b.txt": "bee\n", "c.txt": "sea\n"})
    repo = Repository(tmp_path / "repo" / "a")
    assert repo.top == (tmp_path / "repo").resolve()
    assert repo.commit("HEAD") == head
    entries = repo.tree(head, ["a"])
    assert [e.path for e in entries] == ["a/b.txt"]
    assert repo.blobs([entries[0].sha]) == {entries[0].sha: b"bee\n"}
    assert repo.relative(tmp_path / "repo" / "a") == "a"


def test_a_missing_revision_or_blob_is_a_clean_error(tmp_path):
    make_repo(tmp_path / "repo", {"x": "1\n"})
    repo = Repository(tmp_path / "repo")
    with pytest.raises(GitError, match="names no commit"):
        repo.commit("no-such-branch")
    with pytest.raises(GitError, match="is not a git revision"):
        repo.commit("--output=/tmp/x")
    with pytest.raises(GitError, match="is missing"):
        repo.blobs(["0" * 40])
    assert issubclass(GitError, BadInput)  # exit 2 at the command line


def test_a_file_named_like_a_revision_is_not_read_as_one(tmp_path):
    make_repo(tmp_path / "repo", {"origin/main": "not a revision\n"})
    repo = Repository(tmp_path / "repo")
    with pytest.raises(GitError, match="names no commit"):
        repo.commit("origin/main")


def test_a_git_file_pointing_at_a_sibling_repository_is_refused(tmp_path):
    make_repo(tmp_path / "other", {"TOPSECRET": "the secret\n"})
    here = tmp_path / "here"
    here.mkdir()
    (here / ".git").write_text(f"gitdir: {tmp_path / 'other' / '.git'}\n")
    with pytest.raises(GitError, match="refusing the git directory"):
        Repository(here)


def test_a_worktree_elsewhere_is_refused(tmp_path):
    make_repo(tmp_path / "main", {"x": "1\n"})
    git(tmp_path / "main", "worktree", "add", "-q", str(tmp_path / "wt"), "-b", "side")
    with pytest.raises(GitError, match="refusing the git directory"):
        Repository(tmp_path / "wt")


def test_the_callers_git_environment_is_not_used(tmp_path, monkeypatch):
    make_repo(tmp_path / "repo", {"x": "1\n"})
    make_repo(tmp_path / "other", {"y": "2\n"})
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "other" / ".git"))
    repo = Repository(tmp_path / "repo")
    assert [e.path for e in repo.tree(repo.commit("HEAD"))] == ["x"]


def test_a_partial_clone_never_fetches_nor_runs_its_ssh_command(tmp_path):
    """Reading a blob a partial clone lacks would fetch it lazily through the remote,
    running the repository's core.sshCommand; the runner reports it missing instead."""
    origin = tmp_path / "origin"
    make_repo(origin, {"big.txt": "content only the remote has\n"})
    git(origin, "config", "uploadpack.allowFilter", "true")
    clone = tmp_path / "clone"
    done = subprocess.run(
        [
            "git",
            "clone",
            "-q",
            "--no-checkout",
            "--filter=blob:none",
            f"file://{origin}",
            str(clone),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    marker = tmp_path / "ssh-ran"
    git(clone, "remote", "set-url", "origin", "ssh://example.invalid/repo.git")
    git(clone, "config", "core.sshCommand", f"touch {marker}; false")
    repo = Repository(clone)
    entry = repo.tree(repo.commit("origin/main"))[0]
    with pytest.raises(GitError, match="is missing"):
        repo.blobs([entry.sha])
    assert not marker.exists()
    # The same read through plain git does run the command: the test can fail.
    subprocess.run(["git", "-C", str(clone), "cat-file", "-p", entry.sha], capture_output=True)
    assert marker.exists()


def test_repository_hooks_and_fsmonitor_do_not_run(tmp_path):
    make_repo(tmp_path / "repo", {"x": "1\n"})
    marker = tmp_path / "ran"
    git(tmp_path / "repo", "config", "core.fsmonitor", f"touch {marker}; false #")
    repo = Repository(tmp_path / "repo")
    repo.tree(repo.commit("HEAD"))
    repo.run("status", "--porcelain")
    assert not marker.exists()
    subprocess.run(["git", "-C", str(tmp_path / "repo"), "status"], capture_output=True)
    assert marker.exists()


def test_outside_any_repository_is_a_clean_error(tmp_path):
    (tmp_path / "plain").mkdir()
    with pytest.raises(GitError, match="not inside a git work tree"):
        Repository(tmp_path / "plain")
