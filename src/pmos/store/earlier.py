"""The record ids of earlier months: what the rule "a record whose ``record_id`` an
earlier month holds is left out" reads (:mod:`pmos.store.integrity` applies it).

A scan holds the ids of every month it has read as their hashes: a
million-record ledger's strings would cost more than all else a reader keeps.
Two ids are confused only if their 64-bit hashes collide, and Python keys its
string hash per process, so nobody can choose such a pair.

Hashing every id and adding it to a set of a million is still about a tenth of
``pmos metrics`` on a large kit, and most of it is spent on months that never
change: a large ledger is mostly a run of leading months each held by one
pack, and whether those months repeat an id is a function of those packs'
bytes. So this machine's memo (:func:`pmos.store.linememo.load_run`, outside
the work tree) keeps, for such a run of packs named by the SHA-256 of their
bytes, that its months repeat no id, and their ids, sorted. A scan that finds
the entry for the run it lists (:class:`LeadingRun`) counts each of those
months whole, as the line memo already lets it count each month's lines, and
asks the sorted ids (:meth:`EarlierIds.know`) whether a later record repeats
one. Every pack is still hashed as it is read: a pack whose bytes are not its
name's is refused as ever, and a month that is not read whole after all ends
the memo's word from that month on (:meth:`LeadingRun.abandon`). Nothing
committed can fill the memo; a missing or damaged entry is a miss, and the
scan that misses applies the rule id by id and writes the entry when the run
repeated no id (:meth:`LeadingRun.finish`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pmos.store import linememo
from pmos.store.layout import PACK, Bucket

if TYPE_CHECKING:  # numpy is loaded by a scan that uses the memo of a run, not by every command
    import numpy as np


class EarlierIds:
    """The record ids of the months a scan has read (see the module docstring)."""

    __slots__ = ("_hashes", "_known")

    def __init__(self) -> None:
        self._hashes: set[int] = set()
        #: The ids of leading months counted whole on the memo's word, sorted (UTF-8, a
        #: numpy bytes column), or None while there are none.
        self._known: np.ndarray | None = None

    def know(self, ids: np.ndarray) -> None:
        """Hold the sorted ids of the months counted whole on the memo's word."""
        self._known = ids if len(ids) else None

    def add_new(self, record_ids: Sequence[str]) -> bool:
        """Hold ``record_ids`` if none is held and none repeats, and say whether they
        were added (all or none)."""
        if self._known is not None and any(_in_sorted(self._known, record_ids)):
            return False
        return _add_new(self._hashes, list(map(hash, record_ids)))

    def holds(self, record_id: str) -> bool:
        """Whether an earlier month holds ``record_id``."""
        if hash(record_id) in self._hashes:
            return True
        return self._known is not None and _in_sorted(self._known, [record_id])[0]

    def add(self, record_id: str) -> None:
        self._hashes.add(hash(record_id))

    def discard(self, record_id: str) -> None:
        """Forget an id added by :meth:`add` or :meth:`add_new` (a month read again)."""
        self._hashes.discard(hash(record_id))


def _add_new(seen: set[int], hashes: list[int]) -> bool:
    """Add ``hashes`` to ``seen`` if none is in it and none repeats, and say whether
    they were added. One pass over the set, which a million-record ledger makes
    larger than the processor's caches: its symmetric difference grows it by
    ``len(hashes)`` exactly when none was in it, and is undone by a second one."""
    before = len(seen)
    seen.symmetric_difference_update(hashes)
    if len(seen) == before + len(hashes):
        return True
    seen.symmetric_difference_update(hashes)  # seen is as it was
    return False


def _utf8(record_id: str) -> bytes:
    return record_id.encode("utf-8", "surrogatepass")


def _storable(encoded: bytes, width: int) -> bool:
    """Whether an id's bytes fit a column of ``width`` bytes exactly: numpy pads with
    NUL and drops trailing NULs, so an id holding one is never in the column."""
    return len(encoded) <= width and b"\0" not in encoded


def _in_sorted(known: np.ndarray, record_ids: Sequence[str]) -> list[bool]:
    """Whether each of ``record_ids`` is among the sorted ids ``known``."""
    import numpy as np  # about 60 ms: loaded by a reader that recalls a run, not by writers

    width = known.dtype.itemsize
    encoded = list(map(_utf8, record_ids))
    fits = [i for i, value in enumerate(encoded) if _storable(value, width)]
    found = [False] * len(encoded)
    if fits:
        probe = np.array([encoded[i] for i in fits], dtype=known.dtype)
        at = np.minimum(np.searchsorted(known, probe), len(known) - 1)
        for i, hit in zip(fits, (known[at] == probe).tolist(), strict=True):
            found[i] = hit
    return found


class LeadingRun:
    """A scan's leading months that are each one pack and no loose file, and what
    this machine's memo says of them (see the module docstring).

    On a hit, :meth:`on_word` tells the scan which months to count whole without
    a look at their ids. On a miss, the scan hands each of those months' ids to
    :meth:`collect` as it counts them, and :meth:`finish` remembers the run when
    its months were each read whole, every line counted.
    """

    def __init__(
        self,
        memo: Path | None,
        kind: str,
        buckets: Sequence[Bucket],
        skip: frozenset[str],
    ) -> None:
        names: list[str] = []
        # A sync that skips the packs it holds reads no run whole.
        if memo is not None and not skip and len(buckets) < 2**16:
            for bucket in buckets:
                match = PACK.match(bucket.packs[0].name) if len(bucket.packs) == 1 else None
                if match is None or bucket.loose:
                    break
                names.append(f"{bucket.name} {match.group(1)}")
        self.months = len(names)
        self._memo = memo
        self._key = hashlib.sha256("\n".join([linememo.RULES, kind, *names]).encode()).hexdigest()
        self._known = linememo.load_run(memo, self._key, self.months) if names else None
        #: On a miss: per month of the run, its ids as counted (parts of them, each
        #: joined by newlines); None once one was not read whole.
        self._ids: list[list[str]] | None = None if self._known is not None else []
        #: On a miss: per month of the run, how many lines it holds.
        self._records: list[int] = []
        self._done = False

    def on_word(self, month: int) -> bool:
        """Whether month ``month`` (its place in the scan) is counted whole on the memo's word."""
        return self._known is not None and month < self.months

    def abandon(self, month: int, earlier: EarlierIds) -> None:
        """Month ``month`` was not read whole: the memo's word ends there. The months
        before it were counted on that word, so their ids become earlier ones."""
        if self._known is not None:
            ids, months = self._known
            earlier.know(ids[months < month])
        self._known, self._ids = None, None

    def collect(self, month: int, records: int, record_ids: Sequence[str]) -> None:
        """On a miss: ``record_ids`` counted in month ``month`` of the run (in parts, in
        line order), a month of ``records`` lines."""
        if self._ids is None or month >= self.months:
            return
        joined = "\n".join(record_ids)
        if joined.count("\n") != len(record_ids) - 1 or "\0" in joined:
            self._ids = None  # an id the memo cannot hold: no entry for this run
            return
        while len(self._ids) <= month:
            self._ids.append([])
            self._records.append(0)
        self._ids[month].append(joined)
        self._records[month] = records

    def spoil(self) -> None:
        """A month of the run was not read whole, every line counted: no entry."""
        self._ids = None

    def finish(self, earlier: EarlierIds) -> None:
        """The scan is past the run: on a hit, its ids become earlier ones; on a miss,
        the run is remembered when every line of each of its months was counted."""
        if self._done or not self.months:
            return
        self._done = True
        if self._known is not None:
            earlier.know(self._known[0])
            return
        if self._ids is None or len(self._ids) != self.months:
            return
        import numpy as np  # about 60 ms: loaded to remember a run, not by writers

        columns, months = [], []
        for month, (records, parts) in enumerate(zip(self._records, self._ids, strict=True)):
            ids = [_utf8(part).split(b"\n") for part in parts]
            column = np.array([value for part in ids for value in part], dtype=bytes)
            if len(column) != records or not records:
                return
            columns.append(column)
            months.append(np.full(records, month, dtype=np.uint16))
        all_ids = np.concatenate(columns)
        order = np.argsort(all_ids, kind="stable")
        linememo.save_run(self._memo, self._key, all_ids[order], np.concatenate(months)[order])
