"""The policy a sync applies: the kit's pmos.yaml as the merge gate would accept it.

A kit's settings (thresholds, the calibration rule, whether labels must be
signed, where its ledgers live) decide what the team database shows, so they
must come from where the gate takes its policy: the committed tree of the
repository's default branch (:func:`pmos.db.gitread.default_branch`), never
the working tree of whatever branch a sync runs on. A feature branch that
lowers ``kappa_threshold`` or turns signing off changes nothing in the
database until that change is merged. A kit outside git has no branches: its
working tree is its policy.

:func:`policy_kit` is the one place a sync gets its policy; the sync then
verifies, screens and reports the kit under it, and stores those settings.
"""

from __future__ import annotations

from pathlib import Path

from pmos.db.gitread import default_branch, git_bytes, toplevel
from pmos.errors import BadInput, ConfigError
from pmos.kit import CONFIG_NAME, Kit
from pmos.kit.config import parse_config


def policy_kit(kit: Kit) -> tuple[Kit, str]:
    """``kit`` with the configuration of its policy, and where that came from
    (``refs/heads/main:pmos/pmos.yaml``, or ``the working tree`` outside git)."""
    repo = toplevel(kit.root)
    if repo is None:
        return kit, "the working tree (the kit is not in a git repository)"
    ref = default_branch(repo)
    if ref is None:
        raise BadInput(
            f"the repository at {repo} has no default branch with a commit yet, so the kit "
            "has no policy the merge gate would accept: commit pmos.yaml to the default "
            "branch (or set it: git remote set-head origin --auto) before syncing"
        )
    spec = f"{ref}:{_in_repo(kit.root, repo)}"
    committed = git_bytes(repo, "show", spec)
    if committed is None:
        raise BadInput(
            f"the kit's {CONFIG_NAME} is not committed on the default branch ({spec}): "
            "a kit's settings reach the database only from there; merge it first"
        )
    try:
        text = committed.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{spec} is not UTF-8 text: {exc}") from None
    return Kit(kit.root, parse_config(text, spec)), spec


def _in_repo(root: Path, repo: Path) -> str:
    """The path of the kit's pmos.yaml from the repository's top, as git names it."""
    folder = root.resolve().relative_to(repo).as_posix()
    return CONFIG_NAME if folder in ("", ".") else f"{folder}/{CONFIG_NAME}"
