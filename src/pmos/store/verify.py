"""``pmos ledger verify``: check every file of every ledger, and say what is wrong.

Verification applies the store's one rule (:mod:`pmos.store.integrity`), the
rule every reader applies, and reports every file and record it leaves out, so
``verify`` names exactly the records metrics, queue, board, gate and sync
leave out, with the same reason. It also reports:

* with a screen (:mod:`pmos.store.screening`), every record that breaks a
  writer's rule (a pack's outcome may come from the cache outside the
  repository, :mod:`pmos.store.screencache`);
* with ``--schema``, every record against its kind's schema and, through a
  ``check``, every writer rule, with no cache.

Each kind's report carries the number of records that count and one digest
over their sorted content digests: two clones holding the same records print
the same digest, however their files are arranged.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from pmos.errors import LedgerCorrupt, Violation
from pmos.store import integrity, lines, screencache
from pmos.store.append import schema_problems
from pmos.store.layout import Store
from pmos.store.read import Sieve
from pmos.store.registry import LEDGER_KINDS
from pmos.store.screening import Excluded, Screen

#: A check of one stored record beyond its schema: every broken rule, or none.
RecordCheck = Callable[[str, dict[str, Any]], list[Violation]]
#: What a caller checks of each month as verification reads it (its kind's report,
#: the month): checks beyond the store's, made in the same reading.
BucketCheck = Callable[["KindReport", integrity.BucketScan], None]
#: How far after the machine's clock a record may be dated (clocks drift a little).


class Problem(NamedTuple):
    file: str
    line: int | None
    problem: str

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "problem": self.problem}


class KindReport:
    """The outcome of verifying one kind's ledger."""

    __slots__ = (
        "_digests",
        "_ids",
        "_months",
        "_whole",
        "checked_packs",
        "folder",
        "kind",
        "problems",
    )

    def __init__(self, kind: str, folder: Path, *, ids: bool = True) -> None:
        self.kind = kind
        self.folder = folder
        self._digests: dict[str, str] = {}
        #: Whether each record's id is kept beside its digest (:attr:`digests`); if
        #: not, the digests of each month read whole are kept as one text, a line
        #: each, and their number: all that the count and the head need. (A million
        #: strings held to the end would cost their memory, and each collection of
        #: the garbage collector a visit to every one of them.)
        self._ids = ids
        self._months: list[str] = []
        self._whole = 0
        self.problems: list[Problem] = []
        #: the packs (by the SHA-256 of their bytes) read and found sound
        self.checked_packs: list[str] = []

    @property
    def digests(self) -> dict[str, str]:
        """content digest -> record id, for every record that counts (kept only when
        the report was made with ``ids``)."""
        if not self._ids:
            raise ValueError("this verification kept no record ids (made with ids=False)")
        return self._digests

    def count(self, digest: str, record_id: str) -> None:
        """A record that counts."""
        self._digests[digest] = record_id

    def count_whole(self, whole: integrity.WholePack) -> None:
        """A month read whole: each of its records counts. (A record sits in the month
        of its time, so no other month holds it, and a whole month holds no copy.)"""
        if self._ids:
            self._digests.update(whole.digests())
        else:
            self._months.append("\n".join(whole.content_digests()))
            self._whole += whole.records

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def records(self) -> int:
        return len(self._digests) + self._whole

    @property
    def head(self) -> str | None:
        """One digest over the sorted record digests; None for an empty ledger."""
        if not self.records:
            return None
        return summary_digest("\n".join([*self._months, *self._digests]).split("\n"))

    def add(self, file: Path | str, line: int | None, problem: str) -> None:
        self.problems.append(Problem(str(file), line, problem))

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "path": str(self.folder),
            "ok": self.ok,
            "lines": self.records,
            "records": self.records,
            "head": self.head,
            "problems": [p.as_dict() for p in self.problems],
        }


def summary_digest(digests: Any) -> str:
    """SHA-256 over sorted content digests, one per line: a set's one fingerprint."""
    ordered = sorted(digests)
    text = "\n".join(ordered) + "\n" if ordered else ""
    return hashlib.sha256(text.encode()).hexdigest()


def verify_store(
    store: Store,
    *,
    with_schema: bool = False,
    check: RecordCheck | None = None,
    screen: Screen | None = None,
    verified_packs: Collection[str] = frozenset(),
    each_month: dict[str, BucketCheck] | None = None,
    rows: dict[str, type] | None = None,
    ids: bool = True,
) -> list[KindReport]:
    """One report per ledger kind (see the module docstring and :func:`verify_kind`);
    ``each_month[kind]``, when given, also checks each month of that kind as it is read,
    and ``rows[kind]`` is what each line of a month read whole is decoded to for it
    (:func:`pmos.store.integrity.scan`).
    ``ids``: keep each record's id beside its digest (:attr:`KindReport.digests`)."""
    return [
        verify_kind(
            store,
            kind,
            with_schema=with_schema,
            check=check,
            screen=screen,
            verified_packs=verified_packs,
            each_month=(each_month or {}).get(kind),
            row=(rows or {}).get(kind),
            ids=ids,
        )
        for kind in LEDGER_KINDS
    ]


def verify_kind(
    store: Store,
    kind: str,
    *,
    with_schema: bool = False,
    check: RecordCheck | None = None,
    screen: Screen | None = None,
    verified_packs: Collection[str] = frozenset(),
    each_month: BucketCheck | None = None,
    row: type | None = None,
    ids: bool = True,
) -> KindReport:
    """Verify one kind's ledger (and ``each_month`` of it, as it is read).

    A pack named in ``verified_packs`` (by the SHA-256 of its bytes) was
    screened before by this pmos, as the caller knows from outside the
    repository (``pmos sync`` remembers it in its database): its records are
    checked by the store's rule like every other, but not screened again.
    """
    report = KindReport(kind, store.folder(kind), ids=ids)
    try:
        sources = store.sources(kind)
    except LedgerCorrupt as exc:
        report.add(exc.path, exc.line, exc.problem)
        return report
    screened = Excluded()
    sieve = Sieve(store, kind, screen, screened) if screen is not None and check is None else None
    unreadable: list[str] = []  # a ledger the rules read is corrupt: said once

    def ruled(record: dict[str, Any], where: str, line: int | None) -> None:
        if unreadable or check is None:
            return
        try:
            violations = check(kind, record)
        except LedgerCorrupt as exc:
            unreadable.append(str(exc))
            report.add(where, line, f"the writers' rules cannot be checked: {exc}")
            return
        for violation in violations:
            report.add(where, line, f"rule: {violation}")

    # --schema checks everything with no cache; otherwise a pack's line checks may be
    # recalled from this machine's memo of them (pmos.store.linememo).
    memo = None if with_schema or check is not None else screencache.cache_folder(store.root)
    for bucket in integrity.scan(sources, kind, memo=memo, row=row):
        for refused in bucket.refused:
            report.add(refused.file, refused.line, refused.problem)
        report.checked_packs += [p.sha for p in bucket.packs if p.ok]
        whole = bucket.whole
        if sieve is not None and not (
            whole is not None and (whole.sha in verified_packs or sieve.clean(whole))
        ):
            todo = integrity.BucketScan(
                bucket.name,
                [e for e in bucket.stored if e.pack not in verified_packs],
                bucket.refused,
                bucket.packs,
            )
            try:
                sieve.failing(todo)
            except LedgerCorrupt as exc:
                if not unreadable:
                    unreadable.append(str(exc))
                    report.add(exc.path, exc.line, f"the writers' rules cannot be checked: {exc}")
        if each_month is not None:
            each_month(report, bucket)
        if whole is not None and not (with_schema or check is not None):
            report.count_whole(whole)
            continue
        for entry in bucket.stored:
            report.count(entry.digest, entry.key[1])
            if with_schema or check is not None:
                record = orjson.loads(lines.split(entry.raw)[0])
                if with_schema:
                    for violation in schema_problems(kind, record):
                        report.add(entry.file, entry.line, f"schema: {violation}")
                ruled(record, entry.file, entry.line)
    for exclusion in screened.items:
        file, _, line = exclusion.file.rpartition(":")
        where, number = (file, int(line)) if line.isdigit() and file else (exclusion.file, None)
        report.add(where, number, f"rule: [{exclusion.rule}] {exclusion.problem}")
    return report
