"""What an assessment ran on: the commit of ``--cwd`` and whether its work tree differs.

:func:`work_tree` is what binds an assessment to a commit (issue 24.7): the
commit ``HEAD`` of ``--cwd`` names and whether the work tree differs from it
(tracked changes, staged or not, and untracked files that are not ignored). A
dirty tree is not what the commit holds, so an assessment of one is recorded as
such and never stands for the commit (:func:`pmos.gate.rules.check_against_assessments`).

The assessed repository is untrusted; git runs on it only through
:class:`pmos._util.git.Repository` (no hook, fsmonitor, filter or external diff
of its configuration runs, and a ``.git`` file or worktree pointing elsewhere is
refused: the assessment then records no commit and says why).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from pmos._util.git import Repository
from pmos.errors import GitError

#: How many changed paths an assessment record lists (it says how many there were).
SHOWN_PATHS = 20


class WorkTree(NamedTuple):
    """What an assessment ran on. ``commit`` is None outside a git work tree or
    before the first commit; ``dirty`` is None when git could not say (outside
    a git work tree, git failing), else whether any path differs from
    ``commit``; ``changed`` counts those paths, ``paths`` shows the first
    :data:`SHOWN_PATHS` of them, each as git's two status letters and the path."""

    commit: str | None
    dirty: bool | None
    changed: int = 0
    paths: tuple[str, ...] = ()
    #: Why git could not say (``dirty`` None); not part of the record.
    why: str | None = None

    def fields(self) -> dict[str, object]:
        """The assessment record's fields for it (see the assessment schema)."""
        out: dict[str, object] = {"commit": self.commit, "dirty": self.dirty}
        if self.dirty:
            out["dirty_paths"] = list(self.paths)
            out["dirty_count"] = self.changed
        return out


def work_tree(cwd: Path) -> WorkTree:
    """``HEAD`` of the repository ``cwd`` is in and whether its whole work tree
    differs from it (not only beneath ``cwd``: a check may read any of it)."""
    try:
        repo = Repository(cwd)
    except GitError as exc:
        return WorkTree(None, None, why=str(exc))
    try:
        commit: str | None = repo.commit("HEAD")
    except GitError:
        commit = None  # no commit yet
    try:
        status = repo.run(
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--ignore-submodules=dirty",
            work_tree=True,
        )
    except GitError as exc:
        return WorkTree(commit, None, why=str(exc))
    paths = _status_paths(status)
    return WorkTree(commit, bool(paths), len(paths), tuple(paths[:SHOWN_PATHS]))


def _status_paths(output: bytes) -> list[str]:
    """The paths of ``git status --porcelain=v1 -z``, each as ``XY path``; a
    rename's or copy's second entry (its source) is folded into it."""
    entries = output.split(b"\0")
    out: list[str] = []
    i = 0
    while i < len(entries):
        entry = entries[i]
        i += 1
        if len(entry) < 4:
            continue
        code, path = entry[:2].decode("ascii", "replace"), entry[3:]
        if code[0] in "RC":
            i += 1  # the source path follows
        out.append(f"{code} {path.decode('utf-8', 'replace')}")
    return out
