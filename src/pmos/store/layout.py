"""Where each ledger kind lives on disk, and what a ledger folder may hold.

A ledger is a folder of files that are only ever added or deleted, never
modified, so that two git histories that each record anything never change the
same path. Records live in time buckets, by the UTC month and day of their
``recorded_at`` (which the writer sets from its own clock)::

    state/evals/.pmos-ledger                               marker: the folder is a ledger
    state/evals/2026-12/01/20261201T101500123456Z-<d>.json a loose record: one record line
    state/evals/2026-11/pack-<sha256 of the file>.jsonl    a month's pack (``pmos ledger pack``)

A month is a bucket; its loose records fan out by day so that no folder grows
without bound. A bucket is compacted into one pack only once it is closed
(:mod:`pmos.store.packing`), and a pack's bytes are a function of its records
alone, so compactions on two branches make the same file.

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
#: A loose record file's name: ``<recorded_at's digits>-<digest>.json``.
LOOSE = re.compile(r"\A([0-9TZ]{1,32})-([0-9a-f]{64})\.json\Z")
#: A pack's name: ``pack-<SHA-256 of its bytes>.jsonl``.
PACK = re.compile(r"\Apack-([0-9a-f]{64})\.jsonl\Z")
#: A bucket (month) folder, and a day folder inside it.
BUCKET = re.compile(r"\A[0-9]{4}-(?:0[1-9]|1[0-2])\Z")
DAY = re.compile(r"\A(?:0[1-9]|[12][0-9]|3[01])\Z")
_PLACE = re.compile(r"\A([0-9]{4}-(?:0[1-9]|1[0-2]))-(0[1-9]|[12][0-9]|3[01])[Tt]")
#: Files a crashed writer may leave behind (see pmos.atomic); ignored by readers,
#: removed by pack.
TEMP_PREFIX = atomic.TEMP_PREFIX


def place_of(recorded_at: object) -> tuple[str, str] | None:
    """``(bucket, day)`` of a record's ``recorded_at`` (``("2026-12", "01")``), or
    None when it is not an RFC 3339 time. Writers write UTC ("Z"), so the date as
    written is the UTC date; the bucket is read from the text, so bucket order is
    the text order readers sort records by."""
    if type(recorded_at) is not str:
        return None
    match = _PLACE.match(recorded_at)
    return (match.group(1), match.group(2)) if match else None


def loose_path(recorded_at: str, name: str) -> str:
    """Where a loose record file of that time sits, relative to the ledger folder."""
    place = place_of(recorded_at)
    if place is None:
        raise ValueError(f"recorded_at {recorded_at!r} is not an RFC 3339 time")
    return f"{place[0]}/{place[1]}/{name}"


class Bucket(NamedTuple):
    """One month of a ledger: its packs and its loose files (``day/name``)."""

    name: str
    packs: list[Path]
    loose: list[str]

    def loose_paths(self, folder: Path) -> list[Path]:
        return [folder / self.name / rel for rel in self.loose]


class Sources(NamedTuple):
    """The files that hold one kind's records, as listed at one moment, by bucket
    (oldest first), and the files that do not belong (``strays``: path, why)."""

    folder: Path
    buckets: list[Bucket]
    strays: list[tuple[Path, str]]

    @property
    def empty(self) -> bool:
        return not self.buckets and not self.strays

    @property
    def packs(self) -> list[Path]:
        return [p for b in self.buckets for p in b.packs]

    def loose_paths(self) -> list[Path]:
        """Every loose record file, bucket by bucket."""
        return [p for b in self.buckets for p in b.loose_paths(self.folder)]


def marker_text(kind: str) -> bytes:
    """The marker's content: the same on every branch, so adding it never conflicts."""
    return f'{{"pmos_ledger":1,"kind":"{kind}"}}\n'.encode()


_NOT_STAMP = re.compile(r"[^0-9TZ]")
#: Deletes the characters a stamp keeps: what is left of a time is what it drops.
_STAMP_KEPT = str.maketrans("", "", "0123456789TZ")


def loose_name(record: Mapping[str, object], digest: str) -> str:
    """``<recorded_at as digits>-<digest>.json``: listing order is roughly time order,
    and the name proves what the file holds."""
    return f"{stamp_of(str(record.get('recorded_at', '')))}-{digest}.json"


def stamp_of(recorded_at: str) -> str:
    """A time's characters 0-9, T and Z, at most 32 (``"0"`` when none).

    A writer's time (RFC 3339) has only ``-``, ``:`` and ``.`` to drop: three
    replaces, checked by one translate, cost half the regular expression that
    drops anything else (``pmos ledger pack`` checks 100,000 names: 0.12 s less).
    """
    stamp = recorded_at.replace("-", "").replace(":", "").replace(".", "")
    if stamp.translate(_STAMP_KEPT):  # it held something else too
        stamp = _NOT_STAMP.sub("", recorded_at)
    return stamp[:32] or "0"


_STRAY = (
    "a file pmos did not write sits in the ledger folder (records are "
    "YYYY-MM/DD/<stamp>-<digest>.json, packs YYYY-MM/pack-<digest>.jsonl); move it elsewhere"
)


def _list_bucket(path: Path, strays: list[tuple[Path, str]]) -> Bucket | None:
    """One bucket folder's packs and loose files (None when it holds neither);
    what does not belong is added to ``strays``."""
    packs: list[Path] = []
    loose: list[str] = []
    try:
        inside = sorted(os.scandir(path), key=lambda e: e.name)
    except FileNotFoundError:
        return None
    for inner in inside:
        name = inner.name
        if name.startswith("."):
            continue
        if PACK.match(name) and inner.is_file(follow_symlinks=False):
            packs.append(Path(inner.path))
        elif DAY.match(name) and inner.is_dir(follow_symlinks=False):
            try:
                leaves = sorted(os.scandir(inner.path), key=lambda e: e.name)
            except FileNotFoundError:
                continue  # emptied and removed by a pack meanwhile
            for leaf in leaves:
                if leaf.name.startswith("."):
                    continue
                if LOOSE.match(leaf.name) and leaf.is_file(follow_symlinks=False):
                    loose.append(f"{name}/{leaf.name}")
                else:
                    strays.append((Path(leaf.path), _STRAY))
        else:
            strays.append((Path(inner.path), _STRAY))
    return Bucket(path.name, packs, loose) if packs or loose else None


def relist_bucket(folder: Path, name: str) -> Bucket:
    """The bucket ``name`` of the ledger ``folder`` as it is now (empty when gone);
    stray files are left to the full listing (:func:`list_sources`) to report."""
    return _list_bucket(folder / name, []) or Bucket(name, [], [])


def pack_names(folder: Path, name: str) -> frozenset[str]:
    """The names of the packs in the bucket ``name`` now."""
    try:
        return frozenset(e.name for e in os.scandir(folder / name) if PACK.match(e.name))
    except FileNotFoundError:
        return frozenset()


def list_sources(folder: Path) -> Sources:
    """List a ledger folder (see the module docstring); a missing folder is empty."""
    buckets: list[Bucket] = []
    strays: list[tuple[Path, str]] = []
    try:
        top = sorted(os.scandir(folder), key=lambda e: e.name)
    except FileNotFoundError:
        return Sources(folder, [], [])
    for entry in top:
        if entry.name.startswith("."):
            continue
        if not (BUCKET.match(entry.name) and entry.is_dir(follow_symlinks=False)):
            strays.append((Path(entry.path), _STRAY))
            continue
        bucket = _list_bucket(Path(entry.path), strays)
        if bucket is not None:
            buckets.append(bucket)
    return Sources(folder, buckets, strays)


class Store:
    """The ledgers of one kit root: ``ledgers`` maps each kind to its configured path.

    The kit root is resolved once per store, and the kinds' folders are checked
    against each other (no overlap) on the first call that succeeds; every call
    still resolves the folder it returns, so a symlink put in its way since is
    refused. An append asks for its folder several times, and resolving every
    kind each time was most of an append's CPU.
    """

    __slots__ = ("_apart", "_real_root", "ledgers", "root", "written")

    def __init__(self, root: Path, ledgers: Mapping[str, str]) -> None:
        self.root = root
        #: Records appended through this store (the CLI says which kit it wrote to).
        self.written = 0
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
            raise SinkRefused(f"{mine} is not a folder: the {kind} ledger is a folder of records")
        return mine

    def display(self, kind: str) -> str:
        """The ledger's folder, as configured, for messages."""
        return self.ledgers[kind]

    def sources(self, kind: str) -> Sources:
        """Every file holding ``kind``'s records now (see :func:`list_sources`)."""
        folder = self.folder(kind)
        if not folder.exists() and not kind_of(kind).late and self._was_created(kind):
            raise LedgerCorrupt(
                str(folder),
                None,
                f"the {kind} ledger folder is missing; restore it from version control "
                "(for example 'git checkout -- " + self.display(kind) + "'), or run "
                "'pmos init' on the kit root to start it empty",
            )
        return list_sources(folder)

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
            if not kind_of(kind).late and self._was_created(kind):
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
        """Accept ``target`` only if it names ``kind``'s own ledger folder."""
        folder = self.folder(kind)
        given = Path(target)
        if not given.is_absolute():
            given = Path.cwd() / given
        if given.is_symlink():
            raise SinkRefused(f"refusing to write through the symlink {target}")
        real = Path(os.path.realpath(given))
        if real != folder:
            raise SinkRefused(
                f"refusing to write a {kind} record to {target}: the {kind} ledger of this "
                f"kit is {folder}"
            )
        return folder

    # ------------------------------------------------------------ helpers

    def _resolve(self, kind: str) -> Path:
        if self._real_root is None:
            self._real_root = Path(os.path.realpath(self.root))
        configured = self.ledgers[kind]
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


def write_marker(folder: Path, kind: str) -> None:
    """Create the marker that says ``folder`` is ``kind``'s ledger (kept when present)."""
    atomic.write_once(folder, MARKER, marker_text(kind))
