"""``pmos ledger pack``: compact each closed month of a ledger into one pack.

Like ``git gc``, packing only adds a file and deletes files; it never edits
one. It compacts a bucket (a month, :mod:`pmos.store.layout`) only once the
bucket is closed: the month is over and a grace period (``pack.grace_days``
in pmos.yaml, 7 by default) has passed, by the machine's clock, never by a
record's date. Writers add records to the current month; a branch that lags
may still add to last month during the grace period.

A bucket's pack holds every record of the bucket (its loose files and any
earlier pack of it, copies by digest once), sorted, with a header that holds
only what the records fix (:mod:`pmos.store.packs`). So two compactions of the
same records are byte-identical, and merging two branches that compacted the
same bucket merges one file. What git cannot merge cleanly is two *different*
packs made from overlapping records on two branches (the deleted loose files
and the added pack look like a rename to git's default rename detection), so
packing refuses unless the kit is outside git or the current branch is the
default branch (``pack.default_branch``, ``main`` by default); ``--force``
overrides it, with a warning.

A record that fails the store's checks (:mod:`pmos.store.integrity`) is not
packed: its bucket is left as it is and named in a warning (``pmos ledger
verify`` says what is wrong). Only after the new pack is on disk are the
folded files removed; a crash in between leaves copies that readers count once.
"""

from __future__ import annotations

import contextlib
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

from pmos._util.git import Repository
from pmos.errors import BadInput, GitError
from pmos.store import integrity, packs
from pmos.store.files import kind_lock, remove_many, stale_temps
from pmos.store.layout import Bucket, Store
from pmos.store.registry import LEDGER_KINDS

DEFAULT_GRACE_DAYS = 7
DEFAULT_BRANCH = "main"


class PackReport(NamedTuple):
    kind: str
    records: int
    loose_folded: int
    packs_folded: int
    buckets: list[str]
    packs: list[str]
    warnings: list[str]

    def as_dict(self) -> dict[str, Any]:
        return self._asdict()


def closed(bucket: str, today: date, grace_days: int) -> bool:
    """Whether the month ``bucket`` (``YYYY-MM``) is over and ``grace_days`` have passed."""
    year, month = int(bucket[:4]), int(bucket[5:7])
    following = date(year + month // 12, month % 12 + 1, 1)
    return today >= following + timedelta(days=grace_days)


def branch_problem(root: Path, default_branch: str) -> str | None:
    """Why packing here could make a pack that conflicts, or None when it cannot:
    the kit is outside git, or its checkout is on the default branch."""
    try:
        repo = Repository.find(root)
    except GitError as exc:
        return f"pmos cannot tell the kit's branch: {exc}"
    if repo is None:
        return None  # outside git: no branches
    try:
        branch = repo.run("symbolic-ref", "--short", "-q", "HEAD", here=True).decode().strip()
    except GitError:
        branch = ""  # a detached HEAD
    if branch == default_branch:
        return None
    where = f"on branch {branch!r}" if branch else "on a detached HEAD"
    return (
        f"the kit's checkout is {where}, not the default branch {default_branch!r} "
        "(pack.default_branch): packs made on two branches from overlapping records "
        "conflict under git's rename detection when the branches merge; pack on "
        f"{default_branch!r}, or pass --force"
    )


def pack_store(
    store: Store,
    kinds: list[str] | None = None,
    *,
    grace_days: int = DEFAULT_GRACE_DAYS,
    default_branch: str = DEFAULT_BRANCH,
    force: bool = False,
    today: date | None = None,
) -> list[PackReport]:
    """Pack each kind (all by default); one report per kind. Refuses (BadInput)
    off the default branch unless ``force`` (see the module docstring)."""
    problem = branch_problem(store.root, default_branch)
    if problem is not None and not force:
        raise BadInput(f"not packing: {problem}")
    warnings = [f"packing anyway (--force): {problem}"] if problem else []
    day = today or datetime.now(UTC).date()
    reports = [pack_kind(store, kind, grace_days, day) for kind in kinds or list(LEDGER_KINDS)]
    if warnings and reports:
        reports[0].warnings[:0] = warnings
    return reports


def pack_kind(store: Store, kind: str, grace_days: int, today: date) -> PackReport:
    """Compact ``kind``'s closed buckets (see the module docstring)."""
    folder = store.ensure_folder(kind)
    loose_folded = packs_folded = records = 0
    done: list[str] = []
    made: list[str] = []
    warnings: list[str] = []
    with kind_lock(folder):
        sources = store.sources(kind)
        for bucket in sources.buckets:
            if not closed(bucket.name, today, grace_days):
                continue
            if not bucket.loose and len(bucket.packs) <= 1:
                continue  # compacted already
            outcome = _pack_bucket(folder, bucket, kind)
            if isinstance(outcome, str):
                warnings.append(outcome)
                continue
            path, count = outcome
            records += count
            loose_folded += len(bucket.loose)
            packs_folded += len([p for p in bucket.packs if p != path])
            done.append(bucket.name)
            made.append(path.name)
        remove_many(folder, stale_temps(folder))
    return PackReport(kind, records, loose_folded, packs_folded, done, made, warnings)


def _pack_bucket(folder: Path, bucket: Bucket, kind: str) -> tuple[Path, int] | str:
    """Write the bucket's pack and remove what it folded; a warning when it cannot."""
    scanned = integrity.scan_bucket(folder, bucket, kind, None)
    if scanned.refused:
        first = scanned.refused[0]
        where = first.file if first.line is None else f"{first.file}:{first.line}"
        return (
            f"{kind} {bucket.name}: not packed, {len(scanned.refused)} file(s) or record(s) "
            f"fail the store's checks (first: {where}: {first.problem}); see 'pmos ledger verify'"
        )
    entries = [(s.key, s.digest, s.raw + b"\n") for s in scanned.stored]
    bucket_folder = folder / bucket.name
    path = packs.write_pack(bucket_folder, kind, entries)
    loose = bucket.loose_paths(folder)
    remove_many(bucket_folder, [*loose, *(p for p in bucket.packs if p != path)])
    for day in sorted({rel.split("/", 1)[0] for rel in bucket.loose}):
        with contextlib.suppress(OSError):
            (bucket_folder / day).rmdir()  # only when empty: a writer may have added since
    return path, len(entries)
