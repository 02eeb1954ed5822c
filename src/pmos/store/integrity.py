"""The one rule of which stored records count: every reader and ``verify`` apply it here.

Nothing committed vouches for itself, so every reader checks every record it
reads, in loose files and pack lines alike:

* the line carries its digest as its last field, and the digest is the tagged
  SHA-256 of the rest (:mod:`pmos.store.lines`);
* the rest is the record's canonical form (RFC 8785, :mod:`pmos.store.digest`):
  a record has one encoding, hence one identity;
* its record id names this ledger's kind, and its ``recorded_at`` is a time
  whose month is the bucket it sits in (and, for a loose file, whose day is its
  day folder, and whose time and digest are its file name);
* a pack's bytes hash to its name and its header is the one pmos writes for
  its bucket and record count (a pack that fails is left out whole: its lines
  cannot be told apart from an edit);
* within a ledger, records are ordered by (``recorded_at``, ``record_id``,
  digest), copies of one record (one digest, in two files) count once; records
  of one month that share a ``record_id`` are all left out (their order would
  be their digests', which a forger chooses), and a record whose ``record_id``
  an earlier month holds is left out.

A record that fails is not raised: it is left out, with the reason
:func:`scan` gives, which is the text ``pmos ledger verify`` reports. So
metrics, queue, board, gate, sync and verify agree on which records count.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import cache, partial
from itertools import pairwise, repeat
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from pmos._util.uncollected import uncollected
from pmos.store import linememo, lines
from pmos.store.digest import is_canonical, orjson_is_jcs
from pmos.store.earlier import EarlierIds, LeadingRun
from pmos.store.layout import (
    PACK,
    Bucket,
    Sources,
    loose_name,
    pack_names,
    place_of,
    relist_bucket,
)
from pmos.store.registry import LEDGER_KINDS

#: The pack format (the first line of every pack).
PACK_FORMAT = 2
Key = tuple[str, str]


class Stored(NamedTuple):
    """One record that counts: its order key, digest, line (no newline) and place."""

    key: Key
    digest: str
    raw: bytes
    file: str
    line: int | None  # the line of a pack (the header is line 1); None for a loose file
    pack: str | None  # the SHA-256 of the pack it was read from; None for a loose file


class Refused(NamedTuple):
    """A file or record left out, and why (the text ``pmos ledger verify`` reports)."""

    file: str
    line: int | None
    record_id: str | None
    problem: str


class PackRead(NamedTuple):
    """A pack as read: its path, the SHA-256 of the bytes read, and whether it counts.
    ``ordered``: its sound lines are in ledger order with no two sharing a record id
    or digest (as every pack pmos writes), so a month of this pack alone needs no
    sorting and holds no duplicate of its own."""

    path: Path
    sha: str
    ok: bool
    ordered: bool = False


_RECORD_ID = attrgetter("record_id")
_DIGEST = attrgetter("digest")
_KEY = attrgetter("recorded_at", "record_id")
#: A stored record's place in ledger order: (its key, its digest).
_ORDER = itemgetter(0, 1)


class WholePack(NamedTuple):
    """A month held by one pack alone whose every line counts, as this machine's memo
    of its line checks recalls it (:mod:`pmos.store.linememo`): its record lines,
    and each line's record id and digest decoded in one call. Readers decode such a
    month in one call too (:func:`pmos.store.read.batches`) instead of line by
    line: most of a large ledger's months are like this, and the calls per line
    cost more than the checks."""

    file: str
    sha: str
    #: The pack's record lines, each ending in a newline (its header left off): a
    #: view of the bytes read, not a copy of them.
    body: memoryview
    #: Each line's ``record_id`` and ``digest`` (as an object with those fields), in
    #: line order: all that the rule on ids repeated across months and the head
    #: ask of a month read whole. A line the memo recalls as sound has no
    #: ``digest`` field but its last, which is its content digest. None when the
    #: month was read for a reader that decodes its lines itself
    #: (:meth:`BucketScan.admit`).
    keys: list[Any] | None
    #: How many record lines it holds.
    records: int

    def content_digests(self) -> list[str]:
        """Each line's content digest."""
        return list(map(_DIGEST, self._keys()))

    def digests(self) -> Iterable[tuple[str, str]]:
        """``(content digest, record id)`` of each line."""
        keys = self._keys()
        return zip(map(_DIGEST, keys), map(_RECORD_ID, keys), strict=True)

    def _keys(self) -> list[Any]:
        if self.keys is None:
            raise ValueError("a month read for a reader that decodes its lines has no keys")
        return self.keys

    def entries(self) -> list[Stored]:
        """The month's records as :class:`Stored` entries (for readers that want them)."""
        rows = bytes(self.body).split(b"\n")
        rows.pop()
        decode = _key_decoder().decode
        out = []
        for n, raw in enumerate(rows, start=2):
            key = decode(raw)
            out.append(
                Stored(
                    (key.recorded_at, key.record_id),
                    raw[-66:-2].decode(),
                    raw,
                    self.file,
                    n,
                    self.sha,
                )
            )
        return out


class BucketScan:
    """One bucket's records that count (in ledger order), what was left out, its packs.

    ``whole`` is set when the month is one pack whose every line counts
    (:class:`WholePack`); its :attr:`stored` entries are then made only when
    asked for.

    A month read whole for a reader that decodes its lines itself (``scan(...,
    lazy=True)``) leaves one rule to that reader: a record whose id an earlier
    month holds is left out. Its lines are sound and no two share an id (the
    memo's word on these very bytes), so that rule is all that is left, and
    the reader applies it to each part of the month as it decodes it
    (:meth:`admit`); what it leaves out is in :attr:`late`. A month this
    machine's memo holds as repeating no earlier month's id (``word``,
    :mod:`pmos.store.earlier`) leaves the reader nothing: every line counts."""

    __slots__ = (
        "_admitted",
        "_pending",
        "_stored",
        "_word",
        "collector",
        "late",
        "name",
        "packs",
        "refused",
        "vanished",
        "whole",
    )

    def __init__(
        self,
        name: str,
        stored: list[Stored] | None,
        refused: list[Refused],
        packs: list[PackRead],
        vanished: bool = False,
        whole: WholePack | None = None,
        pending: EarlierIds | None = None,
        word: bool = False,
    ) -> None:
        self.name = name
        self._stored = stored
        self.refused = refused
        self.packs = packs
        #: A listed file was gone when read (a pack ran meanwhile).
        self.vanished = vanished
        self.whole = whole
        #: The earlier months' record ids (as hashes), while the rule on them is
        #: still to be applied to this month's lines (a lazy whole month); else None.
        self._pending = pending
        self._admitted = 0  # the month's lines the rule was applied to
        self._word = word
        #: Given the ids of each part :meth:`admit` counts whole (the memo of a run).
        self.collector: Callable[[Sequence[str]], None] | None = None
        #: Records left out by :meth:`admit` (or :attr:`stored`) of a lazy month.
        self.late: list[Refused] = []

    @property
    def on_word(self) -> bool:
        """Whether the month was counted whole on the memo's word that its run of
        packs repeats no id (:mod:`pmos.store.earlier`)."""
        return self._word

    @property
    def counted_whole(self) -> bool:
        """Whether the month was read whole with every line counted, its rule applied."""
        return self.whole is not None and self._stored is None and self._pending is None

    @property
    def pending(self) -> bool:
        """Whether the reader is to hand the month's lines to :meth:`admit` (the rule
        on earlier months' ids is left to it, or, on the memo's word, only the count)."""
        return self._pending is not None or self._word_left

    @property
    def _word_left(self) -> bool:
        """A lazy month counted on the memo's word whose lines are not all admitted."""
        whole = self.whole
        return (
            self._word
            and whole is not None
            and whole.keys is None
            and (self._admitted < whole.records)
        )

    @property
    def stored(self) -> list[Stored]:
        if self._stored is None:
            entries = [] if self.whole is None else self.whole.entries()
            seen, done = self._pending, self._admitted
            if seen is not None:  # the lines not admitted yet: the rule applied here
                kept = entries[:done]
                for entry in entries[done:]:
                    self._admit_one(seen, entry.key[1], entry.line, kept.append, entry)
                self._pending, self._admitted, entries = None, len(entries), kept
            elif self._word:  # every line counts: none is left to admit
                self._admitted = len(entries)
            self._stored = entries
        return self._stored

    def admit(self, rows: list[Any]) -> list[Any]:
        """The next of a lazy month's lines as the reader decoded them (each with a
        ``record_id``), in line order: those that count (every one, unless an
        earlier month holds its id: left out, in :attr:`late`)."""
        seen, start = self._pending, self._admitted
        if seen is None:
            if self._word_left:
                self._admitted += len(rows)
                return rows
            raise ValueError("admit: the month's record ids were checked already")
        self._admitted += len(rows)
        if self.whole is None or self._admitted >= self.whole.records:
            self._pending = None  # every line admitted
        ids = list(map(_RECORD_ID, rows))
        if seen.add_new(ids):
            if self.collector is not None:
                self.collector(ids)
            return rows
        kept: list[Any] = []
        for number, row in enumerate(rows, start=start + 2):
            self._admit_one(seen, row.record_id, number, kept.append, row)
        return kept

    def _admit_one(
        self, seen: EarlierIds, record_id: str, line: int | None, keep: Any, item: Any
    ) -> None:
        if seen.holds(record_id):
            file = "" if self.whole is None else self.whole.file
            self.late.append(Refused(file, line, record_id, EARLIER_MONTH))
            return
        seen.add(record_id)
        keep(item)


def pack_header(kind: str, bucket: str, records: int) -> bytes:
    """A pack's header line (without its newline): nothing but what its records fix."""
    return orjson.dumps(
        {"pmos_pack": PACK_FORMAT, "kind": kind, "bucket": bucket, "records": records}
    )


def check_record(kind: str, raw: bytes) -> tuple[str, dict[str, Any]]:
    """``(digest, record)`` of one stored line (no newline), every check of a
    record applied; :class:`~pmos.store.lines.LineError` says what is wrong."""
    try:
        body, digest = lines.check(raw)
    except lines.LineError as exc:
        raise lines.LineError(f"the record {exc}") from None
    try:
        record = lines.check_canonical(body)
    except lines.LineError as exc:
        raise lines.LineError(f"the record {exc}") from None
    prefix = LEDGER_KINDS[kind].id_prefix + "-"
    record_id = record.get("record_id")
    if not (type(record_id) is str and record_id.startswith(prefix)):
        raise lines.LineError(
            f"the record id {record_id!r} is not one of the {kind} ledger ({prefix}...): "
            "it was copied from another ledger or made by hand"
        )
    if type(record.get("recorded_at")) is not str:
        raise lines.LineError("the record has no recorded_at time")
    return digest, record


def _record_id(raw: bytes) -> str | None:
    try:
        found = orjson.loads(lines.split(raw)[0]).get("record_id")
    except (lines.LineError, orjson.JSONDecodeError, AttributeError):
        return None
    return found if isinstance(found, str) else None


def scan(
    sources: Sources,
    kind: str,
    *,
    skip: frozenset[str] = frozenset(),
    memo: Path | None = None,
    row: type | None = None,
    lazy: bool = False,
) -> Iterator[BucketScan]:
    """Every bucket of ``sources``, oldest first, with the rule applied (see the module
    docstring). Stray files are refused in the first bucket scanned (or an empty one).

    ``skip`` names packs (by the SHA-256 in their names) the caller holds already
    (``pmos sync``): they are not read, and their records are not yielded.
    ``memo`` is the folder of this machine's memo of pack line checks
    (:mod:`pmos.store.linememo`), or None to check every line.
    ``row`` is the type a month read whole decodes each line to (its
    :attr:`WholePack.keys`): a ``msgspec.Struct`` with ``record_id`` and
    ``digest``, and whatever else the caller reads of such a month in the same
    call (``pmos ledger verify``: what says whether a verdict cites evidence).
    ``lazy``: a month read whole is not decoded here; the reader decodes its lines
    and applies the rule on earlier months' ids to them (:meth:`BucketScan.admit`),
    so each line is parsed once, while it is in the processor's cache.
    """
    seen = EarlierIds()
    strays = [Refused(str(path), None, None, why) for path, why in sources.strays]
    buckets = sources.buckets
    run = LeadingRun(memo, kind, buckets, skip)
    with ThreadPoolExecutor(1, thread_name_prefix="pmos-read-ahead") as pool:
        ahead = ReadAhead(pool)
        for month, bucket in enumerate(buckets):
            if month == run.months:
                run.finish(seen)
            result = None
            if run.on_word(month):
                result = _scan_on_word(sources.folder, bucket, kind, memo, row, lazy, ahead.fetch)
                if result is None:  # not the month the memo speaks of: its word ends here
                    run.abandon(month, seen)
            if result is None:
                result = scan_bucket_whole(
                    sources.folder, bucket, kind, seen, skip, memo, row, lazy, ahead.fetch
                )
                if month < run.months:
                    _collect(run, month, result)
            if strays:
                result.refused[:0] = strays
                strays = []
            # The reader decodes this month while the next month's packs are read.
            ahead.start(_wanted(buckets[month + 1], skip) if month + 1 < len(buckets) else [])
            yield result
        run.finish(seen)
    if strays:
        yield BucketScan("", [], strays, [])


def _scan_on_word(
    folder: Path,
    bucket: Bucket,
    kind: str,
    memo: Path | None,
    row: type | None,
    lazy: bool,
    fetch: Fetch = None,
) -> BucketScan | None:
    """A month of a run the memo holds as repeating no id (:mod:`pmos.store.earlier`):
    its one pack read whole, every line counted. None when it is not read whole
    (its bytes are not the pack's name's, its lines are not recalled as sound, or
    the month changed meanwhile): the month is then read as any other."""
    (path,) = bucket.packs
    refused: list[Refused] = []
    pack, whole = _scan_pack(
        path, _fetched(path, fetch), bucket.name, kind, [], refused, memo, True, row, lazy
    )
    if whole is None or pack_names(folder, bucket.name) != frozenset((path.name,)):
        return None
    return BucketScan(bucket.name, None, refused, [pack], whole=whole, word=True)


def _collect(run: LeadingRun, month: int, result: BucketScan) -> None:
    """Hand a month of a run the memo does not hold to it: the ids it counts, when it
    was read whole (now, or part by part as its reader decodes it)."""
    whole = result.whole
    if whole is None or result.refused:
        run.spoil()
    elif result.pending:
        result.collector = partial(run.collect, month, whole.records)
    elif whole.keys is not None and result.counted_whole:
        run.collect(month, whole.records, list(map(_RECORD_ID, whole.keys)))
    else:
        run.spoil()


#: How many times a bucket is read again because a pack changed it meanwhile
#: (packs of one ledger run one at a time, so a second reading normally suffices).
RESCANS = 20


def scan_bucket_whole(
    folder: Path,
    bucket: Bucket,
    kind: str,
    seen: EarlierIds | None,
    skip: frozenset[str] = frozenset(),
    memo: Path | None = None,
    row: type | None = None,
    lazy: bool = False,
    fetch: Fetch = None,
) -> BucketScan:
    """:func:`scan_bucket`, read again while a ``pmos ledger pack`` running meanwhile
    changed the bucket, so a reader that takes no lock still sees every record of
    it once: a pack writes its new pack before it removes what it folded, so a
    file that vanished while being read, or a set of packs that differs after the
    reading from the one listed, means the listing is out of date, and the bucket
    is listed and read again (a record read from both a loose file and its new
    pack counts once: copies are one record)."""
    for _ in range(RESCANS):
        with uncollected():  # see pmos._util.uncollected: its entries hold no cycle
            result = scan_bucket(folder, bucket, kind, seen, skip, memo, row, lazy, fetch)
        listed = frozenset(p.name for p in bucket.packs)
        if not result.vanished and pack_names(folder, bucket.name) == listed:
            return result
        if seen is not None and not result.pending:  # forget what this reading counted
            for entry in result.stored:
                seen.discard(entry.key[1])
        bucket, fetch = relist_bucket(folder, bucket.name), None
    result.refused.append(
        Refused(
            str(folder / bucket.name),
            None,
            None,
            f"the month changed under {RESCANS} readings in a row (packs running one after "
            "another); its records as last read are shown",
        )
    )
    return result


def scan_bucket(
    folder: Path,
    bucket: Bucket,
    kind: str,
    seen: EarlierIds | None,
    skip: frozenset[str] = frozenset(),
    memo: Path | None = None,
    row: type | None = None,
    lazy: bool = False,
    fetch: Fetch = None,
) -> BucketScan:
    """One bucket (see :func:`scan`); ``seen`` carries the record ids of older buckets.
    With ``seen`` None, records are only de-duplicated by digest (``pmos ledger pack``
    keeps both records of a repeated id: which one counts is the readers' rule).
    ``row``, ``lazy``: see :func:`scan`."""
    found: list[Stored] = []
    refused: list[Refused] = []
    read: list[PackRead] = []
    vanished = False
    alone = len(bucket.packs) == 1 and not bucket.loose
    for path in bucket.packs:
        match = PACK.match(path.name)
        if match is not None and match.group(1) in skip:
            continue
        pack, whole = _scan_pack(
            path,
            _fetched(path, fetch),
            bucket.name,
            kind,
            found,
            refused,
            memo,
            alone,
            row,
            lazy and seen is not None,
        )
        vanished = vanished or not pack.sha
        read.append(pack)
        if whole is not None:
            # The month is this pack alone, every line sound and in order with no
            # repeated id: only earlier months' ids are left to check.
            if seen is None:
                return BucketScan(bucket.name, None, refused, read, whole=whole)
            if whole.keys is None:  # checked by the reader as it decodes (admit)
                return BucketScan(bucket.name, None, refused, read, whole=whole, pending=seen)
            if seen.add_new(list(map(_RECORD_ID, whole.keys))):
                return BucketScan(bucket.name, None, refused, read, whole=whole)
            found += whole.entries()
    for rel in bucket.loose:
        present = _scan_loose(
            f"{folder}/{bucket.name}/{rel}", bucket.name, rel, kind, found, refused
        )
        vanished = vanished or not present
    if len(read) == 1 and read[0].ordered and not bucket.loose and not vanished:
        # One pack in ledger order with no repeated id (every pack pmos writes):
        # nothing to sort or de-duplicate within the month; its ids are checked
        # against earlier months' all at once.
        if seen is None:
            return BucketScan(bucket.name, found, refused, read)
        if seen.add_new([entry.key[1] for entry in found]):
            return BucketScan(bucket.name, found, refused, read)
    found.sort(key=_ORDER)
    # Copies of one record (one digest, hence one key, in two files) sort next to
    # each other: the first is taken.
    records: list[Stored] = []
    last = None
    for entry in found:
        if entry.digest != last:
            records.append(entry)
            last = entry.digest
    if seen is None:
        return BucketScan(bucket.name, records, refused, read, vanished)
    record_ids = [entry.key[1] for entry in records]
    if seen.add_new(record_ids):
        # No record id repeated, in this month or from an earlier one: all count.
        return BucketScan(bucket.name, records, refused, read, vanished)
    counted: list[Stored] = []
    # Of records that share a record_id within one month, none counts: which one
    # sorts first would be decided by their digests, which whoever made the second
    # can choose, so "the first" would let a forgery shadow the real record.
    carrying = Counter(record_ids)  # record id -> how many different records carry it
    for entry in records:
        record_id = entry.key[1]
        others = carrying[record_id]
        if others > 1:
            refused.append(
                Refused(
                    entry.file,
                    entry.line,
                    record_id,
                    f"duplicate record_id: {others} different records of {bucket.name} "
                    "carry it, so none counts",
                )
            )
            continue
        if seen.holds(record_id):
            refused.append(Refused(entry.file, entry.line, record_id, EARLIER_MONTH))
            continue
        seen.add(record_id)
        counted.append(entry)
    return BucketScan(bucket.name, counted, refused, read, vanished)


#: Why a record whose id an earlier month holds is left out.
EARLIER_MONTH = "duplicate record_id: an earlier month holds a record with this id"


def newest_in_bucket(
    folder: Path, bucket: Bucket, kind: str, memo: Path | None = None
) -> Iterator[Stored]:
    """One bucket's records that count, newest first, read lazily: the writers'
    look-ups (:func:`pmos.store.read.newest_first`) stop at the record they want.

    A month of loose files only is not read whole: the month-duplicate rule needs
    every record's id, and those come from this machine's memo of them
    (:mod:`pmos.store.linememo`; a file's name carries its record's digest, and a
    file not in the memo is checked and added). A record is checked in full when
    it is reached, and so is every file whose record shares its id, so the rule is
    exactly :func:`scan_bucket`'s. A bucket with a pack is scanned whole. The
    rule on a record id an earlier month holds is not applied here: a look-up
    that stops early has not read those months (``verify`` and the forward
    readers apply it).
    """
    if bucket.packs:
        yield from reversed(scan_bucket_whole(folder, bucket, kind, EarlierIds(), memo=memo).stored)
        return
    given: set[str] = set()
    try:
        for entry in _newest_loose(folder, bucket, kind, memo):
            given.add(entry.digest)
            yield entry
    except _Vanished:
        # A pack folded the month meanwhile: the rest comes from the month as it is now.
        now = scan_bucket_whole(
            folder, relist_bucket(folder, bucket.name), kind, EarlierIds(), memo=memo
        )
        yield from (entry for entry in reversed(now.stored) if entry.digest not in given)


class _Vanished(Exception):
    """A loose file listed a moment ago is gone (``pmos ledger pack`` folded it)."""


def _newest_loose(folder: Path, bucket: Bucket, kind: str, memo: Path | None) -> Iterator[Stored]:
    """:func:`newest_in_bucket` for a month of loose files only."""
    ids = linememo.load_ids(memo, kind, bucket.name)
    files_of: dict[str, list[str]] = {}
    checked: dict[str, Stored | None] = {}
    learned = False
    for rel in bucket.loose:
        digest = rel[-5 - 64 : -5]  # DD/<stamp>-<digest>.json
        files_of.setdefault(digest, []).append(rel)
        if digest not in ids:
            entry = checked[rel] = _check_loose(folder, bucket.name, rel, kind)
            if entry is not None:
                ids[entry.digest] = entry.key
                learned = True
    if learned:
        linememo.save_ids(memo, kind, bucket.name, ids)
    digests_of: dict[str, set[str]] = {}
    for digest in files_of:
        key = ids.get(digest)
        if key is not None:  # None: no file of that name holds a sound record
            digests_of.setdefault(key[1], set()).add(digest)

    def sound(digest: str) -> Stored | None:
        """The first file of ``digest`` that passes every check (copies count once)."""
        for rel in files_of[digest]:
            if rel not in checked:
                checked[rel] = _check_loose(folder, bucket.name, rel, kind)
            if checked[rel] is not None:
                return checked[rel]
        return None

    for key, digest in sorted(((ids[d], d) for d in files_of if d in ids), reverse=True):
        entry = sound(digest)
        if entry is None:
            continue
        if len(digests_of[key[1]]) > 1 and any(
            sound(other) is not None for other in digests_of[key[1]] if other != digest
        ):
            continue  # another record of this month carries its id: none counts
        yield entry


def _check_loose(folder: Path, bucket: str, rel: str, kind: str) -> Stored | None:
    """The loose file ``rel`` of ``bucket`` as a record that passes every check, or None."""
    found: list[Stored] = []
    if not _scan_loose(f"{folder}/{bucket}/{rel}", bucket, rel, kind, found, []):
        raise _Vanished(rel)
    return found[0] if found else None


def _scan_loose(
    path: str, bucket: str, rel: str, kind: str, found: list[Stored], refused: list[Refused]
) -> bool:
    """Read one loose file into ``found`` or ``refused``; False when it was gone
    (folded into a pack meanwhile: :func:`scan_bucket_whole` reads the bucket again).
    ``path`` is a string, the folder, month and ``rel`` joined: a month holds
    thousands of loose files, and a ``Path`` made per file cost a third of
    reading it."""
    try:
        data = _read(path)
    except FileNotFoundError:
        return False
    raw = data[:-1]
    try:
        if not data.endswith(b"\n") or b"\n" in raw:
            raise lines.LineError("a record file holds exactly one line")
        digest, record = check_record(kind, raw)
        at = record["recorded_at"]
        if rel.rpartition("/")[2] != loose_name(record, digest):
            raise lines.LineError(
                "the file's name does not carry its record's time and digest: it was renamed"
            )
        place = place_of(at)
        if place is None or f"{place[0]}/{place[1]}" != f"{bucket}/{rel.split('/', 1)[0]}":
            raise lines.LineError(
                f"the record was recorded at {at}, not on the day of the folder "
                f"{bucket}/{rel.split('/', 1)[0]}: it was moved"
            )
    except lines.LineError as exc:
        refused.append(Refused(path, None, _record_id(raw), str(exc)))
        return True
    found.append(Stored((at, record["record_id"]), digest, raw, path, None, None))
    return True


def _read(path: Path | str) -> bytes:
    """A file's bytes, read in one call into one buffer of its size (no copy of chunks)."""
    with open(path, "rb", buffering=0) as handle:
        return handle.readall()


#: What reads a pack for a scan (:meth:`ReadAhead.fetch`); None: :func:`fetch_pack`.
Fetch = Callable[[Path], "tuple[bytes, str] | None"] | None


def fetch_pack(path: Path) -> tuple[bytes, str] | None:
    """A pack's bytes and their SHA-256; None when it is gone (replaced by a pack
    that ran meanwhile)."""
    try:
        data = _read(path)
    except FileNotFoundError:
        return None
    return data, hashlib.sha256(data).hexdigest()


def _fetched(path: Path, fetch: Fetch) -> tuple[bytes, str] | None:
    return fetch_pack(path) if fetch is None else fetch(path)


def _wanted(bucket: Bucket, skip: frozenset[str]) -> list[Path]:
    """The packs of ``bucket`` a scan reads (not those ``skip`` names)."""
    return [
        path
        for path in bucket.packs
        if (match := PACK.match(path.name)) is None or match.group(1) not in skip
    ]


class ReadAhead:
    """The next month's packs, read and hashed in a second thread while the reader
    decodes this month's. Reading a file and hashing it let go of the
    interpreter's lock, so they run on the other core (a pack is one hand-over
    each way, not one a line); on the 1M + 1M kit that is 0.7 s of a 7 s
    ``pmos metrics`` (DECISIONS.md D47). At most one month is read ahead: what
    was read ahead and not asked for is dropped when the next is started."""

    def __init__(self, pool: ThreadPoolExecutor) -> None:
        self._pool = pool
        self._ahead: dict[Path, Future[tuple[bytes, str] | None]] = {}

    def start(self, paths: list[Path]) -> None:
        """Read ``paths`` ahead."""
        self._ahead = {path: self._pool.submit(fetch_pack, path) for path in paths}

    def fetch(self, path: Path) -> tuple[bytes, str] | None:
        """``path``'s bytes and their SHA-256: as read ahead, or read now."""
        future = self._ahead.pop(path, None)
        return fetch_pack(path) if future is None else future.result()


def _scan_pack(
    path: Path,
    fetched: tuple[bytes, str] | None,
    bucket: str,
    kind: str,
    found: list[Stored],
    refused: list[Refused],
    memo: Path | None = None,
    alone: bool = False,
    row: type | None = None,
    lazy: bool = False,
) -> tuple[PackRead, WholePack | None]:
    """Read one pack into ``found`` or ``refused``. When it is ``alone`` in its month
    and the memo recalls every line of its bytes as sound and in order, nothing is
    added to ``found``: the pack is returned whole (:class:`WholePack`), its lines
    decoded to ``row`` unless ``lazy`` (the reader decodes them)."""
    if fetched is None:
        return PackRead(path, "", False), None  # replaced by a pack that ran meanwhile
    data, sha = fetched
    match = PACK.match(path.name)
    file = str(path)
    if match is None or match.group(1) != sha:
        refused.append(
            Refused(
                file,
                None,
                None,
                "the pack's content does not match its name: it was edited, cut or replaced",
            )
        )
        return PackRead(path, sha, False), None
    known = linememo.load_pack(memo, sha, kind, bucket)
    if known is not None and alone and known[1] and not known[0] and data.endswith(b"\n"):
        # Every line recalled as sound: the month is taken whole, its lines never split
        # (nor counted apart: the header names their number, and one is decoded a line).
        body_at = data.index(b"\n") + 1
        claimed = _claimed(data[: body_at - 1])
        if claimed > 0 and data[: body_at - 1] == pack_header(kind, bucket, claimed):
            body = memoryview(data)[body_at:]
            if lazy:
                # Its lines are decoded by the reader. Their count is the header's:
                # the memo holds these bytes as checked, and a pack whose header names
                # another count than its lines fails that check.
                return PackRead(path, sha, True, True), WholePack(file, sha, body, None, claimed)
            keys = _keys(body, claimed, row)
            if keys is not None:
                return PackRead(path, sha, True, True), WholePack(file, sha, body, keys, claimed)
    rows = data.split(b"\n")
    count = len(rows) - 2  # record lines: the header and what follows the last newline left out
    if not data.endswith(b"\n") or count < 1:
        refused.append(Refused(file, None, None, "the pack does not end with a complete line"))
        return PackRead(path, sha, False), None
    if rows[0] != pack_header(kind, bucket, count):
        refused.append(
            Refused(
                file,
                1,
                None,
                f"not a {kind} pack header of bucket {bucket} for {count} records "
                f"(a pack's first line is {pack_header(kind, bucket, count).decode()})",
            )
        )
        return PackRead(path, sha, False), None
    keep = found.append
    rows.pop()
    body = memoryview(data)[len(rows[0]) + 1 :]
    if known is not None and _recall(rows, body, known[0], file, sha, keep, refused):
        return PackRead(path, sha, True, known[1]), None
    start = len(found)
    failed: linememo.Refusals = {}
    fast = _fast_check(kind, bucket)
    for number, raw in enumerate(rows[1:], start=2):
        checked = fast(raw)
        if checked is None:  # something is wrong: the full check says what
            try:
                digest, record = check_record(kind, raw)
                at = record["recorded_at"]
                if not at.startswith(bucket) or place_of(at) is None:
                    raise lines.LineError(
                        f"the record was recorded at {at}, not in the pack's month {bucket}"
                    )
            except lines.LineError as exc:
                failed[number] = (_record_id(raw), str(exc))
                refused.append(Refused(file, number, *failed[number]))
                continue
            checked = ((at, record["record_id"]), digest)
        keep(Stored(checked[0], checked[1], raw, file, number, sha))
    ordered = _in_order(found[start:])
    linememo.save_pack(memo, sha, kind, bucket, failed, ordered)
    return PackRead(path, sha, True, ordered), None


def _claimed(header: bytes) -> int:
    """The number of records a pack's header line names (0 when it names none)."""
    try:
        claimed = orjson.loads(header).get("records")
    except (orjson.JSONDecodeError, AttributeError):
        return 0
    return claimed if type(claimed) is int else 0


def _keys(body: memoryview, count: int, row: type | None) -> list[Any] | None:
    """The ``record_id`` and ``digest`` (and what else ``row`` has) of each of a
    recalled pack's ``count`` lines, decoded in one call (each line's time is
    decoded only if its entry is asked for); None when a line does not decode to
    one, or the lines are not ``count`` (a damaged memo: every line is checked)."""
    try:
        keys: list[Any] = _id_decoder(row).decode_lines(body)
    except ValueError:  # msgspec's DecodeError and ValidationError are ValueErrors
        return None
    return keys if len(keys) == count else None


def _in_order(entries: list[Stored]) -> bool:
    """Whether ``entries`` are in strict ledger order and no two share a record id."""
    order = [(e.key, e.digest) for e in entries]
    unique = len({e.key[1] for e in entries}) == len(entries)
    return unique and all(a < b for a, b in pairwise(order))


def _recall(
    rows: list[bytes],
    body: memoryview,
    known: linememo.Refusals,
    file: str,
    sha: str,
    keep: Any,
    refused: list[Refused],
) -> bool:
    """The lines of a pack whose bytes this machine checked before: the lines that
    failed fail again with the same reason, the others are taken with their order
    key and digest read from the line (both checked then); when none failed, every
    line's are decoded in one call (``body``: the lines of ``rows`` but the header).
    False (nothing taken) when a line is not what the memo says (a damaged memo):
    the caller then checks every line."""
    decoder = _key_decoder()
    decode = decoder.decode
    taken: list[Stored] = []
    try:
        if not known:
            keys = decoder.decode_lines(body)
            if len(keys) != len(rows) - 1:
                return False
            taken = list(
                map(
                    Stored,
                    map(_KEY, keys),
                    map(_DIGEST, keys),
                    rows[1:],
                    repeat(file),
                    range(2, len(rows) + 1),
                    repeat(sha),
                )
            )
        for number, raw in enumerate(rows[1:] if known else (), start=2):
            bad = known.get(number)
            if bad is not None:
                continue
            row = decode(raw)
            taken.append(
                Stored(
                    (row.recorded_at, row.record_id), raw[-66:-2].decode(), raw, file, number, sha
                )
            )
    except (ValueError, UnicodeDecodeError):
        return False
    if any(number < 2 or number > len(rows) for number in known):
        return False
    for number, (record_id, problem) in sorted(known.items()):
        refused.append(Refused(file, number, record_id, problem))
    for entry in taken:
        keep(entry)
    return True


@cache
def _id_decoder(row: type | None) -> Any:
    """A decoder of a line to ``row`` (by default its ``record_id`` and ``digest`` only)."""
    import msgspec  # loaded by the first pack read from the memo, not by every command

    class LineId(msgspec.Struct, gc=False):
        record_id: str
        digest: str

    return msgspec.json.Decoder(LineId if row is None else row)


@cache
def _key_decoder() -> Any:
    """A decoder of a line's order key (``recorded_at``, ``record_id``) and digest only."""
    import msgspec  # loaded by the first pack read from the memo, not by every command

    class LineKey(msgspec.Struct, gc=False):
        recorded_at: str
        record_id: str
        digest: str

    return msgspec.json.Decoder(LineKey)


def _fast_check(kind: str, bucket: str) -> Any:
    """:func:`check_record` plus the pack's month, for a sound line only: the same
    checks, inlined (a pack line is checked on every read, and the calls cost more
    than the checks). Returns ``(key, digest)``, or None when any check fails, so
    that :func:`check_record` says what is wrong (it is the authority)."""
    check, line_error = lines.check, lines.LineError
    loads, dumps, sort = orjson.loads, orjson.dumps, orjson.OPT_SORT_KEYS
    plain, exact = orjson_is_jcs, is_canonical
    prefix = LEDGER_KINDS[kind].id_prefix + "-"
    month = bucket + "-"
    place = place_of

    def fast(raw: bytes) -> tuple[Key, str] | None:
        try:
            body, digest = check(raw)
        except line_error:
            return None
        try:
            record = loads(body)
            again = dumps(record, option=sort)
        except (orjson.JSONDecodeError, TypeError, orjson.JSONEncodeError):
            return None
        if type(record) is not dict or "digest" in record:
            return None
        if not (again == body if plain(again) else exact(body, record)):
            return None
        record_id, at = record.get("record_id"), record.get("recorded_at")
        if type(record_id) is not str or not record_id.startswith(prefix):
            return None
        if type(at) is not str or not at.startswith(month) or place(at) is None:
            return None
        return (at, record_id), digest

    return fast
