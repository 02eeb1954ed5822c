"""The one append path: every record of every kind enters its ledger here.

A writer (in :mod:`pmos.gate`, :mod:`pmos.assess`, :mod:`pmos.tasks`) builds
its records and checks its own rules; this module adds the fields every record
carries, validates each record against its kind's schema, and writes under the
kind's lock. A record that fails its schema is refused here whatever the
writer did, so no path into a ledger skips validation.

:func:`seal` is where that happens, once per record: it validates, encodes and
size-checks a record into the bytes that will be written. A record that does
not depend on the ledger (a run and its contract) is sealed by its writer
before the lock is taken, so validating a large one never holds up the other
writers of its kind; a record built under the lock is sealed there. Only a
sealed record is ever written, and what is written is the sealed bytes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from pmos import schemas
from pmos.atomic import fsync_folder, write_many
from pmos.errors import RecordRejected, Violation
from pmos.store import lines
from pmos.store.files import kind_lock
from pmos.store.layout import Store, loose_name, loose_path
from pmos.store.registry import LEDGER_KINDS, kind_of
from pmos.timestamps import compact, now_rfc3339

#: Fields the writer sets on every record; input may not supply them.
WRITER_FIELDS = (
    "record_id",
    "recorded_at",
    "schema_version",
    "flags",
    "prev_hash",
    "hash",
    "form",
    "pass_fraction",
)
SCHEMA_VERSION = 1
#: A stored record's limits. Records are judgments and references, not copies of
#: logs or diffs (those stay where they are and are pointed at); a record far
#: larger than these would make every reader of its ledger pay for it.
MAX_RECORD_BYTES = 1 << 20
MAX_TEXT_BYTES = 64 << 10


class Written(NamedTuple):
    """The stored records (one for most writers) and the warnings for the author."""

    records: list[dict[str, Any]]
    warnings: list[str]

    @property
    def record(self) -> dict[str, Any]:
        return self.records[-1]


@dataclass(frozen=True, slots=True)
class Sealed:
    """A record of ``kind`` that :func:`seal` validated, and the file it becomes.

    ``line`` is what gets written, fixed when the record was validated: a change
    to ``record`` afterwards never reaches the ledger. ``name`` is the file's
    place in the ledger folder: ``YYYY-MM/DD/<stamp>-<digest>.json`` by the
    record's ``recorded_at``. Only :func:`seal` makes
    one (tests/test_architecture.py holds every other module to that).
    """

    kind: str
    record: dict[str, Any]
    name: str
    line: bytes


class Draft(NamedTuple):
    """What a writer's build step hands the store: records to append, warnings to show.

    A record is a mapping, validated under the lock, or a :class:`Sealed` one,
    validated before it."""

    records: Sequence[dict[str, Any] | Sealed]
    warnings: tuple[str, ...] | list[str] = ()


def new_record_id(prefix: str) -> str:
    """Time-ordered, collision-resistant id: ``ev-20261130T081500123456Z-5f2c9a1b``."""
    stamp = compact(datetime.now(UTC), microseconds=True)
    return f"{prefix}-{stamp}-{os.urandom(4).hex()}"


def record_meta(kind: str) -> dict[str, Any]:
    """The writer-owned fields every new record starts with."""
    return {
        "record_id": new_record_id(LEDGER_KINDS[kind].id_prefix),
        "recorded_at": now_rfc3339(),
        "schema_version": SCHEMA_VERSION,
    }


def writer_field_violations(data: dict[str, Any]) -> list[Violation]:
    """Input that tries to set a field only the writer may set."""
    return [
        Violation("writer-owned-field", name, "set by the writer; remove it from the input")
        for name in WRITER_FIELDS
        if name in data
    ]


def schema_problems(kind: str, record: Any, *, parsed: bool = False) -> list[Violation]:
    """Every violation of ``kind``'s schema by ``record`` (empty when it fits);
    ``parsed``: decoded from JSON by orjson or msgspec (see :func:`schemas.validate`)."""
    return schemas.validate(kind_of(kind).schema, record, parsed=parsed)


def reject_if(kind: str, problems: Iterable[Violation]) -> None:
    """Refuse a record of ``kind`` (named by its schema) when there is any problem."""
    found = list(problems)
    if found:
        raise RecordRejected(kind_of(kind).schema if kind in LEDGER_KINDS else kind, found)


def check_schema(kind: str, record: Any) -> None:
    """Refuse ``record`` unless it fits ``kind``'s schema."""
    reject_if(kind, schema_problems(kind, record))


def seal(kind: str, record: dict[str, Any]) -> Sealed:
    """Validate ``record`` against ``kind``'s schema and size limits, and encode it.

    The one place the store validates a record it will write: :func:`append`
    writes nothing else. A writer whose record does not depend on the ledger
    calls it before :func:`append`, so the validation runs outside the lock.
    """
    check_schema(kind, record)
    line, digest = lines.encode(record)
    check_size(kind, record, line)
    at = str(record.get("recorded_at", ""))
    try:
        name = loose_path(at, loose_name(record, digest))
    except ValueError as exc:
        reject_if(kind, [Violation("recorded-at", "recorded_at", str(exc))])
        raise  # unreachable: reject_if raised
    return Sealed(kind, record, name, line)


def append(
    store: Store,
    kind: str,
    build: Callable[[], Draft],
    *,
    target: str | Path | None = None,
) -> Written:
    """Add the records ``build`` returns to the ``kind`` ledger, under its lock.

    ``build`` runs while the ledger is locked, so a writer's checks against the
    ledger's own contents (a run registered once, the pass fraction before this
    verdict) cannot race another writer; it raises :class:`RecordRejected` to
    refuse. Each record it returns is then sealed (:func:`seal`: validated
    against the kind's schema and size limits) unless its writer sealed it
    before the lock: one violation refuses the whole batch, and nothing is
    written. Each record becomes one write-once file named by its time and
    digest, in the day folder of its month (see :mod:`pmos.store.layout`); the
    call returns once the files and their folders are on disk. ``target``, when
    given, must be the ledger's folder.
    """
    if target is not None:
        store.check_target(kind, target)
    folder = store.ensure_folder(kind)
    with kind_lock(folder):
        draft = build()
        sealed = [_sealed(kind, record) for record in draft.records]
        write_sealed(folder, sealed)
    store.written += len(sealed)
    return Written([s.record for s in sealed], list(draft.warnings))


def write_sealed(folder: Path, sealed: Sequence[Sealed]) -> None:
    """Write sealed records into their day folders under ``folder`` (made as needed,
    each new folder fsynced into its parent), each file whole, on disk on return."""
    by_day: dict[str, list[tuple[str, bytes]]] = {}
    for s in sealed:
        day, _, name = s.name.rpartition("/")
        by_day.setdefault(day, []).append((name, s.line))
    for day, files in by_day.items():
        target = folder / day
        if not target.is_dir():
            _make_folders(folder, day)
        write_many(target, files)


def _make_folders(folder: Path, rel: str) -> None:
    """Create ``folder/rel`` (a bucket and its day), each new folder made durable."""
    current = folder
    for part in rel.split("/"):
        child = current / part
        try:
            child.mkdir()
        except FileExistsError:
            pass
        else:
            fsync_folder(current)
        current = child


def _sealed(kind: str, record: dict[str, Any] | Sealed) -> Sealed:
    """``record`` as :func:`seal` makes it for ``kind``; a record sealed for another
    kind is validated again, since that validation vouches for nothing here."""
    if isinstance(record, Sealed):
        return record if record.kind == kind else seal(kind, record.record)
    return seal(kind, record)


def check_size(kind: str, record: dict[str, Any], line: bytes | None = None) -> None:
    """Refuse a record beyond :data:`MAX_RECORD_BYTES`, or any text field beyond
    :data:`MAX_TEXT_BYTES`, naming the field."""
    problems = [
        Violation(
            "record-size",
            field,
            f"{size:,} bytes of text; at most {MAX_TEXT_BYTES:,} are stored "
            "(point at a file or log instead of copying it)",
        )
        for field, size in _long_texts(record, "")
    ]
    size = len(line if line is not None else lines.encode(record)[0])
    if size > MAX_RECORD_BYTES:
        problems.append(
            Violation(
                "record-size",
                "(record)",
                f"{size:,} bytes; a record may hold at most {MAX_RECORD_BYTES:,}",
            )
        )
    reject_if(kind, problems)


def _long_texts(value: Any, where: str) -> Iterable[tuple[str, int]]:
    if isinstance(value, str):
        size = len(value.encode("utf-8", "surrogatepass"))
        if size > MAX_TEXT_BYTES:
            yield where or "(record)", size
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _long_texts(item, f"{where}/{key}" if where else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _long_texts(item, f"{where}/{i}")


def check_storable(kind: str, record: dict[str, Any]) -> None:
    """Refuse a record that cannot be stored as JSON (integers beyond 64 bits,
    text that is not valid Unicode) or that is too large to store, before any
    work that would be lost."""
    check_size(kind, record)
