"""Read-only git questions the database commands ask (a kit's remote, its folder in
the repository), through pmos's one git runner (:mod:`pmos._util.git`).

Any failure (git missing, not a repository, a git directory elsewhere, an
unknown revision, a timeout) is None here: the callers say what that means.
"""

from __future__ import annotations

from pathlib import Path

from pmos._util.git import Repository
from pmos.errors import GitError

#: Seconds a git command may take before it counts as failed.
GIT_TIMEOUT = 30


def git_bytes(repo: Path, *args: str) -> bytes | None:
    """The output of git ``ARGS`` in ``repo``'s repository, or None when git fails."""
    try:
        return Repository(repo, timeout=GIT_TIMEOUT).run(*args)
    except (GitError, OSError):
        return None


def git_line(repo: Path, *args: str) -> str | None:
    """The output of a git command that prints one line (a path, a name, a URL)."""
    out = git_bytes(repo, *args)
    if out is None:
        return None
    try:
        return out.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None


def toplevel(root: Path) -> Path | None:
    """The top folder of the git repository holding ``root``, or None outside git."""
    top = git_line(root, "rev-parse", "--show-toplevel")
    return Path(top).resolve() if top else None
