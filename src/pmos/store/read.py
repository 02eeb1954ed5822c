"""Reading records: every reader of every package gets its records here.

Readers never see files. They ask for the records of a kind, oldest first or
newest first, typed by the kind's schema (:mod:`pmos.store.rows`), and get
them only after the store has checked them: a corrupt ledger raises
:class:`~pmos.errors.LedgerCorrupt` instead of yielding numbers.

Order is by meaning, not by file position: records sort by recorded time, then
record id, so every clone gives the same answer to "the latest verdict of a
run" whatever order its files were merged in. A record present in two files
(two branches packed the same loose records) is read once: copies have the
same key and the same digest, so they meet side by side in that order.

The common case is cheap: when the packs and the loose records do not overlap
in time, they are read one after the other, packs in large buffers decoded by
msgspec, with no per-record ordering work. Only after a merge of branches that
each packed (until the next ``pmos ledger pack``) are records merged by key.

Readers that light a gate pass a ``screen`` (:mod:`pmos.store.screening`):
records that break a writer's rule are then left out and reported to
``excluded``. A pack whose recorded screening still holds costs nothing more;
loose records, and packs whose screening is missing or stale, are checked here.
"""

from __future__ import annotations

import contextlib
import heapq
import os
from bisect import bisect_right
from collections.abc import Callable, Collection, Iterator
from functools import cache
from itertools import groupby, islice, pairwise
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from pmos.errors import BadInput, LedgerCorrupt
from pmos.store import chain, lines, packs
from pmos.store.append import loose_name
from pmos.store.digest import CHAIN_FIELDS, canonical, digest_bytes
from pmos.store.layout import LOOSE, Store, plain_paths
from pmos.store.screening import Excluded, Exclusion, Screen, screen_line

#: More records than any ledger holds; a larger --last is a typo.
MAX_LAST = 1_000_000_000
#: Fields that tie a record to a run; a task names the run it came from.
RUN_FIELDS = ("run_id", "parent_run_id")
Key = packs.Key


class Loose(NamedTuple):
    """One loose record file, read and checked."""

    key: Key
    digest: str
    raw: bytes
    path: Path


class Plan(NamedTuple):
    """How to read one kind: its files, and whether they can be read one after another."""

    legacy: Path | None
    packs: list[tuple[packs.Header, Path]]
    loose: list[Loose]
    ordered: bool


def plan(store: Store, kind: str) -> Plan:
    """List and order ``kind``'s files; loose records are read and checked here."""
    sources = store.sources(kind)
    headed = sorted(
        ((packs.read_header(p, kind), p) for p in sources.packs), key=lambda h: h[0].first
    )
    loose = sorted(read_loose(p) for p in sources.loose_paths())
    keys = [(h.first, h.last) for h, _ in headed] + [(e.key, e.key) for e in loose]
    ordered = all(a[1] < b[0] for a, b in pairwise(keys))
    return Plan(sources.legacy, headed, loose, ordered)


def read_loose(path: Path) -> Loose:
    """A loose record file's one line, checked against its content and its name."""
    return parse_loose(_file_bytes(path), path)[0]


class LooseRecord(NamedTuple):
    """One loose record file, read and checked, with its parsed record."""

    key: Key
    digest: str
    line: bytes  # the file's bytes: the record line, newline-terminated
    record: dict[str, Any]


def read_loose_many(folder: Path, names: list[str]) -> Iterator[LooseRecord]:
    """The loose files ``names`` of ``folder``, each read and checked as
    :func:`read_loose` does, with its parsed record, for a caller that needs
    both (``pmos ledger pack``).

    Files are opened by a plain string path and read with ``os.open``/``os.read``:
    for 100,000 files, a :class:`Path` per file and :meth:`Path.read_bytes` (a
    buffered file object and a stat per file) cost more than the checks. They
    are read :data:`_READ_BATCH` at a time and then checked: a system call
    between every two records' checks made the checks a quarter slower
    (the kernel evicts the caches they run in). Problems are raised in file
    order, as if each file were checked as it was read.
    """
    files = plain_paths(folder, names)
    for start in range(0, len(names), _READ_BATCH):
        batch = names[start : start + _READ_BATCH]
        datas = [_file_bytes_if_any(path) for path in files[start : start + _READ_BATCH]]
        for name, data in zip(batch, datas, strict=True):
            if data is None:
                raise _vanished(folder / name)
            try:
                digest, record = _check_loose(data, name)
            except lines.LineError as exc:
                raise LedgerCorrupt(str(folder / name), None, str(exc)) from None
            yield LooseRecord(packs.key_of(record), digest, data, record)


#: Loose files :func:`read_loose_many` reads before it checks them.
_READ_BATCH = 1024


def loose_values(store: Store, kind: str, field: str) -> set[str]:
    """The string values of ``field`` in ``kind``'s loose records: what a reader
    can ask of another ledger's reader before it reads its own records (the
    verdicts loose labels name). A damaged loose file is refused, as reading it
    would be."""
    sources = store.sources(kind)
    found = set()
    for loose in read_loose_many(sources.folder, sources.loose_names):
        value = loose.record.get(field)
        if isinstance(value, str):
            found.add(value)
    return found


def _file_bytes(path: str | Path) -> bytes:
    """A loose file's bytes, read with ``os.read`` (see :func:`read_loose_many`)."""
    data = _file_bytes_if_any(path)
    if data is None:
        raise _vanished(Path(path))
    return data


def _file_bytes_if_any(path: str | Path) -> bytes | None:
    """A loose file's bytes, or None when it is gone."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except FileNotFoundError:
        return None
    try:
        data = os.read(fd, _READ_SIZE)
        if len(data) == _READ_SIZE:  # a large record: read on to the end
            parts = [data]
            while part := os.read(fd, _READ_SIZE):
                parts.append(part)
            data = b"".join(parts)
    finally:
        os.close(fd)
    return data


_READ_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)
_READ_SIZE = 1 << 16


def _vanished(path: Path) -> LedgerCorrupt:
    return LedgerCorrupt(
        str(path), None, "the record file vanished while it was read (a pack ran); try again"
    )


def parse_loose(data: bytes, path: Path) -> tuple[Loose, dict[str, Any]]:
    """The checks of a loose file's bytes ``data`` (:func:`_check_loose`), as a
    :class:`Loose` and its parsed record; a damaged file raises LedgerCorrupt."""
    try:
        digest, record = _check_loose(data, path.name)
    except lines.LineError as exc:
        raise LedgerCorrupt(str(path), None, str(exc)) from None
    return Loose(packs.key_of(record), digest, data[:-1], path), record


def _check_loose(data: bytes, name: str) -> tuple[str, dict[str, Any]]:
    """``(digest, record)`` of a loose file's bytes ``data``, checked: exactly one
    line, matching its digest, a JSON object whose time and digest are the
    file's ``name``. :class:`~pmos.store.lines.LineError` says what is wrong."""
    raw = data[:-1]
    if not data.endswith(b"\n") or b"\n" in raw:
        raise lines.LineError("a record file holds exactly one line")
    try:
        body, digest = lines.check(raw)
        record = orjson.loads(body)
    except lines.LineError as exc:
        raise lines.LineError(f"the record {exc}") from None
    except orjson.JSONDecodeError as exc:
        raise lines.LineError(f"not valid JSON ({exc})") from None
    if type(record) is not dict or name != loose_name(record, digest):
        raise lines.LineError(
            "the file's name does not carry its record's time and digest: it was renamed"
        )
    return digest, record


def _loose_newest_first(paths: list[Path]) -> Iterator[tuple[Key, str, bytes, Path]]:
    """Loose records newest first, reading only as many files as the caller takes.

    A file's name starts with its record's time (checked by :func:`read_loose`),
    so names order the files; records of one instant are ordered by key.
    """
    named = sorted(((_stamp_of(p), p) for p in paths), reverse=True)
    for _, group in groupby(named, key=lambda item: item[0]):
        for entry in sorted((read_loose(p) for _, p in group), reverse=True):
            yield entry.key, entry.digest, entry.raw, entry.path


def _stamp_of(path: Path) -> str:
    match = LOOSE.match(path.name)
    return match.group(1) if match else ""


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
    """Every record of ``kind``, oldest first.

    By default each is a dict checked against the kind's schema types;
    ``row`` decodes just the fields of a row type (:func:`pmos.store.rows.row_type`);
    ``plain`` skips the type check, for code that only displays records.
    With a ``screen``, records that break a writer's rule are left out and
    reported to ``excluded``.
    """
    for batch in batches(store, kind, row=row, plain=plain, screen=screen, excluded=excluded):
        yield from batch


class _Sieve:
    """A reader's screening of one kind: what each pack recorded, and checks of the rest."""

    def __init__(self, kind: str, screen: Screen, excluded: Excluded) -> None:
        self.kind, self.screen, self.excluded = kind, screen, excluded

    def recorded(self, header: packs.Header) -> dict[int, tuple[str | None, str, str]] | None:
        """The failing lines a pack recorded, if its screening still holds (else None)."""
        checked = header.checked
        if checked is None or not self.screen.holds(checked.basis):
            return None
        return checked.failed

    def prepare(self, loose: list[Loose]) -> None:
        """Let the screen look up at once what the loose records' rules need."""
        found = []
        for entry in loose:
            try:
                found.append(orjson.loads(lines.split(entry.raw)[0]))
            except (lines.LineError, orjson.JSONDecodeError):
                continue  # refused when it is decoded
        self.screen.prepare(self.kind, found)

    def report_recorded(self, path: Path, failure: tuple[str | None, str, str]) -> None:
        record_id, rule, problem = failure
        self.excluded.add(Exclusion(self.kind, record_id, rule, problem, str(path)))

    def passes(self, raw: bytes, path: Path) -> bool:
        """Check one record line, which the decoder has already accepted (a line
        that is not a record of this ledger is refused, never merely left out)."""
        try:
            exclusion = screen_line(self.screen, self.kind, raw, str(path))
        except (lines.LineError, orjson.JSONDecodeError) as exc:
            raise LedgerCorrupt(str(path), None, f"the record {exc}") from None
        if exclusion is None:
            return True
        self.excluded.add(exclusion)
        return False


def batches(
    store: Store,
    kind: str,
    *,
    row: type | None = None,
    plain: bool = False,
    screen: Screen | None = None,
    excluded: Excluded | None = None,
) -> Iterator[list[Any]]:
    """Like :func:`records`, in lists: the hot readers' way (no per-record generator step)."""
    the_plan = plan(store, kind)
    sieve = None if screen is None else _Sieve(kind, screen, excluded or Excluded())
    if sieve is not None and the_plan.loose:
        sieve.prepare(the_plan.loose)
    decode, errors = lines.decoder(kind, row, plain)
    if the_plan.legacy is not None:
        yield from _legacy_batches(the_plan.legacy, kind, row, plain, sieve, decode, errors)
    if the_plan.ordered:
        for header, path in the_plan.packs:
            failed = None if sieve is None else sieve.recorded(header)
            if sieve is None or failed == {}:
                yield from _pack_batches(path, kind, row, plain, decode, errors)
            elif failed is None:
                yield from _checked_pack_batches(path, kind, sieve, decode, errors)
            else:
                yield from _skipping(
                    _pack_batches(path, kind, row, plain, decode, errors), failed, sieve, path
                )
        if the_plan.loose:
            decoded = [(e, _decode(e.raw, e.path, None, decode, errors)) for e in the_plan.loose]
            yield [item for e, item in decoded if sieve is None or sieve.passes(e.raw, e.path)]
        return
    recorded = {path: None if sieve is None else sieve.recorded(h) for h, path in the_plan.packs}
    batch: list[Any] = []
    for _, _, raw, path, offset, number in _merged(the_plan, kind):
        try:
            item = decode(raw)
        except errors as exc:
            line = None if offset is None else packs.line_number(path, offset)
            raise LedgerCorrupt(str(path), line, lines.decode_problem(exc)) from None
        if sieve is not None:
            failed = recorded.get(path)
            if failed is None:  # loose, or a pack whose screening does not hold
                if not sieve.passes(raw, path):
                    continue
            elif number in failed:
                sieve.report_recorded(path, failed[number])
                continue
        batch.append(item)
        if len(batch) >= 4096:
            yield batch
            batch = []
    if batch:
        yield batch


def _legacy_batches(
    path: Path,
    kind: str,
    row: type | None,
    plain: bool,
    sieve: _Sieve | None,
    decode: Callable[[bytes], Any],
    errors: tuple[type[Exception], ...],
) -> Iterator[list[Any]]:
    """An older kit's single-file ledger (until ``pmos ledger pack`` converts it)."""
    if sieve is None:
        legacy = chain.iter_records(path, kind, row=row, plain=plain)
        while batch := list(islice(legacy, 4096)):
            yield batch
        return
    batch = []
    for number, record in enumerate(chain.iter_records(path, kind, plain=True), start=1):
        raw = lines.encode({k: v for k, v in record.items() if k not in CHAIN_FIELDS})[0]
        raw = raw[:-1]
        item = _decode(raw, path, number, decode, errors)
        if sieve.passes(raw, path):
            batch.append(item)
        if len(batch) >= 4096:
            yield batch
            batch = []
    if batch:
        yield batch


def _checked_pack_batches(
    path: Path,
    kind: str,
    sieve: _Sieve,
    decode: Callable[[bytes], Any],
    errors: tuple[type[Exception], ...],
) -> Iterator[list[Any]]:
    """A pack whose recorded screening does not hold: every record checked here."""
    for offset, buf in packs.buffers(path, kind):
        batch = []
        for raw in buf.split(b"\n")[:-1]:
            try:
                item = decode(raw)
            except errors as exc:
                number = packs.line_number(path, offset + buf.index(raw + b"\n"))
                raise LedgerCorrupt(str(path), number, lines.decode_problem(exc)) from None
            if sieve.passes(raw, path):
                batch.append(item)
        yield batch


def _skipping(
    source: Iterator[list[Any]],
    failed: dict[int, tuple[str | None, str, str]],
    sieve: _Sieve,
    path: Path,
) -> Iterator[list[Any]]:
    """A pack's batches without the records its recorded screening failed (by line)."""
    numbers = sorted(failed)
    seen = 0
    for batch in source:
        start, seen = seen, seen + len(batch)
        hits = numbers[bisect_right(numbers, start) : bisect_right(numbers, seen)]
        if not hits:
            yield batch
            continue
        for n in hits:
            sieve.report_recorded(path, failed[n])
        drop = {n - start - 1 for n in hits}
        yield [item for i, item in enumerate(batch) if i not in drop]


def _decode(
    raw: bytes,
    path: Path,
    number: int | None,
    decode: Callable[[bytes], Any],
    errors: tuple[type[Exception], ...],
) -> Any:
    try:
        return decode(raw)
    except errors as exc:
        raise LedgerCorrupt(str(path), number, lines.decode_problem(exc)) from None


def _pack_batches(
    path: Path,
    kind: str,
    row: type | None,
    plain: bool,
    decode: Callable[[bytes], Any],
    errors: tuple[type[Exception], ...],
) -> Iterator[list[Any]]:
    many = lines.batch_decoder(kind, row) if row is not None else None
    for offset, buf in packs.buffers(path, kind):
        if many is not None:
            try:
                yield many(buf)
                continue
            except errors:
                pass  # find the line and say what is wrong with it, below
        batch = []
        for raw in buf.split(b"\n")[:-1]:
            try:
                batch.append(decode(raw))
            except errors as exc:
                number = packs.line_number(path, offset + buf.index(raw + b"\n"))
                raise LedgerCorrupt(str(path), number, lines.decode_problem(exc)) from None
        yield batch


@cache
def _key_decoder() -> Callable[[bytes], Any]:
    import msgspec

    class KeyRow(msgspec.Struct, gc=False):
        recorded_at: str = ""
        record_id: str = ""

    return msgspec.json.Decoder(KeyRow).decode


def _keyed_pack(path: Path, kind: str) -> Iterator[tuple[Key, str, bytes, Path, int, int]]:
    """A pack's records with their keys, digests, byte offsets and record numbers."""
    import msgspec

    key_of = _key_decoder()
    number = 0
    for offset, buf in packs.buffers(path, kind):
        start = offset
        for raw in buf.split(b"\n")[:-1]:
            try:
                k = key_of(raw)
                _, digest = lines.split(raw)
            except (msgspec.DecodeError, lines.LineError) as exc:
                number = packs.line_number(path, start)
                raise LedgerCorrupt(str(path), number, lines.decode_problem(exc)) from None
            number += 1
            yield (k.recorded_at, k.record_id), digest, raw, path, start, number
            start += len(raw) + 1


def _merged(
    the_plan: Plan, kind: str
) -> Iterator[tuple[Key, str, bytes, Path, int | None, int | None]]:
    """Every non-legacy record in key order, each digest once."""
    streams: list[Iterator[tuple[Key, str, bytes, Path, Any, Any]]] = [
        _keyed_pack(path, kind) for _, path in the_plan.packs
    ]
    streams.append(iter([(e.key, e.digest, e.raw, e.path, None, None) for e in the_plan.loose]))
    last: tuple[Key, str] | None = None
    for entry in heapq.merge(*streams, key=lambda e: (e[0], e[1])):
        if (entry[0], entry[1]) == last:
            continue
        last = (entry[0], entry[1])
        yield entry


# ---------------------------------------------------------------- newest first


def newest_first(store: Store, kind: str, *, plain: bool = False) -> Iterator[dict[str, Any]]:
    """Every record of ``kind``, newest first, read from the end: a look-up of recent
    history reads only as much of a large ledger as it needs."""
    sources = store.sources(kind)
    decode, errors = lines.decoder(kind, None, plain)
    streams: list[Iterator[tuple[Key, str, bytes, Path]]] = [
        _keyed_reversed(path, kind) for path in sources.packs
    ]
    streams.append(_loose_newest_first(sources.loose_paths()))
    last: tuple[Key, str] | None = None
    for key, digest, raw, path in heapq.merge(*streams, key=lambda e: (e[0], e[1]), reverse=True):
        if (key, digest) == last:
            continue
        last = (key, digest)
        yield _decode(raw, path, None, decode, errors)
    if sources.legacy is not None:
        yield from chain.iter_records_reversed(sources.legacy, kind, plain=plain)


def _keyed_reversed(path: Path, kind: str) -> Iterator[tuple[Key, str, bytes, Path]]:
    import msgspec

    key_of = _key_decoder()
    held: tuple[Key, str, bytes, Path] | None = None
    for raw in packs.lines_reversed(path, kind):
        try:
            k = key_of(raw)
        except msgspec.DecodeError as exc:
            raise LedgerCorrupt(str(path), None, lines.decode_problem(exc)) from None
        key = (k.recorded_at, k.record_id)
        # A pack is sorted with no repeats. Each record is handed on only once the
        # one before it is read and found older, so a reader that stops at its
        # first match (the latest verdict of a run) is never handed an older
        # record as the newer one.
        if held is not None:
            if key >= held[0]:
                raise LedgerCorrupt(
                    str(path), None, "records are out of order (or repeated) in the pack"
                )
            yield held
        held = (key, lines.split(raw)[1], raw, path)
    if held is not None:
        yield held


# ---------------------------------------------------------------- display, identity


def stored_bytes(store: Store, kind: str) -> int:
    """How many bytes ``kind``'s files hold: a reader's cue that a ledger is large."""
    sources = store.sources(kind)
    files = [*sources.packs, *sources.loose_paths(), *([sources.legacy] if sources.legacy else [])]
    total = 0
    for path in files:
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
    (``pmos ledger verify --schema`` says which do not)."""

    def wanted(record: dict[str, Any]) -> bool:
        return run_id is None or any(record.get(f) == run_id for f in RUN_FIELDS)

    if last is None:
        return (r for r in records(store, kind, plain=True) if wanted(r))
    if not 1 <= last <= MAX_LAST:
        raise BadInput(f"--last must be from 1 to {MAX_LAST:,}; got {last}")
    recent = (r for r in newest_first(store, kind, plain=True) if wanted(r))
    return reversed(list(islice(recent, last)))


def records_with_digests(store: Store, kind: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every record of ``kind`` with its content digest (:mod:`pmos.store.digest`),
    oldest first, each exactly once, as stored (no type check, no chain fields)."""
    for batch in stored_lines(store, kind):
        for digest, body in batch:
            yield digest, orjson.loads(body)


#: One record as stored: its content digest and its canonical JSON (the line
#: without its digest field), the digest checked against the JSON.
StoredLine = tuple[str, bytes]


class StoredLines:
    """The records of one kind as stored, for a reader that copies them elsewhere.

    Iterating yields lists of :data:`StoredLine`: no record is parsed or
    re-encoded, the digest handed on is the one the store wrote, and every
    line is checked before it is handed on (its digest against its content,
    its record id against the kind, a pack's bytes against its name, as the
    other readers check them). A damaged ledger raises
    :class:`~pmos.errors.LedgerCorrupt`.

    A caller that already holds every record of some packs (``pmos sync``
    remembers which packs it copied) names them in ``have``: a pack's name is
    the hash of its bytes, so a pack of that name holds exactly those records,
    and it is not read at all. ``packs`` names the packs that are read whole
    (all their records are yielded, or copies of them from another file),
    ``held`` those left out, and ``have_records`` counts the records of these.

    Records are oldest first when no pack is left out. Each record is yielded
    once, except a record both in an older kit's single file and in a pack, or
    repeated in a hand-made pack: a caller that must not see one twice keeps
    the digests it has seen.
    """

    def __init__(self, store: Store, kind: str, have: Collection[str] = frozenset()) -> None:
        self.kind = kind
        the_plan = plan(store, kind)
        read: list[tuple[packs.Header, Path]] = []
        held: list[tuple[packs.Header, Path]] = []
        for entry in the_plan.packs:
            # Packs that overlap are merged by key, copies meeting side by side; only
            # packs disjoint in time can be left out without changing what is yielded.
            wanted = not the_plan.ordered or packs.name_digest(entry[1]) not in have
            (read if wanted else held).append(entry)
        self._plan = the_plan._replace(packs=read)
        self.packs = [packs.name_digest(path) for _, path in read]
        self.held = [packs.name_digest(path) for _, path in held]
        self.have_records = sum(header.records for header, _ in held)

    def __iter__(self) -> Iterator[list[StoredLine]]:
        the_plan, kind = self._plan, self.kind
        if the_plan.legacy is not None:
            legacy = chain.iter_records(the_plan.legacy, kind, plain=True)
            while batch := list(islice(legacy, 4096)):
                bodies = [canonical(record) for record in batch]
                yield [(digest_bytes(body), body) for body in bodies]
        if the_plan.ordered:
            for _, path in the_plan.packs:
                for offset, buf in packs.buffers(path, kind):
                    yield _checked_buffer(buf, kind, path, offset)
            if the_plan.loose:
                yield _checked_loose([e.raw for e in the_plan.loose], kind, the_plan.loose)
            return
        batch: list[bytes] = []
        where: list[tuple[Path, int | None]] = []
        for _, _, raw, path, offset, _ in _merged(the_plan, kind):
            batch.append(raw)
            where.append((path, offset))
            if len(batch) >= 4096:
                yield _checked_lines(batch, kind, where)
                batch, where = [], []
        if batch:
            yield _checked_lines(batch, kind, where)


def stored_lines(store: Store, kind: str, *, have: Collection[str] = frozenset()) -> StoredLines:
    """``kind``'s records as checked ``(digest, canonical JSON)`` lines: :class:`StoredLines`."""
    return StoredLines(store, kind, have)


def _checked_buffer(buf: bytes, kind: str, path: Path, offset: int) -> list[StoredLine]:
    """A pack buffer's lines, each checked; a bad one is refused with its line number."""
    raws = buf.split(b"\n")
    raws.pop()  # the buffer ends with a newline
    try:
        out = lines.check_all(raws)
        lines.check_kind_all(kind, buf)
    except lines.LineError as exc:
        start = offset + sum(len(r) + 1 for r in raws[: exc.index or 0])
        raise LedgerCorrupt(
            str(path), packs.line_number(path, start), f"the record {exc}"
        ) from None
    return out


def _checked_loose(raws: list[bytes], kind: str, entries: list[Loose]) -> list[StoredLine]:
    """Loose records (their digests already checked by :func:`read_loose`), kind checked."""
    try:
        lines.check_kind_all(kind, b"\n".join(raws))
    except lines.LineError as exc:
        raise LedgerCorrupt(str(entries[exc.index or 0].path), None, f"the record {exc}") from None
    return [(e.digest, lines.split(e.raw)[0]) for e in entries]


def _checked_lines(
    raws: list[bytes], kind: str, where: list[tuple[Path, int | None]]
) -> list[StoredLine]:
    """Lines gathered from several files (a merge), each checked."""
    try:
        out = lines.check_all(raws)
        lines.check_kind_all(kind, b"\n".join(raws))
    except lines.LineError as exc:
        path, offset = where[exc.index or 0]
        number = None if offset is None else packs.line_number(path, offset)
        raise LedgerCorrupt(str(path), number, f"the record {exc}") from None
    return out
