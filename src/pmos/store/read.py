"""Reading records: every reader of every package gets its records here.

Readers never see files. They ask for the records of a kind, oldest first or
newest first, typed by the kind's schema (:mod:`pmos.store.rows`), and get
only the records that count by the store's one rule (:mod:`pmos.store.integrity`):
every line checked against its digest and canonical form, copies counted
once, a second record with a ``record_id`` left out. A record that fails is
not raised: it is left out, and reported to ``excluded`` with the reason
``pmos ledger verify`` gives.

Order is by meaning, not by file position: records sort by recorded time, then
record id, then digest, so every clone gives the same answer to "the latest
verdict of a run" whatever order its files were merged in.

Readers that light a gate pass a ``screen`` (:mod:`pmos.store.screening`):
records that break a writer's rule are then left out too and reported to
``excluded``. Every record is screened; a pack's outcome may be remembered in
a cache outside the repository (:mod:`pmos.store.screencache`), which nothing
committed can fill.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Collection, Iterator
from functools import cache
from itertools import islice
from pathlib import Path
from typing import Any

import orjson

from pmos.errors import BadInput
from pmos.store import integrity, lines, screencache
from pmos.store.earlier import EarlierIds
from pmos.store.integrity import BucketScan, Refused, Stored, WholePack
from pmos.store.layout import Store
from pmos.store.screening import Excluded, Exclusion, Screen, screen_record

#: More records than any ledger holds; a larger --last is a typo.
MAX_LAST = 1_000_000_000
#: Fields that tie a record to a run; a task names the run it came from.
RUN_FIELDS = ("run_id", "parent_run_id")
#: The rule name of a record left out by the store's own rule (integrity, duplicates).
LEDGER_RULE = "ledger"
Key = integrity.Key


def refusal(kind: str, refused: Refused) -> Exclusion:
    """A record (or file) the store's rule left out, as readers report it."""
    where = refused.file if refused.line is None else f"{refused.file}:{refused.line}"
    return Exclusion(kind, refused.record_id, LEDGER_RULE, refused.problem, where)


# ---------------------------------------------------------------- oldest first


def records(
    store: Store,
    kind: str,
    *,
    row: type | None = None,
    plain: bool = False,
    screen: Screen | None = None,
    excluded: Excluded | None = None,
) -> Iterator[Any]:
    """Every record of ``kind`` that counts, oldest first.

    By default each is a dict checked against the kind's schema types;
    ``row`` decodes just the fields of a row type (:func:`pmos.store.rows.row_type`);
    ``plain`` skips the type check, for code that only displays records.
    What is left out (the store's rule; with a ``screen``, a writer's rule) is
    reported to ``excluded``.
    """
    for batch in batches(store, kind, row=row, plain=plain, screen=screen, excluded=excluded):
        yield from batch


class Sieve:
    """A reader's screening of one kind: every record checked against the writers'
    rules, a pack's outcome taken from the cache when it holds there, and a loose
    record's too (:mod:`pmos.store.screencache`, keyed by the record's content
    digest as the integrity check verified it)."""

    def __init__(self, store: Store, kind: str, screen: Screen, excluded: Excluded) -> None:
        self.store, self.kind, self.screen, self.excluded = store, kind, screen, excluded
        self._ledgers: dict[str, str] = {}

    def failing(self, scanned: BucketScan) -> set[tuple[str, int | None]]:
        """The ``(file, line)`` of the bucket's records that break a rule (reported)."""
        out: set[tuple[str, int | None]] = set()
        by_pack: dict[str, list[Stored]] = {}
        loose: list[Stored] = []
        for entry in scanned.stored:
            if entry.pack is None:
                loose.append(entry)
            else:
                by_pack.setdefault(entry.pack, []).append(entry)
        todo: list[Stored] = []
        for sha, entries in by_pack.items():
            known = screencache.load(self.store.root, sha, self.screen)
            if known is None:
                found = self._screen(entries)
                screencache.save(
                    self.store.root,
                    sha,
                    self.screen,
                    {e.line: (x.record_id, x.rule, x.problem) for e, x in found},  # type: ignore[misc]
                    [e.line for e in entries],  # type: ignore[misc]
                )
                for entry, exclusion in found:
                    self._fail(entry, exclusion, out)
                continue
            checked, failed = known
            rest = [e for e in entries if e.line not in checked]
            for entry in entries:
                hit = failed.get(entry.line)  # type: ignore[arg-type]
                if hit is not None:
                    exclusion = Exclusion(self.kind, hit[0], hit[1], hit[2], _where(entry))
                    self._fail(entry, exclusion, out)
            todo += rest
        unknown = self._recalled(scanned.name, loose, out)
        found = self._screen(todo + unknown)
        for entry, exclusion in found:
            self._fail(entry, exclusion, out)
        if unknown:
            outcomes = {e.digest: (x.record_id, x.rule, x.problem) for e, x in found}
            transient = {d for d, o in outcomes.items() if self.screen.transient(o[1])}
            screencache.save_loose(
                self.store.root,
                self.kind,
                scanned.name,
                self.screen,
                self._ledger,
                {e.digest: outcomes.get(e.digest) for e in unknown if e.digest not in transient},
                {e.digest for e in loose},
            )
        return out

    def clean(self, whole: WholePack) -> bool:
        """Whether the cache holds, for this screen, that every line of a whole-pack
        month was checked and none breaks a rule (a miss: :meth:`failing` checks it)."""
        return screencache.clean(self.store.root, whole.sha, self.screen, whole.records)

    def _recalled(
        self, bucket: str, loose: list[Stored], out: set[tuple[str, int | None]]
    ) -> list[Stored]:
        """The loose records of ``bucket`` whose outcome the cache does not hold (to
        be screened, then remembered); the outcomes it holds are applied.

        An outcome is looked up by the digest the integrity check verified the
        record's bytes against, never by anything a file says of itself: a
        record edited on disk has another digest, and is screened again."""
        if not loose:
            return []
        known = screencache.load_loose(
            self.store.root, self.kind, bucket, self.screen, self._ledger
        )
        unknown = []
        for entry in loose:
            if entry.digest not in known:
                unknown.append(entry)
                continue
            outcome = known[entry.digest]
            if outcome is not None:
                exclusion = Exclusion(self.kind, outcome[0], outcome[1], outcome[2], _where(entry))
                self._fail(entry, exclusion, out)
        return unknown

    def _ledger(self, kind: str) -> str:
        """A fingerprint of ``kind``'s files as listed now (each file's path, size and
        modification time: a file's name names the digest of what it holds, and
        one edited in place changes its time), taken once per reader: what a loose
        record's remembered outcome checks the ledgers its checks read against
        (:func:`pmos.store.screencache.load_loose`)."""
        found = self._ledgers.get(kind)
        if found is None:
            sources = self.store.sources(kind)
            digest = hashlib.sha256()
            for bucket in sources.buckets:
                month = os.path.join(sources.folder, bucket.name)
                paths = [str(p) for p in bucket.packs]
                paths += [os.path.join(month, rel) for rel in bucket.loose]
                for path in paths:
                    try:
                        info = os.stat(path)
                        stamp = f"{info.st_size}:{info.st_mtime_ns}"
                    except OSError:
                        stamp = "gone"
                    digest.update(f"{path}\0{stamp}\n".encode("utf-8", "surrogateescape"))
            found = self._ledgers[kind] = digest.hexdigest()
        return found

    def _fail(self, entry: Stored, exclusion: Exclusion, out: set[tuple[str, int | None]]) -> None:
        self.excluded.add(exclusion)
        out.add((entry.file, entry.line))

    def _screen(self, entries: list[Stored]) -> list[tuple[Stored, Exclusion]]:
        if not entries:
            return []
        parsed = [orjson.loads(lines.split(e.raw)[0]) for e in entries]
        self.screen.prepare(self.kind, parsed)
        out = []
        for entry, record in zip(entries, parsed, strict=True):
            exclusion = screen_record(self.screen, self.kind, record, _where(entry))
            if exclusion is not None:
                out.append((entry, exclusion))
        return out


def scanned(store: Store, kind: str) -> Iterator[BucketScan]:
    """``kind``'s buckets, oldest first, with the store's rule applied (a pack's line
    checks recalled from this machine's memo of them, :mod:`pmos.store.linememo`)."""
    return integrity.scan(store.sources(kind), kind, memo=screencache.cache_folder(store.root))


def batches(
    store: Store,
    kind: str,
    *,
    row: type | None = None,
    plain: bool = False,
    screen: Screen | None = None,
    excluded: Excluded | None = None,
) -> Iterator[list[Any]]:
    """Like :func:`records`, in lists (one or more per bucket): the hot readers' way."""
    report = excluded if excluded is not None else Excluded()
    sieve = None if screen is None else Sieve(store, kind, screen, report)
    decode, errors = lines.decoder(kind, row, plain)
    decode_all = None if row is None else lines.lines_decoder(_with_id(row))
    memo = screencache.cache_folder(store.root)
    lazy = decode_all is not None
    for bucket in integrity.scan(store.sources(kind), kind, memo=memo, lazy=lazy):
        for refused in bucket.refused:
            report.add(refusal(kind, refused))
        whole = bucket.whole
        # A month that is one pack whose every line counts, and (with a screen) whose
        # every line the cache recalls as within the writers' rules: decoded here in
        # parts, each line parsed once, the rule on earlier months' ids applied to
        # each part as it is decoded (BucketScan.admit). A line that does not fit
        # the row is found by the line-by-line reading below, which says which.
        done = 0  # the month's lines yielded already
        if whole is not None and decode_all is not None and (sieve is None or sieve.clean(whole)):
            for part in _parts(whole.body):
                try:
                    rows = decode_all(part)
                except errors:
                    break
                done += len(rows)
                rows = bucket.admit(rows)
                _report_late(kind, bucket, report)
                yield rows
            else:
                continue
        failing = sieve.failing(bucket) if sieve is not None else ()
        batch: list[Any] = []
        for entry in islice(bucket.stored, done, None):
            if failing and (entry.file, entry.line) in failing:
                continue
            try:
                batch.append(decode(entry.raw))
            except errors as exc:
                report.add(
                    Exclusion(
                        kind, entry.key[1], "schema", lines.decode_problem(exc), _where(entry)
                    )
                )
            if len(batch) == BATCH_ROWS:
                yield batch
                batch = []
        _report_late(kind, bucket, report)
        if batch:
            yield batch


def _report_late(kind: str, bucket: BucketScan, report: Excluded) -> None:
    """Report what the rule on earlier months' ids left out of a lazy month so far."""
    for refused in bucket.late:
        report.add(refusal(kind, refused))
    bucket.late.clear()


@cache
def _with_id(row: type) -> type:
    """``row``, with a ``record_id`` if it has none: a month read whole is decoded
    by the reader, and the store's rule on ids repeated across months reads each
    line's id from the same decoding (:meth:`pmos.store.integrity.BucketScan.admit`)."""
    if "record_id" in row.__struct_fields__:  # type: ignore[attr-defined]
        return row
    # Deferred: msgspec (about 30 ms), on the first typed read only.
    import msgspec

    return msgspec.defstruct(
        row.__name__, [("record_id", str)], bases=(row,), kw_only=True, frozen=True, gc=False
    )


#: About how many bytes of records, and how many records, a batch holds: what a
#: reader folds while the rows it just decoded are still in the processor's cache.
#: Each pass a reader makes over a batch (one field after another) then reads
#: the cache, not memory; a whole month at a time (tens of megabytes) it did not.
BATCH_BYTES = 1 << 18
BATCH_ROWS = 1024


def _parts(body: bytes | memoryview, size: int = BATCH_BYTES) -> Iterator[memoryview]:
    """``body`` (whole lines) in parts of about ``size`` bytes, each of whole lines:
    views of it, not copies."""
    view = memoryview(body)
    start, end = 0, len(view)
    while start < end:
        cut = start + size
        while cut < end:  # to the end of the line the cut falls in
            found = bytes(view[cut : cut + 4096]).find(b"\n")
            if found >= 0:
                cut += found + 1
                break
            cut += 4096
        cut = min(cut, end)
        yield view[start:cut]
        start = cut


def _where(entry: Stored) -> str:
    return entry.file if entry.line is None else f"{entry.file}:{entry.line}"


def loose_values(store: Store, kind: str, field: str) -> set[str]:
    """The string values of ``field`` in ``kind``'s loose records that count: what a
    reader can ask of another ledger's reader before it reads its own records (the
    verdicts loose labels name)."""
    sources = store.sources(kind)
    found = set()
    seen = EarlierIds()
    for bucket in sources.buckets:
        if not bucket.loose:
            continue
        loose_only = bucket._replace(packs=[])
        for entry in integrity.scan_bucket(sources.folder, loose_only, kind, seen).stored:
            value = orjson.loads(lines.split(entry.raw)[0]).get(field)
            if isinstance(value, str):
                found.add(value)
    return found


def loose_recalled(store: Store, kind: str, screen: Screen) -> bool:
    """Whether the screening cache holds an outcome under ``screen`` for every loose
    record of ``kind``, each looked up by the digest its file's name carries: a
    reader then screens none of them, so what their screening would read need not
    be gathered before (:func:`pmos.calibration.pairs.read_and_pair`). A name is a
    safe key here: a file whose bytes do not hash to the digest its name carries is
    refused before any screening."""
    sieve = Sieve(store, kind, screen, Excluded())
    for bucket in store.sources(kind).buckets:
        if not bucket.loose:
            continue
        known = screencache.load_loose(store.root, kind, bucket.name, screen, sieve._ledger)
        if any(rel[-5 - 64 : -5] not in known for rel in bucket.loose):  # DD/<stamp>-<digest>.json
            return False
    return True


# ---------------------------------------------------------------- newest first


def newest_first(store: Store, kind: str, *, plain: bool = False) -> Iterator[dict[str, Any]]:
    """Every record of ``kind``, newest first, read bucket by bucket from the newest,
    and within a month of loose files record by record
    (:func:`pmos.store.integrity.newest_in_bucket`): a look-up of recent history
    reads only what it needs.

    Each bucket is read by the store's rule; a ``record_id`` repeated in an
    older month than the one being read is not known here (``pmos ledger
    verify`` and the forward readers see the whole ledger).
    """
    sources = store.sources(kind)
    memo = screencache.cache_folder(store.root)
    decode, errors = lines.decoder(kind, None, plain)
    for bucket in reversed(sources.buckets):
        for entry in integrity.newest_in_bucket(sources.folder, bucket, kind, memo):
            try:
                yield decode(entry.raw)
            except errors:
                continue  # left out, as the forward readers leave it out


# ---------------------------------------------------------------- display, identity


def stored_bytes(store: Store, kind: str) -> int:
    """How many bytes ``kind``'s files hold: a reader's cue that a ledger is large."""
    sources = store.sources(kind)
    total = 0
    for path in [*sources.packs, *sources.loose_paths()]:
        # A file folded by a pack that ran meanwhile: the reader will see the pack.
        with contextlib.suppress(FileNotFoundError):
            total += path.stat().st_size
    return total


def show(
    store: Store, kind: str, *, run_id: str | None = None, last: int | None = None
) -> Iterator[dict[str, Any]]:
    """Records for display, optionally only one run's, optionally only the last
    ``last`` of them (read from the end).

    Records are shown as stored, whether or not they fit their schema
    (``pmos ledger verify`` says which do not)."""

    def wanted(record: dict[str, Any]) -> bool:
        return run_id is None or any(record.get(f) == run_id for f in RUN_FIELDS)

    if last is None:
        return (r for r in records(store, kind, plain=True) if wanted(r))
    if not 1 <= last <= MAX_LAST:
        raise BadInput(f"--last must be from 1 to {MAX_LAST:,}; got {last}")
    recent = (r for r in newest_first(store, kind, plain=True) if wanted(r))
    kept: list[dict[str, Any]] = list(islice(recent, last))
    kept.reverse()
    return iter(kept)


def canonical_lines(store: Store, kind: str) -> Iterator[bytes]:
    """Every record of ``kind`` that counts, in ledger order, as one canonical JSON
    line each (the record without the store's digest field): ``pmos ledger show
    KIND --jsonl``, for tools that want a ledger as one JSONL file."""
    for bucket in scanned(store, kind):
        for entry in bucket.stored:
            yield lines.split(entry.raw)[0] + b"\n"


def records_with_digests(store: Store, kind: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every record of ``kind`` that counts, with its content digest
    (:mod:`pmos.store.digest`), oldest first, as stored (no type check)."""
    for batch in stored_lines(store, kind):
        for digest, body in batch:
            yield digest, orjson.loads(body)


#: One record as stored: its content digest and its canonical JSON (the line
#: without its digest field), the digest checked against the JSON.
StoredLine = tuple[str, bytes]


class StoredLines:
    """The records of one kind as stored, for a reader that copies them elsewhere.

    Iterating yields lists of :data:`StoredLine` of the records that count (the
    store's rule, :mod:`pmos.store.integrity`): no record is re-encoded, and the
    digest handed on is the one the store wrote and the reader checked.

    A caller that already holds every record of some packs (``pmos sync``
    remembers which packs it copied) names them in ``have``: a pack's name is
    the hash of its bytes, so a pack of that name holds exactly those records,
    and it is not read at all (its record count is taken from its header).
    ``packs`` names the packs read whole, ``held`` those left out, and
    ``have_records`` counts the records of these.
    """

    def __init__(self, store: Store, kind: str, have: Collection[str] = frozenset()) -> None:
        self.kind = kind
        self._root = store.root
        self._sources = store.sources(kind)
        self._have = frozenset(have)
        self.packs: list[str] = []
        self.held: list[str] = []
        self.have_records = 0
        for path in self._sources.packs:
            sha = path.name[len("pack-") : -len(".jsonl")]
            if sha in self._have:
                self.held.append(sha)
                self.have_records += _header_records(path)

    def __iter__(self) -> Iterator[list[StoredLine]]:
        memo = screencache.cache_folder(self._root)
        for bucket in integrity.scan(self._sources, self.kind, skip=self._have, memo=memo):
            self.packs += [p.sha for p in bucket.packs if p.ok]
            if bucket.whole is not None:
                yield from _whole_lines(bucket.whole)
                continue
            for start in range(0, len(bucket.stored), 4096):
                chunk = bucket.stored[start : start + 4096]
                yield [(e.digest, lines.split(e.raw)[0]) for e in chunk]


def _whole_lines(whole: integrity.WholePack) -> Iterator[list[StoredLine]]:
    """A month read whole as :data:`StoredLine` batches: each line's body is the line
    without its digest field, and its digest the one decoded with its id (the line
    checks this memo recalls found it to be the line's tail)."""
    rows = bytes(whole.body).split(b"\n")
    rows.pop()
    digests = whole.content_digests()
    cut = -lines.TAIL_LEN
    for start in range(0, len(rows), 4096):
        chunk = zip(digests[start : start + 4096], rows[start : start + 4096], strict=True)
        yield [(digest, raw[:cut] + b"}") for digest, raw in chunk]


def _header_records(path: Path) -> int:
    try:
        with open(path, "rb") as handle:
            return int(orjson.loads(handle.readline(4096)).get("records", 0))
    except (OSError, ValueError, AttributeError, TypeError):
        return 0


def stored_lines(store: Store, kind: str, *, have: Collection[str] = frozenset()) -> StoredLines:
    """``kind``'s records as checked ``(digest, canonical JSON)`` lines: :class:`StoredLines`."""
    return StoredLines(store, kind, have)
