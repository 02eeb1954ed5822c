"""What a run built: the repository and the revisions a run record names.

An evaluator judges "the committed diff", so the run record says where it is:
``repo`` (a local repository, stored relative to the kit root so the record
stays true on every clone, or a URL, stored as given), and ``base`` and
``head``, the revisions the run started from and ended at. Revisions of a local
repository are resolved to commit ids when the run is registered: a branch
name moves, the commit it named does not.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from pmos._util.git import Repository
from pmos.errors import BadInput, GitError

GIT_TIMEOUT_S = 30
#: A remote repository: a URL with a scheme, or git's scp-like user@host:path.
_REMOTE = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*://|[^/@:\s]+@[^/:\s]+:)")
_REVISION = re.compile(r"^[^\s\x00-\x1f\x7f-]\S{0,199}$")


def is_remote(repo: str) -> bool:
    return bool(_REMOTE.match(repo))


def _repository(path: Path) -> Repository | None:
    """The repository holding ``path``, read through pmos's one git runner; None when
    there is none (or its git directory lies elsewhere, which the runner refuses)."""
    try:
        return Repository(path, timeout=GIT_TIMEOUT_S)
    except GitError:
        return None


def _commit(repo: Repository, option: str, revision: str) -> str:
    try:
        found = repo.run(
            "rev-parse", "--verify", "--quiet", "--end-of-options", f"{revision}^{{commit}}"
        )
    except GitError:
        raise BadInput(
            f"{option} {revision!r} is not a commit of the repository {repo.top}"
        ) from None
    return found.decode("utf-8", "replace").strip()


def run_artifact(
    kit_root: Path, *, repo: str | None, base: str | None, head: str | None
) -> dict[str, Any]:
    """The ``repo``, ``base`` and ``head`` fields of a new run record (only those given).

    A local ``repo`` must be a git repository; it is stored relative to the kit
    root and its revisions as commit ids. A remote one is stored as given, and
    its revisions must at least look like revisions.
    """
    if repo is None:
        if base is not None or head is not None:
            raise BadInput("--base and --head need --repo: the repository they are revisions of")
        return {}
    if base is not None and head is None:
        raise BadInput("--base needs --head: the revision the run ended at")
    for option, value in (("--base", base), ("--head", head)):
        if value is not None and not _REVISION.match(value):
            raise BadInput(
                f"{option} {value!r} is not a revision (1-200 characters, no spaces, "
                "not starting with -)"
            )
    if is_remote(repo):
        fields: dict[str, Any] = {"repo": repo}
        fields.update({k: v for k, v in (("base", base), ("head", head)) if v is not None})
        return fields
    path = Path(repo).expanduser()
    if not path.is_dir():
        raise BadInput(f"--repo {repo} is not a folder (give a local repository or a URL)")
    repository = _repository(path)
    if repository is None:
        raise BadInput(
            f"--repo {repo} is not a git repository (or its git directory lies elsewhere, "
            "as in a linked worktree: give the repository itself)"
        )
    root = repository.top
    fields = {"repo": Path(os.path.relpath(root, os.path.realpath(kit_root))).as_posix()}
    if base is not None:
        fields["base"] = _commit(repository, "--base", base)
    if head is not None:
        fields["head"] = _commit(repository, "--head", head)
    return fields


def local_repository(kit_root: Path, run: dict[str, Any] | None) -> Path | None:
    """The local repository a run record names, as a path, or None (none, or remote)."""
    stored = (run or {}).get("repo")
    if not isinstance(stored, str) or is_remote(stored):
        return None
    return (Path(kit_root) / stored).resolve()


def current_repository(where: Path | None = None) -> Path | None:
    """The git repository the working directory is in, or None."""
    repository = _repository(where or Path.cwd())
    return None if repository is None else repository.top


def revision_range(run: dict[str, Any] | None) -> str | None:
    """``base..head`` of a run record, just ``head`` without a base, or None."""
    run = run or {}
    head, base = run.get("head"), run.get("base")
    if head is None:
        return None
    return f"{base}..{head}" if base is not None else head
