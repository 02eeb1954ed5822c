"""Where each ledger kind lives on disk, and what a ledger folder may hold.

A ledger is a folder of files that are only ever added or deleted, never
modified, so that two git histories that each record anything never change the
same path (see DECISIONS.md, "Ledgers that live in git")::

    state/evals/.pmos-ledger                    marker: the folder is a ledger (write-once)
    state/evals/20261201T101500123456Z-<d>.json  a loose record: one record line
    state/evals/pack-<sha256 of the file>.jsonl  a pack: a header line, then records

A kit from before this layout has a single hash-chained file beside the folder
(``state/evals.jsonl``); it is read, first, until ``pmos ledger pack`` folds it
into a pack.

Ledger paths are resolved, not trusted: :meth:`Store.folder` refuses a
configured path that leaves the kit root, passes through a symlink, is not a
folder, or overlaps another kind's ledger. That is what keeps a verdict from
being written into the acceptances ledger by a crafted path.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from pmos import atomic
from pmos.errors import LedgerCorrupt, SinkRefused
from pmos.paths import is_below, resolve_inside
from pmos.store.registry import LEDGER_KINDS, kind_of

MARKER = ".pmos-ledger"
LEGACY_SUFFIX = ".jsonl"
LOOSE = re.compile(r"\A([0-9TZ]{1,32})-([0-9a-f]{64})\.json\Z")
PACK = re.compile(r"\Apack-([0-9a-f]{64})\.jsonl\Z")
#: Files a crashed writer may leave behind (see pmos.atomic); ignored by readers,
#: removed by pack.
TEMP_PREFIX = atomic.TEMP_PREFIX


class Sources(NamedTuple):
    """The files that hold one kind's records, as listed at one moment.

    Loose records are kept by name: a folder may hold 100,000 of them, and a
    :class:`Path` each (which pathlib parses and formats) costs ``pmos ledger
    pack`` more than reading the files; :meth:`loose_paths` makes them for
    the readers that want paths.
    """

    folder: Path
    legacy: Path | None
    packs: list[Path]
    loose_names: list[str]

    @property
    def empty(self) -> bool:
        return self.legacy is None and not self.packs and not self.loose_names

    def loose_paths(self) -> list[Path]:
        """The loose record files as paths (made on each call)."""
        return [self.folder / name for name in self.loose_names]

    def loose_files(self) -> list[str]:
        """The loose record files as plain string paths (made on each call)."""
        return plain_paths(self.folder, self.loose_names)


def plain_paths(folder: Path, names: list[str]) -> list[str]:
    """``folder``'s files ``names`` as plain strings, for a caller that opens or
    deletes thousands: no :class:`Path` each (see :class:`Sources`)."""
    prefix = os.path.join(folder, "")
    return [prefix + name for name in names]


def marker_text(kind: str) -> bytes:
    """The marker's content: the same on every branch, so adding it never conflicts."""
    return f'{{"pmos_ledger":1,"kind":"{kind}"}}\n'.encode()


class Store:
    """The ledgers of one kit root: ``ledgers`` maps each kind to its configured path.

    The kit root is resolved once per store, and the kinds' folders are checked
    against each other (no overlap) on the first call that succeeds; every call
    still resolves the folder it returns, so a symlink put in its way since is
    refused. An append asks for its folder several times, and resolving every
    kind each time was most of an append's CPU.
    """

    __slots__ = ("_apart", "_real_root", "ledgers", "root")

    def __init__(self, root: Path, ledgers: Mapping[str, str]) -> None:
        self.root = root
        self.ledgers = {k.name: ledgers.get(k.name, k.default_path) for k in LEDGER_KINDS.values()}
        self._real_root: Path | None = None
        self._apart = False  # every kind's folder was resolved and none overlaps another

    def __repr__(self) -> str:
        return f"Store(root={self.root!r})"

    # ------------------------------------------------------------ paths

    def folder(self, kind: str) -> Path:
        """The folder of ``kind``'s ledger, after every sink check (it may not exist yet)."""
        kind_of(kind)
        mine = self._resolve(kind)
        if not self._apart:
            for other in LEDGER_KINDS:
                if other == kind:
                    continue
                theirs = self._resolve(other)
                if theirs == mine or is_below(mine, theirs) or is_below(theirs, mine):
                    raise SinkRefused(
                        f"the {kind} ledger ({mine}) overlaps the {other} ledger ({theirs}); "
                        "each kind needs its own folder"
                    )
            self._apart = True
        try:
            st = mine.lstat()
        except FileNotFoundError:
            return mine
        if not stat.S_ISDIR(st.st_mode):
            raise SinkRefused(
                f"{mine} is not a folder: the {kind} ledger is a folder of record files "
                "(run 'pmos ledger pack' to convert a kit from the single-file layout)"
            )
        return mine

    def legacy(self, kind: str) -> Path | None:
        """The single-file ledger of a kit from before the folder layout, if it has records."""
        return self._legacy_beside(self._resolve(kind))

    def _legacy_beside(self, folder: Path) -> Path | None:
        path = _legacy_file(folder)
        try:
            st = path.lstat()
        except FileNotFoundError:
            return None
        if not stat.S_ISREG(st.st_mode):
            raise SinkRefused(f"{path} is not a regular file")
        if st.st_nlink > 1:
            raise SinkRefused(
                f"{path} has {st.st_nlink} hard links; a ledger must be reachable by one name only"
            )
        return path if st.st_size else None

    def display(self, kind: str) -> str:
        """The ledger's folder, as configured, for messages."""
        return self.ledgers[kind].removesuffix(LEGACY_SUFFIX)

    def sources(self, kind: str) -> Sources:
        """Every file holding ``kind``'s records now; a stray file is refused."""
        folder = self.folder(kind)
        legacy = self._legacy_beside(folder)
        packs: list[Path] = []
        loose: list[str] = []
        try:
            names = os.listdir(folder)
        except FileNotFoundError:
            if legacy is None and not kind_of(kind).late and self._was_created(kind):
                raise LedgerCorrupt(
                    str(folder),
                    None,
                    f"the {kind} ledger folder is missing; restore it from version control "
                    "(for example 'git checkout -- " + self.display(kind) + "'), or run "
                    "'pmos init' on the kit root to start it empty",
                ) from None
            return Sources(folder, legacy, [], [])
        for name in sorted(names):
            if name.startswith("."):
                continue
            if LOOSE.match(name):
                loose.append(name)
            elif PACK.match(name):
                packs.append(folder / name)
            else:
                raise LedgerCorrupt(
                    str(folder / name),
                    None,
                    "a file pmos did not write sits in the ledger folder (records are "
                    "<stamp>-<digest>.json and pack-<digest>.jsonl); move it elsewhere",
                )
        return Sources(folder, legacy, packs, loose)

    def ensure_folder(self, kind: str) -> Path:
        """The ledger folder, created with its marker when a writer needs it.

        A kit whose folder vanished after records were written is refused, not
        silently restarted: an empty ledger would hide the loss.
        """
        folder = self.folder(kind)
        marker = folder / MARKER
        if marker.is_file():
            return folder
        if not folder.exists():
            if not folder.parent.is_dir():
                raise SinkRefused(
                    f"{folder.parent} does not exist; create the kit with 'pmos init'"
                )
            if self.legacy(kind) is None and not kind_of(kind).late and self._was_created(kind):
                raise LedgerCorrupt(
                    str(folder),
                    None,
                    f"the {kind} ledger folder is missing; restore it from version control, "
                    "or run 'pmos init' on the kit root to start it empty",
                )
            folder.mkdir(exist_ok=True)
        write_marker(folder, kind)
        return folder

    def check_target(self, kind: str, target: str | Path) -> Path:
        """Accept ``target`` only if it names ``kind``'s own ledger: its folder, or the
        single file it had before the folder layout (the name older commands use)."""
        folder = self.folder(kind)
        given = Path(target)
        if not given.is_absolute():
            given = Path.cwd() / given
        if given.is_symlink():
            raise SinkRefused(f"refusing to write through the symlink {target}")
        real = Path(os.path.realpath(given))
        if real not in (folder, _legacy_file(folder)):
            raise SinkRefused(
                f"refusing to write a {kind} record to {target}: the {kind} ledger of this "
                f"kit is {folder}"
            )
        return folder

    # ------------------------------------------------------------ helpers

    def _resolve(self, kind: str) -> Path:
        if self._real_root is None:
            self._real_root = Path(os.path.realpath(self.root))
        configured = self.ledgers[kind].removesuffix(LEGACY_SUFFIX)
        return resolve_inside(
            self.root,
            configured,
            what=f"the {kind} ledger",
            for_writing=True,
            real_root=self._real_root,
        )

    def _was_created(self, kind: str) -> bool:
        """Whether this kit's ledgers were started by ``pmos init`` (any kind has a marker)."""
        return any((self._resolve(k) / MARKER).is_file() for k in LEDGER_KINDS if k != kind)


def _legacy_file(folder: Path) -> Path:
    """Where a kit from before the folder layout kept the ledger: a file beside it."""
    return folder.with_name(folder.name + LEGACY_SUFFIX)


def write_marker(folder: Path, kind: str) -> None:
    """Create the marker that says ``folder`` is ``kind``'s ledger (kept when present)."""
    atomic.write_once(folder, MARKER, marker_text(kind))
