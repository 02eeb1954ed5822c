"""The hardened git runner (pmos._util.git): each property against real git."""

from __future__ import annotations

import ast
import os
import subprocess
from pathlib import Path

import pytest

from pmos._util.git import NO_DRIVERS, Repository
from pmos.assess import jury
from pmos.assess.assessment import tree_warnings
from pmos.assess.worktree import work_tree
from pmos.errors import BadInput, GitError
from pmos.store.packing import branch_problem
from pmos.tasks.evidence import GitSource


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


def _drop_object(repo_path: Path, sha: str) -> None:
    """Delete a loose object, so that only a checked-out copy can still give it."""
    (repo_path / ".git" / "objects" / sha[:2] / sha[2:]).unlink()


def test_a_blob_a_checkout_holds_is_read_from_the_work_tree_when_it_hashes_to_its_id(tmp_path):
    make_repo(tmp_path / "repo", {"a/b.txt": "bee\n"})
    repo = Repository(tmp_path / "repo")
    (entry,) = repo.tree("HEAD", ["a"])
    _drop_object(tmp_path / "repo", entry.sha)
    # git no longer has the object: what comes back was read from the checkout.
    assert repo.blobs([entry.sha], at={entry.sha: "a/b.txt"}) == {entry.sha: b"bee\n"}
    with pytest.raises(GitError, match="is missing"):
        repo.blobs([entry.sha])


def test_a_work_tree_file_that_is_not_the_blob_is_never_taken_for_it(tmp_path):
    make_repo(tmp_path / "repo", {"a/b.txt": "bee\n", "c.txt": "sea\n"})
    repo = Repository(tmp_path / "repo")
    entries = {e.path: e for e in repo.tree("HEAD", ["a", "c.txt"])}
    sha = entries["a/b.txt"].sha
    (tmp_path / "repo" / "a" / "b.txt").write_text("changed after the commit\n")
    assert repo.blobs([sha], at={sha: "a/b.txt"}) == {sha: b"bee\n"}  # git's bytes
    other = entries["c.txt"].sha  # one from the checkout, one from git, in one call
    assert repo.blobs([sha, other], at={sha: "a/b.txt", other: "c.txt"}) == {
        sha: b"bee\n",
        other: b"sea\n",
    }
    # Another file with other bytes, a path outside the top, a folder: git's bytes.
    for path in ("c.txt", "../repo/a/b.txt", "a", "/etc/hostname"):
        assert repo.blobs([sha], at={sha: path}) == {sha: b"bee\n"}, path
    # A link is not followed, even to the very bytes: the object is gone, so git fails.
    (tmp_path / "repo" / "a" / "b.txt").write_text("bee\n")
    (tmp_path / "repo" / "link").symlink_to(tmp_path / "repo" / "a" / "b.txt")
    _drop_object(tmp_path / "repo", sha)
    assert repo.blobs([sha], at={sha: "a/b.txt"}) == {sha: b"bee\n"}
    with pytest.raises(GitError, match="is missing"):
        repo.blobs([sha], at={sha: "link"})


def test_a_fifo_where_a_blob_sits_does_not_block_the_read(tmp_path):
    make_repo(tmp_path / "repo", {"a.txt": "ay\n"})
    repo = Repository(tmp_path / "repo")
    (entry,) = repo.tree("HEAD", ["a.txt"])
    (tmp_path / "repo" / "a.txt").unlink()
    os.mkfifo(tmp_path / "repo" / "a.txt")  # nobody writes to it: a blocking open would hang
    assert repo.blobs([entry.sha], at={entry.sha: "a.txt"}) == {entry.sha: b"ay\n"}


def test_a_sha256_repository_s_blobs_are_recognised_in_the_work_tree(tmp_path):
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "--object-format=sha256", "-b", "main")
    git(path, "config", "user.email", "t@example.com")
    git(path, "config", "user.name", "T")
    (path / "x.txt").write_text("ex\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "x")
    repo = Repository(path)
    (entry,) = repo.tree("HEAD", ["x.txt"])
    assert len(entry.sha) == 64
    _drop_object(path, entry.sha)
    assert repo.blobs([entry.sha], at={entry.sha: "x.txt"}) == {entry.sha: b"ex\n"}


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


# ------------------------------------------------ every caller goes through the runner


def _sibling_behind_a_git_file(tmp_path: Path) -> Path:
    """A folder whose ``.git`` *file* points at a sibling repository holding a
    committed secret: plain git would diff the folder against the sibling's HEAD."""
    make_repo(tmp_path / "other", {"TOPSECRET": "the secret\n"})
    here = tmp_path / "here"
    here.mkdir()
    (here / "work.txt").write_text("mine\n")
    (here / ".git").write_text(f"gitdir: {tmp_path / 'other' / '.git'}\n")
    return here


def test_assess_evidence_never_reads_a_repository_a_git_file_points_at(tmp_path):
    here = _sibling_behind_a_git_file(tmp_path)
    parts = "\n".join(jury.git_evidence(here))
    assert "the secret" not in parts
    assert "refusing the git directory" in parts
    # Plain git does put the sibling's secret in the diff: the test can fail.
    plain = subprocess.run(["git", "-C", str(here), "diff", "HEAD"], capture_output=True)
    assert b"the secret" in plain.stdout


def test_assess_work_tree_of_a_git_file_elsewhere_records_no_commit_and_says_why(tmp_path):
    here = _sibling_behind_a_git_file(tmp_path)
    tree = work_tree(here)
    assert tree.commit is None and tree.dirty is None
    assert tree.why is not None and "refusing the git directory" in tree.why
    assert "refusing the git directory" in tree_warnings(tree, None)[0]


def test_assess_work_tree_in_a_subfolder_is_the_repositorys_state(tmp_path):
    head = make_repo(tmp_path / "repo", {"a/b.txt": "bee\n", "c.txt": "sea\n"})
    assert work_tree(tmp_path / "repo" / "a") == (head, False, 0, (), None)
    (tmp_path / "repo" / "c.txt").write_text("changed\n")
    tree = work_tree(tmp_path / "repo" / "a")
    assert tree.commit == head and tree.dirty and tree.paths == (" M c.txt",)


def test_work_tree_commands_run_no_filter_driver_of_the_repository(tmp_path):
    make_repo(tmp_path / "repo", {".gitattributes": "*.txt filter=pwn\n", "x.txt": "1\n"})
    marker = tmp_path / "filter-ran"
    git(tmp_path / "repo", "config", "filter.pwn.clean", f"touch {marker}; cat")
    git(tmp_path / "repo", "config", "filter.pwn.required", "true")
    (tmp_path / "repo" / "x.txt").write_text("2\n")
    repo = Repository(tmp_path / "repo")
    assert b"x.txt" in repo.run("diff", *NO_DRIVERS, "HEAD", work_tree=True)
    assert b"x.txt" in repo.run("status", "--porcelain", work_tree=True)
    assert not marker.exists()
    subprocess.run(["git", "-C", str(tmp_path / "repo"), "diff", "HEAD"], capture_output=True)
    assert marker.exists()


def test_evidence_reads_the_repository_it_is_given_not_the_callers_git_dir(tmp_path, monkeypatch):
    make_repo(tmp_path / "repo", {"x": "1\n"})
    make_repo(tmp_path / "other", {"y": "2\n"})
    git(tmp_path / "other", "commit", "-q", "--allow-empty", "-m", "the other's secret")
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "other" / ".git"))
    source = GitSource.open(tmp_path / "repo", None)
    subjects = [e.ref["subject"] for e in source.commits().entries]
    assert subjects == ["files"]


def test_evidence_refuses_a_git_file_pointing_elsewhere(tmp_path):
    here = _sibling_behind_a_git_file(tmp_path)
    with pytest.raises(GitError, match="refusing the git directory"):
        GitSource.open(here, None)
    assert not GitSource.has_range(here, "HEAD~1..HEAD")


def _git_commands(source: str) -> list[int]:
    """Lines of ``source`` that build a command starting with the git program (a
    list literal whose first item is ``"git"``), read from its syntax tree."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.List)
        and node.elts
        and isinstance(node.elts[0], ast.Constant)
        and node.elts[0].value == "git"
    ]


def test_no_module_but_the_runner_builds_a_git_command():
    """One runner: every other module reaches git through pmos._util.git."""
    src = Path(__file__).resolve().parent.parent / "src" / "pmos"
    runner = src / "_util" / "git.py"
    assert _git_commands(runner.read_text(encoding="utf-8"))  # the rule sees the runner's
    others = {
        path.relative_to(src).as_posix(): _git_commands(path.read_text(encoding="utf-8"))
        for path in src.rglob("*.py")
        if path != runner
    }
    assert {name: lines for name, lines in others.items() if lines} == {}
    assert _git_commands('subprocess.run(["git", "-C", repo, "log"])') == [1]


def test_packing_in_a_worktree_elsewhere_needs_force_and_says_why(tmp_path):
    """The pack guard cannot read a refused repository's branch, so it does not
    assume the default one: packing there needs --force, with the reason."""
    make_repo(tmp_path / "main", {"x": "1\n"})
    assert branch_problem(tmp_path / "main", "main") is None
    assert "'main'" in (branch_problem(tmp_path / "main", "trunk") or "")
    git(tmp_path / "main", "worktree", "add", "-q", str(tmp_path / "wt"), "-b", "main2")
    problem = branch_problem(tmp_path / "wt", "main")
    assert problem is not None and "refusing the git directory" in problem
    (tmp_path / "plain").mkdir()
    assert branch_problem(tmp_path / "plain", "main") is None
