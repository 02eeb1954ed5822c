"""Where each ledger kind lives on disk, resolved and checked before any use.

Ledger paths are resolved, not trusted: :meth:`Store.path` refuses a
configured path that leaves the kit root, passes through a symlink, is a hard
link, or is the same file as another kind's ledger. That is what keeps a
verdict from being written into the acceptances ledger by a crafted path.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

from pmos.errors import SinkRefused
from pmos.paths import resolve_inside
from pmos.store.registry import LEDGER_KINDS, kind_of


class Store:
    """The ledgers of one kit root: ``ledgers`` maps each kind to its configured path."""

    __slots__ = ("ledgers", "root")

    def __init__(self, root: Path, ledgers: Mapping[str, str]) -> None:
        self.root = root
        self.ledgers = {k.name: ledgers.get(k.name, k.default_path) for k in LEDGER_KINDS.values()}

    def __repr__(self) -> str:
        return f"Store(root={self.root!r})"

    def path(self, kind: str) -> Path:
        """The configured ledger file of ``kind``, after every sink check."""
        kind_of(kind)
        candidate = self._resolve_inside(kind, self.ledgers[kind])
        for other in LEDGER_KINDS:
            if other == kind:
                continue
            other_path = self._resolve_inside(other, self.ledgers[other])
            if other_path == candidate or _same_file(other_path, candidate):
                raise SinkRefused(
                    f"the {kind} ledger is configured as the same file as the {other} ledger "
                    f"({candidate}); each kind needs its own file"
                )
        try:
            st = candidate.lstat()
        except FileNotFoundError:
            if not candidate.parent.is_dir():
                raise SinkRefused(
                    f"{candidate.parent} does not exist; create the kit with 'pmos init'"
                ) from None
            return candidate
        if not stat.S_ISREG(st.st_mode):
            raise SinkRefused(f"{candidate} is not a regular file")
        if st.st_nlink > 1:
            raise SinkRefused(
                f"{candidate} has {st.st_nlink} hard links; a ledger must be reachable "
                "by one name only"
            )
        return candidate

    def check_target(self, kind: str, target: str | Path) -> Path:
        """Accept ``target`` only if it is the very file configured for ``kind``."""
        ledger = self.path(kind)
        given = Path(target)
        if not given.is_absolute():
            given = Path.cwd() / given
        if os.path.realpath(given) != str(ledger) or (
            given.exists() and not _same_file(given, ledger)
        ):
            raise SinkRefused(
                f"refusing to write a {kind} record to {target}: the {kind} ledger of this "
                f"kit is {ledger}"
            )
        if given.is_symlink():
            raise SinkRefused(f"refusing to write through the symlink {target}")
        return ledger

    def _resolve_inside(self, kind: str, configured: str) -> Path:
        return resolve_inside(self.root, configured, what=f"the {kind} ledger", for_writing=True)


def _same_file(a: Path, b: Path) -> bool:
    try:
        sa, sb = a.stat(), b.stat()
    except FileNotFoundError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)
