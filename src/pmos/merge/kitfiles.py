"""A kit as committed at a revision: where it is, its trust files, a copy to read.

The merge decision never reads the working tree or the head's policy. It
finds the kit in a revision's tree the way ``pmos root`` finds it on disk (the
deepest folder on the way from the repository's root to the starting folder
that holds ``pmos.yaml``, or ``pmos/pmos.yaml``), and materialises the base's
kit from git objects into a temporary folder, so that every existing reader,
screen and signature check runs under the base's policy unchanged.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from pmos._util.git import Repository, TreeEntry
from pmos.errors import ConfigError
from pmos.gate.known_bad import DEFAULT_DIR as KNOWN_BAD_DEFAULT
from pmos.kit import Config, Kit
from pmos.kit.config import CONFIG_NAME
from pmos.store.registry import LEDGER_KINDS

#: Trust settings of pmos.yaml and their defaults (paths relative to the kit root).
TRUST_SETTINGS = {
    "rubric_dir": "planning/evals",
    "default_rubric": "planning/evals/agent-run-eval-rubric.md",
    "known_bad_dir": KNOWN_BAD_DEFAULT,
    "exemplar_log": "planning/evals/exemplars.yaml",
    "override_dir": "planning/evals/overrides",
}


def join(folder: str, relative: str) -> str:
    """``relative`` (a kit path) under ``folder`` (repository-relative), normalised;
    a path that climbs out of ``folder`` is refused."""
    if posixpath.isabs(relative):
        raise ConfigError(f"the kit path {relative!r} is absolute; kit paths are relative")
    joined = posixpath.normpath(posixpath.join(folder, relative) if folder else relative)
    if joined == "..":
        joined = "../"
    inside = joined == folder or joined.startswith(folder + "/") if folder else True
    if joined.startswith("../") or not inside:
        raise ConfigError(f"the kit path {relative!r} leaves the kit folder {folder or '.'}")
    return "" if joined == "." else joined


def find_kit(repo: Repository, commit: str, start: str) -> str | None:
    """The kit folder (repository-relative, '' for the root) at ``commit``, looked
    for from ``start`` up to the repository's root; None when there is none."""
    parts = [p for p in start.split("/") if p]
    folders = ["/".join(parts[:n]) for n in range(len(parts), -1, -1)]
    candidates: list[tuple[str, str]] = []
    for folder in folders:
        for kit in (folder, join(folder, "pmos") if folder else "pmos"):
            candidates.append((kit, f"{kit}/{CONFIG_NAME}" if kit else CONFIG_NAME))
    present = {e.path for e in repo.tree(commit, [c for _, c in candidates]) if e.kind == "blob"}
    for kit, config in candidates:
        if config in present:
            return kit
    return None


def ledger_folders(config: Config, kit: str) -> dict[str, str]:
    """Each kind's ledger folder as configured, repository-relative."""
    return {
        kind: join(
            kit, config.ledgers.get(kind, LEDGER_KINDS[kind].default_path).removesuffix(".jsonl")
        )
        for kind in LEDGER_KINDS
    }


def trust_paths(config: Config) -> list[str]:
    """The kit paths (files or folders) whose content decides what counts."""
    paths = [CONFIG_NAME]
    signing = config.raw.get("signing") or {}
    if isinstance(signing, dict) and signing.get("allowed_signers"):
        paths.append(str(signing["allowed_signers"]))
    for key, default in TRUST_SETTINGS.items():
        paths.append(str(config.raw.get(key, default)))
    return sorted(set(paths))


def trust_entries(
    repo: Repository, commit: str, kit_dir: str, config: Config
) -> dict[str, TreeEntry]:
    """The trust files of the kit at ``kit_dir`` as committed at ``commit``, under
    ``config``'s trust paths, by repository path (a ledger is never one, wherever
    it is)."""
    trust = [join(kit_dir, p) for p in trust_paths(config)]
    folders = ledger_folders(config, kit_dir).values()
    return {
        e.path: e
        for e in repo.tree(commit, trust)
        if under(e.path, trust) and not under(e.path, folders)
    }


class Materialised(NamedTuple):
    kit: Kit
    folders: dict[str, str]


def write_tree(repo: Repository, entries: Iterable[TreeEntry], strip: str, *targets: Path) -> None:
    """Write ``entries`` (regular files of a revision) below each of ``targets``, each
    at its path less the ``strip`` prefix (read from git once for all of them);
    links and submodules are left out (a kit path through a link is refused by the
    readers anyway)."""
    files = [e for e in entries if e.kind == "blob" and e.mode in ("100644", "100755")]
    contents = repo.blobs(e.sha for e in files)
    cut = len(strip) + 1 if strip else 0
    made: set[str] = set()
    for target in targets:
        for entry in files:
            path = os.path.join(target, entry.path[cut:])
            folder = os.path.dirname(path)
            if folder not in made:
                os.makedirs(folder, exist_ok=True)
                made.add(folder)
            with open(path, "wb") as handle:
                handle.write(contents[entry.sha])


def under(path: str, folders: Iterable[str]) -> bool:
    return any(path == f or path.startswith(f + "/") for f in folders)
