"""git, run on an assessed repository without running anything it configures.

``pmos assess`` reads the repository it assesses twice: the reviewers' evidence
(:func:`pmos.assess.jury.git_evidence`) and the state of the work tree the
assessment ran on (:func:`work_tree`). The repository is untrusted: its config
can name hooks, an fsmonitor, filter drivers and external diffs, each a command
git would run as you. Every call here disables them.

:func:`work_tree` is what binds an assessment to a commit (issue 24.7): the
commit ``HEAD`` of ``--cwd`` names and whether the work tree differs from it
(tracked changes, staged or not, and untracked files that are not ignored). A
dirty tree is not what the commit holds, so an assessment of one is recorded as
such and never stands for the commit (:func:`pmos.gate.rules.check_against_assessments`).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import NamedTuple

#: Settings that keep git from running anything the assessed repository
#: configures: no fsmonitor hook, no hooks, no external diff, no pager, no
#: submodule recursion. Filter drivers are blanked by name
#: (:func:`filter_overrides`); textconv and external diffs are refused on the
#: command line too.
SAFE_CONFIG = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.untrackedCache", "false"),
    ("diff.external", ""),
    ("status.relativePaths", "true"),
    ("submodule.recurse", "false"),
)
#: Passed to git from pmos's environment; GIT_* variables (GIT_DIR,
#: GIT_EXTERNAL_DIFF, GIT_CONFIG_*) never are.
_ENV_NAMES = ("PATH", "HOME", "USER", "LOGNAME", "TMPDIR")
TIMEOUT_S = 60
#: How many changed paths an assessment record lists (it says how many there were).
SHOWN_PATHS = 20


def env(overrides: list[tuple[str, str]]) -> dict[str, str]:
    """git's environment: a few basics, and config overrides passed as
    GIT_CONFIG_KEY_n / GIT_CONFIG_VALUE_n, which take any key (a filter named
    ``a=b`` would break ``-c``) and win over every config file."""
    out = {k: os.environ[k] for k in _ENV_NAMES if k in os.environ}
    out.update(LC_ALL="C", GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0")
    out["GIT_CONFIG_COUNT"] = str(len(overrides))
    for i, (key, value) in enumerate(overrides):
        out[f"GIT_CONFIG_KEY_{i}"] = key
        out[f"GIT_CONFIG_VALUE_{i}"] = value
    return out


def run(
    cwd: Path, args: list[str], overrides: list[tuple[str, str]]
) -> subprocess.CompletedProcess[bytes] | None:
    """``git -C cwd ARGS`` with ``overrides``; None when git could not run in time."""
    try:
        return subprocess.run(
            ["git", "--no-pager", "-C", str(cwd), *args],
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=TIMEOUT_S,
            check=False,
            env=env(overrides),
        )
    except (OSError, subprocess.TimeoutExpired):
        return None


def filter_overrides(cwd: Path) -> list[tuple[str, str]]:
    """Blank every filter driver the repository's config names (clean, smudge,
    process), so none runs when git reads the work tree. Reading config runs
    nothing."""
    listed = run(cwd, ["config", "-z", "--get-regexp", r"^filter\."], [])
    names: set[str] = set()
    for entry in (listed.stdout if listed is not None else b"").split(b"\0"):
        key = entry.split(b"\n", 1)[0].decode("utf-8", "surrogateescape")
        if key.startswith("filter.") and key.count(".") >= 2:
            names.add(key[len("filter.") : key.rindex(".")])
    out: list[tuple[str, str]] = []
    for name in sorted(names):
        out += [(f"filter.{name}.{part}", "") for part in ("clean", "smudge", "process")]
        out.append((f"filter.{name}.required", "false"))
    return out


def overrides(cwd: Path) -> list[tuple[str, str]] | None:
    """Every override for reading the work tree at ``cwd``; None: not a git work tree."""
    safe = list(SAFE_CONFIG)
    inside = run(cwd, ["rev-parse", "--is-inside-work-tree"], safe)
    if inside is None or inside.returncode != 0 or inside.stdout.strip() != b"true":
        return None
    return safe + filter_overrides(cwd)


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
    found = overrides(cwd)
    if found is None:
        return WorkTree(None, None)
    head = run(cwd, ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], found)
    commit = head.stdout.decode().strip() if head is not None and head.returncode == 0 else None
    top = run(cwd, ["rev-parse", "--show-toplevel"], found)
    if top is None or top.returncode != 0:
        return WorkTree(commit, None)
    root = Path(top.stdout.decode("utf-8", "surrogateescape").strip())
    status = run(
        root,
        ["status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignore-submodules=dirty"],
        found,
    )
    if status is None or status.returncode != 0:
        return WorkTree(commit, None)
    paths = _status_paths(status.stdout)
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
