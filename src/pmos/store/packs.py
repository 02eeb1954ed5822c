"""Pack files: one closed month of a ledger in one immutable, content-named file.

A pack is written by ``pmos ledger pack`` and never changed::

    {"pmos_pack":2,"kind":"evals","bucket":"2026-11","records":N}
    <record line>          sorted by (recorded_at, record_id, digest)
    ...

Its name is ``pack-<SHA-256 of the whole file>.jsonl`` and it sits in its
bucket's folder (``state/evals/2026-11/``). The header holds nothing but what
the records fix (no host, time, checker or screening outcome), and the lines
are the records' own lines in a fixed order, so a pack's bytes, hence its
name, are a function of the set of records it holds: two compactions of the
same records, on two branches, make the same file, which git merges as one.

Nothing in a pack vouches for its records: readers check every line as they
check loose files (:mod:`pmos.store.integrity`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from pmos.atomic import write_once
from pmos.store.integrity import Key, pack_header

Entry = tuple[Key, str, bytes]  # (order key, digest, line with its newline)


def pack_bytes(kind: str, bucket: str, entries: list[Entry]) -> bytes:
    """The bytes of the pack of ``entries`` (any order, copies by digest removed)."""
    unique = {digest: (key, digest, line) for key, digest, line in entries}
    ordered = sorted(unique.values(), key=lambda e: (e[0], e[1]))
    header = pack_header(kind, bucket, len(ordered))
    return b"".join([header, b"\n", *(line for _, _, line in ordered)])


def pack_name(data: bytes) -> str:
    return f"pack-{hashlib.sha256(data).hexdigest()}.jsonl"


def write_pack(bucket_folder: Path, kind: str, entries: list[Entry]) -> Path:
    """Write the pack of ``entries`` into ``bucket_folder`` (named after it): kept
    as it is when that pack exists already."""
    data = pack_bytes(kind, bucket_folder.name, entries)
    return write_once(bucket_folder, pack_name(data), data)


def name_digest(path: Path) -> str:
    """The SHA-256 a pack's name claims for its bytes (readers hash the bytes; this
    only names the pack)."""
    return path.name.removeprefix("pack-").removesuffix(".jsonl")


def key_of(record: dict[str, object]) -> Key:
    """Where a record sorts: recorded time, then record id (the same on every clone)."""
    return (str(record.get("recorded_at", "")), str(record.get("record_id", "")))
