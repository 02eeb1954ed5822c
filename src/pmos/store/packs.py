"""Pack files: many records in one immutable, content-named file.

A pack is written once by ``pmos ledger pack`` and never changed::

    {"pmos_pack":1,"kind":"evals","records":N,"first":[at,id],"last":[at,id],"checked":{...}}
    <record line>                                  sorted by (recorded_at, record_id)
    ...

Its name is ``pack-<SHA-256 of the whole file>.jsonl``, as git names its
objects: any edit, insertion, deletion, reordering or truncation changes the
hash, so a reader that streams a pack checks it in one pass over its bytes,
far cheaper than hashing line by line. Each line also carries its record's own
digest (:mod:`pmos.store.lines`), which is what a reader checks when it reads
only the end of a pack, and what identifies a record across packs.

The header's ``first`` and ``last`` keys let a reader see, without reading
the records, whether packs overlap in time; packs written on two branches do
(they share the records loose at the fork) and are then merged by key and
de-duplicated by digest. ``checked`` (optional) is the outcome of screening
the records against the writers' rules when the pack was made
(:mod:`pmos.store.screening`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from pmos.atomic import write_once
from pmos.errors import LedgerCorrupt
from pmos.store import lines
from pmos.store.files import lines_from_end
from pmos.store.layout import PACK
from pmos.store.screening import Checked

FORMAT = 1
_CHUNK = 1 << 20
#: The longest header a reader accepts (its screening outcome lists failing records).
HEADER_MAX = 64 << 20
Key = tuple[str, str]


class Header(NamedTuple):
    """A pack's first line: its kind, record count, key range and screening."""

    kind: str
    records: int
    first: Key
    last: Key
    checked: Checked | None = None

    @classmethod
    def parse(cls, raw: bytes, path: Path, kind: str) -> Header:
        try:
            data = orjson.loads(raw)
            if data.get("pmos_pack") != FORMAT or data.get("kind") != kind:
                raise ValueError("not a pack of this kind")
            count = data["records"]
            first, last = (tuple(data[k]) for k in ("first", "last"))
            if type(count) is not int or count < 1 or len(first) != 2 or len(last) != 2:
                raise ValueError("malformed header fields")
            if not all(isinstance(v, str) for v in (*first, *last)):
                raise ValueError("malformed key")
            checked = Checked.from_json(data["checked"]) if "checked" in data else None
            if checked is not None and any(n > count for n in checked.failed):
                raise ValueError("'checked.failed' names a line past the last record")
        except (orjson.JSONDecodeError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise LedgerCorrupt(str(path), 1, f"not a {kind} pack header ({exc})") from None
        return cls(kind, count, first, last, checked)  # type: ignore[arg-type]


def key_of(record: dict[str, Any]) -> Key:
    """Where a record sorts: recorded time, then record id (the same on every clone)."""
    return (str(record.get("recorded_at", "")), str(record.get("record_id", "")))


def write_pack(
    folder: Path, kind: str, entries: list[tuple[Key, str, bytes]], checked: Checked | None = None
) -> Path:
    """Write ``entries`` ``(key, digest, line)``, sorted and unique, as a new pack,
    with the outcome of screening them when there was one."""
    fields: dict[str, Any] = {
        "pmos_pack": FORMAT,
        "kind": kind,
        "records": len(entries),
        "first": list(entries[0][0]),
        "last": list(entries[-1][0]),
    }
    if checked is not None:
        fields["checked"] = checked.as_json()
    header = orjson.dumps(fields)
    data = b"".join([header, b"\n", *(line for _, _, line in entries)])
    name = f"pack-{hashlib.sha256(data).hexdigest()}.jsonl"
    return write_once(folder, name, data)


def read_header(path: Path, kind: str) -> Header:
    with open(path, "rb") as handle:
        first = handle.readline(HEADER_MAX)
    if not first.endswith(b"\n"):
        raise LedgerCorrupt(str(path), 1, "the pack has no complete header line")
    return Header.parse(first[:-1], path, kind)


def name_digest(path: Path) -> str:
    """The SHA-256 a pack's name claims for its bytes: the pack's identity."""
    match = PACK.match(path.name)
    assert match is not None  # listed by Store.sources, which matched it
    return match.group(1)


def buffers(path: Path, kind: str) -> Iterator[tuple[int, bytes]]:
    """The pack's record lines in order, as ``(offset, buffer)`` where each buffer
    holds whole newline-terminated lines starting at that byte offset of the file
    (:func:`line_number` turns an offset into a line number, for messages).

    The whole file is hashed as it streams; a pack whose bytes do not match its
    name raises :class:`LedgerCorrupt` at the end, before the caller can
    report anything computed from it.
    """
    digest = hashlib.sha256()
    pending = b""
    offset = 0
    header_seen = False
    with open(path, "rb", buffering=0) as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            data = pending + chunk if pending else chunk
            cut = data.rfind(b"\n") + 1
            pending = data[cut:]
            if not cut:
                continue
            body = memoryview(data)[:cut]
            start = offset
            offset += cut
            if not header_seen:
                eol = data.index(b"\n")
                Header.parse(data[:eol], path, kind)
                header_seen = True
                body = body[eol + 1 :]
                start += eol + 1
            if body:
                yield start, bytes(body)
    if pending or not header_seen or digest.hexdigest() != name_digest(path):
        raise LedgerCorrupt(
            str(path),
            None,
            "the pack's content does not match its name: it was edited, cut or replaced",
        )


def line_number(path: Path, offset: int) -> int:
    """The 1-based line of ``path`` that starts at byte ``offset`` (for messages only)."""
    with open(path, "rb") as handle:
        return handle.read(offset).count(b"\n") + 1


def lines_reversed(path: Path, kind: str) -> Iterator[bytes]:
    """The pack's record lines, last first, each checked against its own digest.

    A reader of the newest records does not read a large pack whole; what it
    relies on, each record it reads, is checked. A reader that goes on to the
    first record has relied on the whole pack, so the pack is then checked
    against its name, as a forward reader checks it: a line deleted, inserted
    or moved, or an edited header, is refused either way.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        end = os.fstat(fd).st_size
        first = _header_length(fd, end)  # records start after the header
        if first <= 0 or (end and os.pread(fd, 1, end - 1) != b"\n"):
            raise LedgerCorrupt(str(path), None, "the pack's header or last line is incomplete")
        for raw in lines_from_end(fd, first, end):
            try:
                lines.check(raw)
            except lines.LineError as exc:
                raise LedgerCorrupt(str(path), None, f"a record line {exc}") from None
            yield raw
        if _hash_of(fd, end) != name_digest(path):
            raise LedgerCorrupt(
                str(path),
                None,
                "the pack's content does not match its name: it was edited, cut or replaced",
            )
    finally:
        os.close(fd)


def _header_length(fd: int, size: int) -> int:
    """Bytes up to and including the header's newline (0: no complete header)."""
    pos = 0
    while pos < min(size, HEADER_MAX) and (chunk := os.pread(fd, _CHUNK, pos)):
        eol = chunk.find(b"\n")
        if eol >= 0:
            return pos + eol + 1
        pos += len(chunk)
    return 0


def _hash_of(fd: int, size: int) -> str:
    """SHA-256 of the first ``size`` bytes of the open file ``fd``."""
    digest = hashlib.sha256()
    pos = 0
    while pos < size and (chunk := os.pread(fd, min(_CHUNK, size - pos), pos)):
        digest.update(chunk)
        pos += len(chunk)
    return digest.hexdigest()
