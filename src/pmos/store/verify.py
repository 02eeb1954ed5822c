"""``pmos ledger verify``: check every file of every ledger, and say what is wrong.

Where a reader checks what it relies on as it reads, verification checks
everything and keeps going after a problem, so one report lists them all:

* a loose record: one line, its content matching its digest, its digest
  matching its file name, in canonical form;
* a pack: its bytes matching its name, a valid header whose count and key range
  match its records, each record line matching its digest, in canonical form,
  sorted by key with no repeats;
* a single-file ledger of an older kit: its hash chain, line by line;
* with a screen (:mod:`pmos.store.screening`), the writers' rules: a pack's
  recorded outcome where it still holds, every other record checked here;
* with ``--schema``, every record against its kind's schema and, through a
  ``check``, every writer rule, whatever a pack recorded.

Each kind's report carries the number of distinct records and one digest over
their sorted content digests: two clones holding the same records print the
same digest, however their files are arranged.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from pmos.errors import LedgerCorrupt, Violation
from pmos.store import chain, lines, packs
from pmos.store.append import schema_problems
from pmos.store.digest import CHAIN_FIELDS, record_digest
from pmos.store.layout import PACK, Store
from pmos.store.read import read_loose
from pmos.store.registry import LEDGER_KINDS
from pmos.store.screening import Screen

#: A check of one stored record beyond its schema: every broken rule, or none.
RecordCheck = Callable[[str, dict[str, Any]], list[Violation]]


class Problem(NamedTuple):
    file: str
    line: int | None
    problem: str

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "problem": self.problem}


class KindReport:
    """The outcome of verifying one kind's ledger."""

    __slots__ = ("checked_packs", "digests", "folder", "kind", "problems")

    def __init__(self, kind: str, folder: Path) -> None:
        self.kind = kind
        self.folder = folder
        #: content digest -> record id, for every record found (copies counted once)
        self.digests: dict[str, str] = {}
        self.problems: list[Problem] = []
        #: the packs (by the SHA-256 in their names) checked line by line
        self.checked_packs: list[str] = []

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def records(self) -> int:
        return len(self.digests)

    @property
    def head(self) -> str | None:
        """One digest over the sorted record digests; None for an empty ledger."""
        return summary_digest(self.digests) if self.digests else None

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
    joined = "".join(f"{d}\n" for d in sorted(digests))
    return hashlib.sha256(joined.encode()).hexdigest()


def verify_store(
    store: Store,
    *,
    with_schema: bool = False,
    check: RecordCheck | None = None,
    screen: Screen | None = None,
    verified_packs: Collection[str] = frozenset(),
) -> list[KindReport]:
    """One report per ledger kind (see the module docstring and :func:`verify_kind`)."""
    return [
        verify_kind(
            store,
            kind,
            with_schema=with_schema,
            check=check,
            screen=screen,
            verified_packs=verified_packs,
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
) -> KindReport:
    """Verify one kind's ledger.

    A pack named in ``verified_packs`` (by the SHA-256 in its name) passed
    these same checks before, as the caller knows (``pmos sync`` remembers
    the packs it copied, and which pmos verified them): its bytes are only
    hashed against its name and its header read. A pack of that name and
    content is the pack that passed, so nothing else about it can have
    changed; its records are then not listed in the report (``records`` and
    ``head`` leave them out).
    """
    report = KindReport(kind, store.folder(kind))
    try:
        sources = store.sources(kind)
    except LedgerCorrupt as exc:
        report.add(exc.path, exc.line, exc.problem)
        return report

    prefix = f"{LEDGER_KINDS[kind].id_prefix}-"
    # Packs whose recorded screening holds: their failing records by line.
    recorded: dict[Path, dict[int, tuple[str | None, str, str]]] = {}
    if screen is not None and check is None:
        for path in sources.packs:
            try:
                checked = packs.read_header(path, kind).checked
            except LedgerCorrupt:
                continue  # reported when the pack is verified
            if checked is not None and screen.holds(checked.basis):
                recorded[path] = {n + 1: failure for n, failure in checked.failed.items()}

    unreadable: list[str] = []  # a ledger the rules read is corrupt: said once

    def screened(record: dict[str, Any], where: Path, line: int | None) -> None:
        failures = recorded.get(where)
        if failures is not None:
            failure = failures.get(line)  # type: ignore[arg-type]
            if failure is not None:
                report.add(where, line, f"rule: [{failure[1]}] {failure[2]} (recorded by pack)")
            return
        ruled(screen.problems, record, where, line)  # type: ignore[union-attr]

    def ruled(rules: RecordCheck, record: dict[str, Any], where: Path, line: int | None) -> None:
        if unreadable:
            return
        try:
            violations = rules(kind, record)
        except LedgerCorrupt as exc:
            unreadable.append(str(exc))
            report.add(where, line, f"the writers' rules cannot be checked: {exc}")
            return
        for violation in violations:
            report.add(where, line, f"rule: {violation}")

    def record_found(record: dict[str, Any], digest: str, where: Path, line: int | None) -> None:
        record_id = record.get("record_id")
        if type(record_id) is str and record_id.startswith(prefix):
            report.digests.setdefault(digest, record_id)
        else:
            report.digests.setdefault(digest, str(record.get("record_id", "")))
            # A record's digest does not say which ledger it belongs to; its id does.
            report.add(
                where,
                line,
                f"the record id {record_id!r} is not one of the {kind} ledger ({prefix}...): "
                "it was copied from another ledger or made by hand",
            )
        if with_schema:
            for violation in schema_problems(kind, record):
                report.add(where, line, f"schema: {violation}")
        if check is not None:
            ruled(check, record, where, line)
        elif screen is not None:
            screened(record, where, line)

    if sources.legacy is not None:
        _verify_legacy(sources.legacy, kind, report, record_found)
    for path in sources.packs:
        if packs.name_digest(path) in verified_packs:
            _verify_pack_bytes(path, kind, report)
        else:
            _verify_pack(path, kind, report, record_found)
            report.checked_packs.append(packs.name_digest(path))
    for path in sources.loose_paths():
        try:
            entry = read_loose(path)
            record = lines.check_canonical(lines.split(entry.raw)[0])
        except LedgerCorrupt as exc:
            report.add(path, None, exc.problem)
            continue
        except lines.LineError as exc:
            report.add(path, None, f"the record is {exc}")
            continue
        record_found(record, entry.digest, path, None)
    return report


def _verify_legacy(path: Path, kind: str, report: KindReport, found: Callable[..., None]) -> None:
    chained = chain.verify(path, kind)
    for problem in chained.problems:
        report.add(path, problem.line or None, problem.problem)
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.endswith(b"\n"):
                break
            try:
                record = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue  # reported by the chain check
            if type(record) is dict:
                body = {k: v for k, v in record.items() if k not in CHAIN_FIELDS}
                found(body, record_digest(body), path, number)


def _pack_lines(path: Path, digest: Any) -> Iterator[tuple[list[bytes], bool]]:
    """The pack's lines without their newlines, in lists (one per block read), each
    list with whether its lines are complete (only a last line with no newline is
    not), hashing every byte read into ``digest``."""
    with open(path, "rb", buffering=0) as handle:
        pending = b""
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
            parts = (pending + chunk).split(b"\n")
            pending = parts.pop()
            yield parts, True
        if pending:
            yield [pending], False


def _verify_pack_bytes(path: Path, kind: str, report: KindReport) -> None:
    """A pack verified before: still a pack of this kind, still the bytes its name claims."""
    try:
        packs.read_header(path, kind)
    except LedgerCorrupt as exc:
        report.add(path, exc.line, exc.problem)
        return
    whole = hashlib.sha256()
    with open(path, "rb", buffering=0) as handle:
        while chunk := handle.read(1 << 20):
            whole.update(chunk)
    if whole.hexdigest() != packs.name_digest(path):
        report.add(path, None, "the pack's content does not match its name: it was edited or cut")


def _verify_pack(path: Path, kind: str, report: KindReport, found: Callable[..., None]) -> None:
    match = PACK.match(path.name)
    whole = hashlib.sha256()
    header = None
    previous: packs.Key | None = None
    first: packs.Key | None = None
    count = 0
    number = 0
    check, check_canonical, line_error = lines.check, lines.check_canonical, lines.LineError
    key_of = packs.key_of
    for block, complete in _pack_lines(path, whole):
        for raw in block:
            number += 1
            if not complete:
                report.add(path, number, "the pack does not end with a complete line")
                break
            if number == 1:
                try:
                    header = packs.Header.parse(raw, path, kind)
                except LedgerCorrupt as exc:
                    report.add(path, 1, exc.problem)
                continue
            try:
                body, digest = check(raw)
                record = check_canonical(body)
            except line_error as exc:
                report.add(path, number, f"the record {exc}")
                continue
            key = key_of(record)
            if previous is not None and key <= previous:
                report.add(path, number, "records are out of order (or repeated) in the pack")
            previous = key
            first = first or key
            count += 1
            found(record, digest, path, number)
    if match is None or whole.hexdigest() != match.group(1):
        report.add(path, None, "the pack's content does not match its name: it was edited or cut")
    if header is None:
        if count == 0:
            report.add(path, None, "the pack has no header")
    elif header.records != count or header.first != first or header.last != previous:
        report.add(
            path, 1, "the header's record count or key range does not match the pack's records"
        )
