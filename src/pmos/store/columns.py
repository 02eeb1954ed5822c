"""Pack columns: the fields calibration reads, kept beside each pack.

Calibration reads eight short fields of every verdict and label, yet a reader
of a pack must parse each record's whole JSON line to find them: a million
parses for a million verdicts, the largest cost of ``pmos metrics``. So when
``pmos ledger pack`` writes a pack of verdicts or labels it also writes the
pack's *columns*: those fields of every record, in the pack's order, one list
per field (MessagePack). A reader that finds them reads a few lists instead
of parsing every line, as git reads a pack's ``.idx`` rather than the pack.

The columns file is derived from its pack and named after it
(``pack-<the pack's digest>.columns``). It is written once, before the loose
records it covers are removed, and removed with its pack; two branches that
pack the same records write the same bytes. So it keeps every merge clean as
packs do. Its first line names the pack, the kind, the record count, the
fields and the SHA-256 of the rest: readers use a columns file only when all
of these match (else they read the pack itself, the truth). They trust its
values as they trust a pack's recorded screening; ``pmos ledger verify``
compares them with the pack's records, field by field, so a columns file made
by hand cannot show readers other values than the records without verify
reporting it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import msgspec
import orjson

from pmos.atomic import write_once
from pmos.errors import LedgerCorrupt
from pmos.store import packs
from pmos.store.latest import FILTER_FIELDS, LABEL_FIELDS, VERDICT_FIELDS
from pmos.store.rows import row_type

FORMAT = 1
SUFFIX = ".columns"
#: The kinds that have columns, and their fields: what the calibration readers decode.
FIELDS: dict[str, tuple[str, ...]] = {
    "evals": VERDICT_FIELDS + FILTER_FIELDS,
    "acceptances": LABEL_FIELDS + FILTER_FIELDS,
}
Columns = dict[str, list[Any]]
#: Records per chunk: a reader holds one chunk's values at a time, not a whole pack's.
CHUNK = 16_384
#: Fields with few distinct values, stored once per chunk and referred to by number
#: (so a reader's lists share one string per value).
DICTIONARY = frozenset({"verdict", "evaluator_model", "form", "initiative_id", "label"})


def path_for(pack: Path) -> Path:
    """Where a pack's columns file is."""
    return pack.with_name(f"pack-{packs.name_digest(pack)}{SUFFIX}")


def encode(kind: str, record_lines: Iterable[bytes], pack_digest: str) -> bytes:
    """The columns file of a pack of ``kind`` holding ``record_lines`` (in its order)."""
    fields = FIELDS[kind]
    decode = msgspec.json.Decoder(row_type(kind, fields)).decode
    rows = [decode(raw) for raw in record_lines]
    chunks = []
    for start in range(0, len(rows), CHUNK):
        part = rows[start : start + CHUNK]
        chunk: dict[str, Any] = {}
        for field in fields:
            values = [getattr(r, field) for r in part]
            if field in DICTIONARY:  # few distinct values: each once, then their numbers
                words = list(dict.fromkeys(values))
                number = {word: i for i, word in enumerate(words)}
                chunk[field] = [words, [number[v] for v in values]]
            else:
                chunk[field] = values
        chunks.append(msgspec.msgpack.encode(chunk))
    body = b"".join(chunks)
    header = {
        "pmos_columns": FORMAT,
        "kind": kind,
        "pack": pack_digest,
        "records": len(rows),
        "fields": list(fields),
        "chunks": [len(chunk) for chunk in chunks],
        "sha256": hashlib.sha256(body).hexdigest(),
    }
    return orjson.dumps(header) + b"\n" + body


def write(pack: Path, kind: str, record_lines: Iterable[bytes]) -> Path | None:
    """Write the columns of ``pack`` (None: ``kind`` has none). Call it before
    removing what the pack folded, so a reader never meets a pack too new for it."""
    if kind not in FIELDS:
        return None
    data = encode(kind, record_lines, packs.name_digest(pack))
    return write_once(pack.parent, path_for(pack).name, data)


def read(pack: Path, kind: str, records: int) -> Iterator[Columns] | None:
    """The columns of ``pack`` (``records`` long), a chunk of records at a time, or None
    when it has no usable columns file: none, one for another pack or count, or a
    damaged one (readers then read the pack; ``pmos ledger verify`` reports the
    damage). A file that passes those checks yet does not decode was sealed by hand:
    reading it raises :class:`~pmos.errors.LedgerCorrupt`."""
    return _load(pack, kind, records)[0]


def problem(pack: Path, kind: str, records: int, found: Columns) -> str | None:
    """What is wrong with ``pack``'s columns file, given ``found``, the columns of its
    records as ``pmos ledger verify`` read them (None: nothing, or the pack has none)."""
    chunks, why = _load(pack, kind, records)
    if chunks is None:
        return why or None
    start = 0
    try:
        for chunk in chunks:
            for field in FIELDS[kind]:
                stored, actual = chunk[field], found[field][start : start + len(chunk[field])]
                for number, (a, b) in enumerate(zip(stored, actual, strict=True), start + 1):
                    if a != b or type(a) is not type(b):
                        return (
                            f"the columns file says {field} {a!r} for record {number} of the "
                            f"pack, the record says {b!r}: it was edited or made by hand"
                        )
            start += len(chunk[FIELDS[kind][0]])
    except LedgerCorrupt as exc:
        return exc.problem
    return None


@cache
def _decoder(kind: str) -> msgspec.msgpack.Decoder:
    """A typed decoder of one chunk: each column a list of its field's type (as readers
    decode rows), a dictionary-coded one its distinct values and their numbers."""
    row = row_type(kind, FIELDS[kind])
    spec = [
        (f.name, tuple[list[f.type], list[int]] if f.name in DICTIONARY else list[f.type])  # type: ignore[valid-type]
        for f in msgspec.structs.fields(row)
    ]
    return msgspec.msgpack.Decoder(msgspec.defstruct(f"{row.__name__}Columns", spec))


def _load(pack: Path, kind: str, records: int) -> tuple[Iterator[Columns] | None, str]:
    """The pack's columns, or None and why not ("": it has no columns file)."""
    if kind not in FIELDS:
        return None, ""
    path = path_for(pack)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None, ""
    eol = data.find(b"\n")
    try:
        header = orjson.loads(data[:eol]) if eol > 0 else None
    except orjson.JSONDecodeError:
        header = None
    body = memoryview(data)[eol + 1 :]
    expected = {
        "pmos_columns": FORMAT,
        "kind": kind,
        "pack": packs.name_digest(pack),
        "records": records,
        "fields": list(FIELDS[kind]),
    }
    if type(header) is not dict or any(header.get(k) != v for k, v in expected.items()):
        return None, "the columns file is not the columns of its pack (its first line differs)"
    sizes = header.get("chunks")
    if (
        type(sizes) is not list
        or not all(type(n) is int and n > 0 for n in sizes)
        or sum(sizes) != len(body)
        or header.get("sha256") != hashlib.sha256(body).hexdigest()
    ):
        return None, "the columns file does not match its own digest: it was edited or cut"
    return _chunks(body, sizes, kind, records, str(path)), ""


def _chunks(
    body: memoryview, sizes: list[int], kind: str, records: int, where: str
) -> Iterator[Columns]:
    decode, fields = _decoder(kind).decode, FIELDS[kind]
    start = total = 0
    for size in sizes:
        try:
            decoded = decode(body[start : start + size])
            chunk = {}
            for field in fields:
                column = getattr(decoded, field)
                if field in DICTIONARY:
                    words, numbers = column
                    column = list(map(words.__getitem__, numbers))
                chunk[field] = column
        except (msgspec.DecodeError, IndexError) as exc:
            raise LedgerCorrupt(where, None, f"the columns file cannot be read ({exc})") from None
        count = len(chunk[fields[0]])
        if any(len(column) != count for column in chunk.values()):
            raise LedgerCorrupt(where, None, "the columns file's lists differ in length")
        start, total = start + size, total + count
        yield chunk
    if total != records:
        raise LedgerCorrupt(where, None, "the columns file does not hold one value per record")
