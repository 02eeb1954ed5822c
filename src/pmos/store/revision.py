"""A kit's ledgers as committed at a git revision, read from git's objects.

``pmos gate`` compares the records of two revisions (the base a change merges
into, and its head) without checking either out: the files under each ledger
folder are listed with ``git ls-tree`` (recursively, whatever the folder's
depth of time buckets) and read with ``git cat-file`` through the hardened
runner (:mod:`pmos._util.git`). A file is named by the store's own patterns
(:data:`~pmos.store.layout.LOOSE`, :data:`~pmos.store.layout.PACK`); every
line is checked as a reader checks it (:mod:`pmos.store.lines`): its digest
matches its content, it is canonical, its record id names its ledger. Records
are keyed by content digest, so the same record loose on one side and packed
on the other is one record.

A file is parsed once per blob (:class:`BlobCache`): a ledger file unchanged
between the two revisions is one object, read once.
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Iterable, Mapping
from itertools import count, repeat
from operator import attrgetter
from typing import Any, NamedTuple

import msgspec
import orjson

from pmos._util.git import Repository, TreeEntry
from pmos.store import lines
from pmos.store.layout import LOOSE, PACK
from pmos.store.registry import LEDGER_KINDS


class _Rows:
    """A file of history's lines, split apart only when one is first asked for: a
    gate reads every record of a revision, and needs the text of few of them."""

    __slots__ = ("_content", "_rows")

    def __init__(self, content: bytes) -> None:
        self._content = content
        self._rows: list[bytes] | None = None

    def __getitem__(self, index: int) -> bytes:
        if self._rows is None:
            self._rows = self._content.split(b"\n")
        return self._rows[index]


class StoredRecord(msgspec.Struct, gc=False):
    """One record as committed: its kind, digest, id, line and file. ``run_id`` and
    ``by`` are read with the id (``None`` when absent or not text); the line is
    held (``line``) or found in its file's lines when asked for (``rows`` and its
    ``index`` there), and the whole record is parsed on first use of
    :attr:`record`. A struct, not a class: a gate reads every record of two
    revisions, and a struct is made in C and never scanned by the garbage
    collector (it holds no cycle: text, bytes, and the record parsed from its
    own line)."""

    kind: str
    digest: str
    record_id: str
    run_id: str | None
    by: str | None
    path: str
    line: bytes | None = None
    rows: _Rows | None = None
    index: int = 0
    parsed: dict[str, Any] | None = None

    @classmethod
    def of(
        cls,
        kind: str,
        digest: str,
        ids: Any,
        raw: bytes,
        path: str,
        record: dict[str, Any] | None = None,
    ) -> StoredRecord:
        """The record of line ``raw`` whose ids (``record_id``, ``run_id``, ``by``)
        were read as ``ids``."""
        run_id, by = ids.run_id, ids.by
        return cls(
            kind,
            digest,
            ids.record_id,
            run_id if type(run_id) is str else None,
            by if type(by) is str else None,
            path,
            raw,
            parsed=record,
        )

    @property
    def raw(self) -> bytes:
        """The record's line, without its newline."""
        if self.line is not None:
            return self.line
        assert self.rows is not None  # made with one or the other
        return self.rows[self.index]

    @property
    def record(self) -> dict[str, Any]:
        if self.parsed is None:
            self.parsed = orjson.loads(lines.split(self.raw)[0])
        return self.parsed

    def moved(self, path: str) -> StoredRecord:
        """The same record, found in a file at ``path``."""
        return msgspec.structs.replace(self, path=path)


class _Ids(msgspec.Struct, gc=False):
    """What is read of every line at once: the fields a reader looks records up by."""

    record_id: Any = None
    run_id: Any = None
    by: Any = None


class _WrittenIds(msgspec.Struct, gc=False):
    """The same, typed as a writer writes them, for a file read at once: a file with
    a line whose ids are not text is read line by line instead (the same answer)."""

    record_id: str
    run_id: str | None = None
    by: str | None = None


_decode_ids = msgspec.json.Decoder(_Ids).decode
_decode_ids_lines = msgspec.json.Decoder(_WrittenIds).decode_lines
_RECORD_ID, _RUN_ID, _BY = attrgetter("record_id"), attrgetter("run_id"), attrgetter("by")
_DIGEST = attrgetter("digest")


class FileProblem(NamedTuple):
    """A ledger file (or one of its lines) that is not what pmos writes."""

    kind: str
    path: str
    line: int | None
    problem: str

    def as_dict(self) -> dict[str, Any]:
        return self._asdict()


class Parsed(NamedTuple):
    records: list[StoredRecord]
    problems: list[FileProblem]


def parse_file(kind: str, path: str, content: bytes, *, strict: bool = True) -> Parsed:
    """The records of one committed ledger file, and what is wrong with it.

    ``strict`` (what a record added by a change must show): every line's digest
    is checked against its content and the record must be in canonical form, as a
    writer makes it. Otherwise (the base's files: its history, each checked in
    full when a change added it) a record is known by the digest its line states,
    and the lines are read in one pass."""
    name = posixpath.basename(path)
    out: list[StoredRecord] = []
    problems: list[FileProblem] = []
    loose = LOOSE.match(name)
    pack = PACK.match(name)
    if loose is None and pack is None:
        if name.startswith("."):
            return Parsed(out, problems)  # the folder's marker, .gitignore
        problems.append(
            FileProblem(kind, path, None, "a file pmos did not write sits in the ledger folder")
        )
        return Parsed(out, problems)
    if strict and pack is not None and hashlib.sha256(content).hexdigest() != pack.group(1):
        problems.append(FileProblem(kind, path, None, "the pack's content does not match its name"))
    prefix = LEDGER_KINDS[kind].id_prefix + "-"
    if not strict and pack is not None:
        bulk = _history(kind, path, content, prefix)
        if bulk is not None:
            return Parsed(bulk, problems)
    if not content.endswith(b"\n"):
        problems.append(FileProblem(kind, path, None, "the file does not end with a whole line"))
    rows = content.split(b"\n")
    if rows and rows[-1] == b"":
        rows.pop()
    start = 1 if pack is not None else 0  # a pack's first line is its header: never trusted
    if loose is not None and len(rows) != 1:
        problems.append(FileProblem(kind, path, None, "a loose record file holds one line"))
    for number, raw in enumerate(rows[start:], start=start + 1):
        ids: _Ids
        try:
            if strict:
                checked, digest = lines.check(raw)  # the digest is the content's
                record = lines.check_canonical(checked)
            else:
                _, digest = lines.split(raw)  # the digest the line states
                record = None
            ids = _decode_ids(raw)
        except (lines.LineError, msgspec.DecodeError) as exc:
            problems.append(FileProblem(kind, path, number, f"the record {exc}"))
            continue
        if loose is not None and digest != loose.group(2):
            problems.append(
                FileProblem(kind, path, number, "the file's name does not match its record")
            )
        record_id = ids.record_id
        if not (isinstance(record_id, str) and record_id.startswith(prefix)):
            problems.append(
                FileProblem(
                    kind,
                    path,
                    number,
                    f"the record id {record_id!r} is not one of the {kind} ledger ({prefix}...)",
                )
            )
            continue
        out.append(StoredRecord.of(kind, digest, ids, raw, path, record))
    return Parsed(out, problems)


def _history(kind: str, path: str, content: bytes, prefix: str) -> list[StoredRecord] | None:
    """The records of a pack of history (see :func:`parse_file`), read in a few C
    loops over the whole file (its lines are not split apart: see :class:`_Rows`);
    None when a line is not as a writer writes it (its digest is not where a
    writer puts it, its ids do not decode as text, its id names another ledger),
    so that each line is read alone and the bad ones reported."""
    start = content.find(b"\n") + 1  # after the header, never trusted
    stated = lines.stated_digests(content, start) if start else None
    if stated is None:
        return None
    try:
        ids = _decode_ids_lines(memoryview(content)[start:])
    except msgspec.DecodeError:
        return None
    if len(ids) != len(stated):  # decode_lines skips an empty line
        return None
    record_ids = list(map(_RECORD_ID, ids))
    if not all(map(str.startswith, record_ids, repeat(prefix))):
        return None
    rows = _Rows(content)
    return list(
        map(
            StoredRecord,
            repeat(kind),
            stated,
            record_ids,
            map(_RUN_ID, ids),
            map(_BY, ids),
            repeat(path),
            repeat(None),
            repeat(rows),
            count(1),  # the header is row 0
        )
    )


class BlobCache:
    """Ledger files parsed once per git object (the same blob at two revisions)."""

    def __init__(self, repo: Repository) -> None:
        self.repo = repo
        self._parsed: dict[tuple[str, str], Parsed] = {}
        #: Every blob read, by id, for a caller that writes the files out again.
        self.contents: dict[str, bytes] = {}

    def records(self, kind: str, sha: str) -> list[StoredRecord]:
        """The records of a blob parsed before as ``kind`` (none for one never parsed:
        not a regular file)."""
        parsed = self._parsed.get((kind, sha))
        return parsed.records if parsed is not None else []

    def fetch(self, entries: Iterable[TreeEntry]) -> None:
        """Read the blobs of ``entries`` not read yet, in one batch (one git process
        for every ledger of a revision, however many kinds); one a checkout holds
        at its path is read from there (:meth:`Repository.blobs`)."""
        at = {e.sha: e.path for e in entries if e.sha not in self.contents}
        self.contents.update(self.repo.blobs(at, at=at))

    def parse(
        self, kind: str, entries: Iterable[TreeEntry], *, strict: bool = True
    ) -> dict[str, Parsed]:
        """Each entry's parse, by path (blobs read in one batch). A blob parsed
        before is not parsed again (the same object is the same content)."""
        entries = [e for e in entries if e.kind == "blob"]
        self.fetch(e for e in entries if (kind, e.sha) not in self._parsed)
        contents = self.contents
        out: dict[str, Parsed] = {}
        for entry in entries:
            key = (kind, entry.sha)
            if key not in self._parsed:
                self._parsed[key] = parse_file(kind, entry.path, contents[entry.sha], strict=strict)
            parsed = self._parsed[key]
            if parsed.records and parsed.records[0].path != entry.path:
                parsed = Parsed(
                    [r.moved(entry.path) for r in parsed.records],
                    [p._replace(path=entry.path) for p in parsed.problems],
                )
            out[entry.path] = parsed
        return out


def changes(
    cache: BlobCache, base: Ledgers, head: Ledgers, kind: str
) -> tuple[dict[str, StoredRecord], dict[str, StoredRecord]]:
    """``(added, gone)`` of ``kind`` from ``base`` to ``head`` (both read through
    ``cache``): the records head holds and base does not, and those base holds and
    head does not, by digest, each in the order its revision lists it. Only the
    files that differ are looked through: a blob both revisions hold holds the
    same records in both (a record that moved, into a pack or another folder, is
    found through the digests all the same)."""
    before, after = base.records.get(kind, {}), head.records.get(kind, {})
    base_blobs = {e.sha for e in base.files.get(kind, {}).values()}
    head_blobs = {e.sha for e in head.files.get(kind, {}).values()}
    added = {
        r.digest: after[r.digest]
        for sha in _in_order(head.files.get(kind, {}), base_blobs)
        for r in cache.records(kind, sha)
        if r.digest not in before
    }
    gone = {
        r.digest: before[r.digest]
        for sha in _in_order(base.files.get(kind, {}), head_blobs)
        for r in cache.records(kind, sha)
        if r.digest not in after
    }
    return added, gone


def _in_order(files: Mapping[str, TreeEntry], other: set[str]) -> list[str]:
    """The blobs of ``files`` that ``other`` does not hold, in listing order, once each."""
    return list(dict.fromkeys(e.sha for e in files.values() if e.sha not in other))


def ledger_files(
    repo: Repository, commit: str, folders: Mapping[str, str]
) -> dict[str, list[TreeEntry]]:
    """Every file under each kind's folder (repository-relative) at ``commit``,
    at any depth. One ``ls-tree`` for all kinds."""
    wanted = {kind: folder.rstrip("/") for kind, folder in folders.items()}
    listing = repo.tree(commit, [f + "/" for f in wanted.values()]) if wanted else []
    out: dict[str, list[TreeEntry]] = {kind: [] for kind in wanted}
    for entry in listing:
        for kind, folder in wanted.items():
            if entry.path.startswith(folder + "/"):
                out[kind].append(entry)
                break
    return out


class Ledgers(NamedTuple):
    """A revision's ledgers: per kind the files by path, and the records by digest."""

    files: dict[str, dict[str, TreeEntry]]
    records: dict[str, dict[str, StoredRecord]]
    problems: list[FileProblem]

    def ids(self, kind: str) -> set[str]:
        return set(map(_RECORD_ID, self.records.get(kind, {}).values()))


def read_ledgers(
    cache: BlobCache, commit: str, folders: Mapping[str, str], *, strict: bool = True
) -> Ledgers:
    """Every record of each kind at ``commit`` (see the module docstring); ``strict``
    as :func:`parse_file` (a file parsed before, for another revision, is not
    parsed again)."""
    listed = ledger_files(cache.repo, commit, folders)
    files: dict[str, dict[str, TreeEntry]] = {}
    records: dict[str, dict[str, StoredRecord]] = {}
    problems: list[FileProblem] = []
    plain: dict[str, list[TreeEntry]] = {}
    for kind, entries in listed.items():
        files[kind] = {e.path: e for e in entries}
        plain[kind] = []
        for entry in entries:
            if entry.kind == "blob" and entry.mode in ("100644", "100755"):
                plain[kind].append(entry)
            else:
                problems.append(
                    FileProblem(
                        kind, entry.path, None, "not a regular file (a link or a submodule)"
                    )
                )
    cache.fetch(e for entries in plain.values() for e in entries)
    for kind, entries in plain.items():
        held: list[StoredRecord] = []
        for parsed in cache.parse(kind, entries, strict=strict).values():
            problems += parsed.problems
            held += parsed.records
        records[kind] = _by_digest(held)
    return Ledgers(files, records, problems)


def _by_digest(held: list[StoredRecord]) -> dict[str, StoredRecord]:
    """``held`` by digest, in order; of copies of one record (one loose, one packed)
    the first counts."""
    found = dict(zip(map(_DIGEST, held), held, strict=True))
    if len(found) != len(held):  # copies: the first of each stays
        found = {}
        for record in held:
            found.setdefault(record.digest, record)
    return found
