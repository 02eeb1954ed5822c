"""What a policy approval states: every trust file of the kit as it is now.

``pmos policy approve`` lists the SHA-256 of each file under the kit's trust
paths (:func:`pmos.merge.kitfiles.trust_paths`) in the working tree, under
both the current pmos.yaml's paths and the base revision's (when the base is
known), and each trust file of the base that is gone now as removed (null).
The gate accepts a change when an approval it adds states, for every trust
file the change touched, that file's content at head.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

from pmos._util.git import Repository
from pmos.errors import GitError
from pmos.kit import Kit
from pmos.kit.config import CONFIG_NAME
from pmos.merge.decision import DEFAULT_REMOTE_HEAD, default_base
from pmos.merge.kitfiles import join, trust_paths, under, write_tree


def _base_trust(kit: Kit, base: str | None) -> tuple[set[str], set[str]]:
    """(trust paths, trust files) of the kit at the base revision, kit-relative;
    empty when there is no repository, no base or no kit at base."""
    try:
        repo = Repository(kit.root)
    except GitError:
        if base is not None:
            raise
        return set(), set()
    if base is None and not repo.ref_exists(DEFAULT_REMOTE_HEAD):
        return set(), set()
    commit = repo.commit(base if base is not None else default_base(repo, "HEAD"), what="--base")
    where = repo.relative(kit.root)
    config = join(where, CONFIG_NAME) if where else CONFIG_NAME
    entries = [e for e in repo.tree(commit, [config]) if e.kind == "blob"]
    if not entries:
        return set(), set()
    with tempfile.TemporaryDirectory(prefix="pmos-policy-") as folder:
        write_tree(repo, entries, where, Path(folder))
        paths = set(trust_paths(Kit.open(Path(folder)).config))
    full = [join(where, p) for p in paths]
    cut = len(where) + 1 if where else 0
    files = {e.path[cut:] for e in repo.tree(commit, full) if under(e.path, full)}
    return paths, files


def approval_files(kit: Kit, base: str | None) -> list[dict[str, Any]]:
    """``[{"path", "sha256"}]`` for every trust file, sorted by path (see the module)."""
    base_paths, base_files = _base_trust(kit, base)
    found: dict[str, str | None] = {}
    for relative in sorted(set(trust_paths(kit.config)) | base_paths):
        path = kit.root / relative
        if path.is_file():
            found[relative] = _sha256(path)
        elif path.is_dir():
            for folder, dirs, names in os.walk(path):
                dirs[:] = sorted(d for d in dirs if d != "__pycache__")
                for name in names:
                    full = Path(folder) / name
                    if full.is_file() and not full.is_symlink():
                        found[full.relative_to(kit.root).as_posix()] = _sha256(full)
    for gone in base_files - set(found):
        found[gone] = None
    return [{"path": p, "sha256": d} for p, d in sorted(found.items())]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
