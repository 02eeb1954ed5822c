"""A cache of what screening found in each pack, kept outside version control.

Screening a pack (:mod:`pmos.store.screening`) can cost far more than reading
it: a label's signature is verified, a verdict's rubric is looked up. A pack
never changes, so its outcome can be remembered, but not in the repository:
nothing committed vouches for a record. The cache lives in
``$PMOS_CACHE_DIR``, else ``$XDG_CACHE_HOME/pmos``, else ``~/.cache/pmos``,
and is not used at all when that folder lies inside the kit (a committed or
force-added file must never act as a cache).

An entry is keyed by the SHA-256 of the pack's bytes, computed by hashing the
bytes the reader read (never taken from the pack's name), and by the kit; it
holds the basis the screening stood on (the rules' version and the digest of
every kit file they read) and the failing lines. It is used only while
:meth:`Screen.holds` says that basis still describes the kit. Entries are
written atomically; an entry that cannot be read or parsed is a miss.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

import orjson

from pmos.store.screening import Screen

FORMAT = 1
Failures = dict[int, tuple[str | None, str, str]]


def cache_folder(kit_root: Path) -> Path | None:
    """The screening cache of the kit at ``kit_root``, or None when there is none to use."""
    base = os.environ.get("PMOS_CACHE_DIR")
    if not base:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = os.path.join(xdg, "pmos") if xdg else os.path.expanduser("~/.cache/pmos")
    if not os.path.isabs(base):
        return None
    real_base = os.path.realpath(base)
    real_root = os.path.realpath(kit_root)
    if _inside(real_base, _work_tree(real_root)):
        return None  # inside the kit's work tree: a file there could be committed
    kit_key = hashlib.sha256(real_root.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return Path(real_base) / "screen" / kit_key


def _work_tree(real_root: str) -> str:
    """The top of the git work tree holding the kit (the kit root when there is none)."""
    here = real_root
    while True:
        if os.path.exists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return real_root
        here = parent


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(os.path.join(folder, ""))


def load(kit_root: Path, sha: str, screen: Screen) -> tuple[set[int], Failures] | None:
    """``(lines checked, failing lines)`` of the pack whose bytes hash to ``sha``,
    if an entry for it holds for ``screen``; None (a miss) otherwise."""
    folder = cache_folder(kit_root)
    if folder is None:
        return None
    try:
        data = orjson.loads((folder / f"{sha}.json").read_bytes())
        if data["format"] != FORMAT or data["pack"] != sha:
            return None
        basis = data["basis"]
        if not (isinstance(basis, dict) and screen.holds(basis)):
            return None
        checked = {int(n) for n in data["checked"]}
        failed: Failures = {}
        for number, record_id, rule, problem in data["failed"]:
            failed[int(number)] = (record_id, str(rule), str(problem))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return checked, failed


def save(kit_root: Path, sha: str, screen: Screen, failed: Failures, checked: list[int]) -> None:
    """Remember a pack's screening (best effort: a cache that cannot be written is none)."""
    folder = cache_folder(kit_root)
    if folder is None:
        return
    data = orjson.dumps(
        {
            "format": FORMAT,
            "pack": sha,
            "basis": screen.basis(),
            "checked": sorted(checked),
            "failed": [[n, *failure] for n, failure in sorted(failed.items())],
        }
    )
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
        temp = folder / f".tmp-{os.getpid()}-{os.urandom(6).hex()}"
        try:
            with open(temp, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, folder / f"{sha}.json")
        finally:
            with contextlib.suppress(FileNotFoundError):
                temp.unlink()
