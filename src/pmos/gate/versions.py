"""Versions move forward: a record of an older layout, made after the kit held a
record of a newer one, is reported and left out.

A writer writes only the newest layout of its kind (verdicts: 2 since each
criterion carries ``verified``; labels: 2 since a signature binds its kit and
verdict), and the rules a stored record is checked against follow its
``schema_version``: an older version is held to the older, weaker rules. Once a
kit holds a record of the newer version, a later record of an older one did not
come from a writer of this kit; it is a side door around the newer rules (a
version-1 verdict that skips a registered contract).

"Later" is never read from the record's own ``recorded_at``, which whoever made
the record wrote (a back-dated version-1 verdict would pass). It comes from what
pmos trusts (:class:`Order`):

* ``pmos gate`` (:class:`AddedByChange`): every record a change adds is later
  than everything at the base, so an added record of an older version than the
  base already holds of its kind is refused;
* the readers and ``pmos ledger verify`` in a git work tree
  (:class:`CommittedAtHead`): a record committed at HEAD went through the gate
  when it merged; one that is not committed yet (its content digest is not in
  the kit's ledger at HEAD) is later than every committed record, so an older
  version of it, in a kit holding a newer one, is reported;
* outside git nothing shows an order: an older-version record in a kit that
  holds a newer version of its kind is reported, and the reason says so.

:mod:`pmos.gate.recheck` asks its :class:`Order` about every record whose
version is older than the newest its writer writes; the newest version a
ledger holds, and what HEAD holds, are read once per pass, and only for a kind
with such a record.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

from pmos._util.git import Repository
from pmos.errors import BadInput, GitError, Violation
from pmos.store.digest import record_digest
from pmos.store.history import digests_at_commit
from pmos.store.layout import Store

#: The schema version each writer writes today; a record of an older version is
#: read as long as nothing shows it was made after one of this version.
VERDICT_SCHEMA_VERSION = 2
LABEL_SCHEMA_VERSION = 2
NEWEST = {"evals": VERDICT_SCHEMA_VERSION, "acceptances": LABEL_SCHEMA_VERSION}

RULE = "version-forward"
_AGAIN = (
    "pmos writers write only the newest version, so this record did not come from one; "
    "record it again through the writer"
)


def newest_version(records: Iterable[Mapping[str, Any]], *, cap: int | None = None) -> int:
    """The highest ``schema_version`` among ``records`` (1 when none says).

    With ``cap`` (the newest version writers write, :data:`NEWEST`), no higher
    version counts, and reading stops at the first record of that version:
    nothing read after it can change the answer. Read newest first, that is
    usually the first record."""
    newest = 1
    for record in records:
        version = record.get("schema_version", 1)
        if isinstance(version, int) and not isinstance(version, bool) and version > newest:
            if cap is not None and version >= cap:
                return cap
            newest = version
    return newest


def _version(record: Mapping[str, Any]) -> int | None:
    version = record.get("schema_version", 1)
    return version if isinstance(version, int) and not isinstance(version, bool) else None


class _Older:
    """Whether a record is of an older version than the newest its kind holds:
    ``(its version, the newest)``, the newest asked of ``newest_of(kind)`` once a
    kind (an order is consulted only for such a record)."""

    def __init__(self, newest_of: Callable[[str], int]) -> None:
        self._newest_of = newest_of
        self._newest: dict[str, int] = {}

    def __call__(self, kind: str, record: Mapping[str, Any]) -> tuple[int, int] | None:
        version = _version(record)
        if version is None:
            return None
        newest = self._newest.get(kind)
        if newest is None:
            newest = self._newest[kind] = self._newest_of(kind)
        return (version, newest) if version < newest else None

    @property
    def kinds_read(self) -> list[str]:
        """The kinds whose newest version was read."""
        return list(self._newest)


class Order(Protocol):
    """What says whether a record of an older version came after a newer one."""

    def problem(self, kind: str, record: Mapping[str, Any]) -> Violation | None: ...


class AddedByChange:
    """``pmos gate``: every checked record is added by the change, so later than the
    base's records. ``newest_at_base(kind)`` is the newest version the base holds
    of ``kind`` (asked once per kind, and only for an added older record)."""

    def __init__(self, newest_at_base: Callable[[str], int]) -> None:
        self._older = _Older(newest_at_base)

    def problem(self, kind: str, record: Mapping[str, Any]) -> Violation | None:
        found = self._older(kind, record)
        if found is None:
            return None
        version, newest = found
        return Violation(
            RULE,
            "schema_version",
            f"schema_version {version}, added by this change, while the base already holds "
            f"{kind} records of version {newest}: {_AGAIN}",
        )


class CommittedAtHead:
    """The readers' order (see the module docstring): ``ledger(kind)`` gives the
    kind's records as a reader reads them, newest first, for the newest version
    it holds (read only until a record of the newest version writers write)."""

    def __init__(self, store: Store, ledger: Callable[[str], Iterable[Mapping[str, Any]]]) -> None:
        self.store = store
        self._older = _Older(lambda kind: newest_version(ledger(kind), cap=NEWEST.get(kind)))
        self._committed: dict[str, set[str] | str] = {}
        #: The commit whose tree was read (None until a record needed it): an
        #: outcome that read it holds only while HEAD is that commit.
        self.head: str | None = None

    @property
    def kinds_read(self) -> list[str]:
        """The kinds whose records were read for the newest version they hold."""
        return self._older.kinds_read

    def problem(self, kind: str, record: Mapping[str, Any]) -> Violation | None:
        found = self._older(kind, record)
        if found is None:
            return None
        version, newest = found
        committed = self._committed.get(kind)
        if committed is None:
            committed = self._committed[kind] = self._at_head(kind)
        if isinstance(committed, str):
            return Violation(
                RULE,
                "schema_version",
                f"schema_version {version} in a kit that holds {kind} records of version "
                f"{newest}, and {committed}, so nothing shows this record was made before "
                f"them (its own recorded_at does not count): {_AGAIN}",
            )
        try:
            digest = record_digest(dict(record))
        except BadInput:
            digest = ""
        if digest in committed:
            return None  # committed: it went through the gate when it merged
        return Violation(
            RULE,
            "schema_version",
            f"schema_version {version}, not committed at HEAD, while the kit already holds "
            f"{kind} records of version {newest}: {_AGAIN}",
        )

    def _at_head(self, kind: str) -> set[str] | str:
        """The digests of ``kind``'s records committed at HEAD, or why there are none."""
        try:
            repo = Repository(self.store.root)
        except GitError:
            return "the kit is not in a git repository"
        try:
            head = repo.commit("HEAD")
            found = set(digests_at_commit(self.store, repo, head, [kind])[kind])
        except BadInput as exc:  # GitError included: no commit yet, a missing object
            return f"git cannot show what is committed at HEAD ({exc})"
        self.head = head
        return found


def head_commit(root: Path) -> str | None:
    """The commit HEAD names in the repository holding ``root``, or None."""
    try:
        return Repository(root).commit("HEAD")
    except BadInput:  # GitError included: not a repository, no commit yet
        return None
