"""Test support: look at, and tamper with, ledger files the way a person could.

The product never writes ledger files except through :mod:`pmos.store`; tests
do, to prove that readers and ``pmos ledger verify`` catch what a person with
a text editor (or a script following README's recipe) can do to them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from pmos.store.digest import DIGEST_TAG, canonical, record_digest
from pmos.store.layout import LOOSE, PACK, loose_name, place_of

KINDS = (
    "runs",
    "evals",
    "acceptances",
    "assessments",
    "task-evals",
    "followups",
    "tasks",
    "policy",
)


def folder(kit_root: Path, kind: str) -> Path:
    return kit_root / "state" / kind


def record_files(kit_root: Path, kind: str) -> list[Path]:
    """The loose record files of ``kind`` (in their month and day folders), in name order."""
    found = folder(kit_root, kind).glob("*/*/*.json")
    return sorted((p for p in found if LOOSE.match(p.name)), key=lambda p: p.name)


def pack_files(kit_root: Path, kind: str) -> list[Path]:
    return sorted(p for p in folder(kit_root, kind).glob("*/*") if PACK.match(p.name))


def forged_line(record: dict[str, Any]) -> tuple[bytes, str]:
    """The documented recipe, followed by hand: canonical JSON plus its tagged SHA-256."""
    body = canonical(record)
    digest = hashlib.sha256(DIGEST_TAG + body).hexdigest()
    return body[:-1] + b',"digest":"' + digest.encode() + b'"}\n', digest


def place(kit_root: Path, kind: str, record: dict[str, Any]) -> Path:
    """The day folder a record of that ``recorded_at`` belongs in (made)."""
    where = place_of(record.get("recorded_at")) or ("2026-01", "01")
    day = folder(kit_root, kind) / where[0] / where[1]
    day.mkdir(parents=True, exist_ok=True)
    return day


def forge(kit_root: Path, kind: str, record: dict[str, Any]) -> Path:
    """Write ``record`` as a loose record file with a valid digest, bypassing every writer."""
    line, digest = forged_line(record)
    path = place(kit_root, kind, record) / loose_name(record, digest)
    path.write_bytes(line)
    return path


def stored(kit_root: Path, kind: str) -> list[dict[str, Any]]:
    """Every record in the loose files and packs of ``kind`` (no check), sorted by key."""
    out = []
    for path in record_files(kit_root, kind):
        out.append(_record(path.read_bytes().rstrip(b"\n")))
    for path in pack_files(kit_root, kind):
        out += [_record(raw) for raw in path.read_bytes().split(b"\n")[1:] if raw]
    return sorted(out, key=lambda r: (r.get("recorded_at", ""), r.get("record_id", "")))


def _record(raw: bytes) -> dict[str, Any]:
    record = orjson.loads(raw)
    record.pop("digest", None)
    return record


def rewrite(kit_root: Path, kind: str, mutate: Callable[[list[dict[str, Any]]], Any]) -> list[Path]:
    """Replace ``kind``'s records (loose and packed) with ``mutate``'d copies, each a
    loose file carrying a fresh digest: the whole-ledger rewrite a forger would do.

    Returns the new files, in the order of the records ``mutate`` left.
    """
    records = stored(kit_root, kind)
    mutate(records)
    for path in [*record_files(kit_root, kind), *pack_files(kit_root, kind)]:
        path.unlink()
    return [forge(kit_root, kind, record) for record in records]


def digest_of(record: dict[str, Any]) -> str:
    return record_digest(record)


def edit(path: Path, old: bytes, new: bytes) -> Path:
    """Replace ``old`` (which must occur in the file) with ``new``, keeping the file's
    name: what a person does with a text editor."""
    data = path.read_bytes()
    assert old in data, f"{old!r} is not in {path}"
    path.write_bytes(data.replace(old, new))
    return path


def holding(kit_root: Path, kind: str, needle: bytes) -> Path:
    """The one loose record file of ``kind`` whose bytes contain ``needle``."""
    (found,) = [p for p in record_files(kit_root, kind) if needle in p.read_bytes()]
    return found


def by_key(kit_root: Path, kind: str) -> list[Path]:
    """The loose record files of ``kind`` in the order readers give their records."""

    def key(path: Path) -> tuple[str, str]:
        record = orjson.loads(path.read_bytes())
        return (record.get("recorded_at", ""), record.get("record_id", ""))

    return sorted(record_files(kit_root, kind), key=key)


def run_record(run_id: str, **fields: Any) -> dict[str, Any]:
    """A runs record as ``pmos run register`` would store it."""
    from pmos.store.append import record_meta

    return {
        **record_meta("runs"),
        "run_id": run_id,
        "initiative_id": "i",
        "builder_model": "m",
        **fields,
    }


def pack_of(kit_root: Path, kind: str, records: list[dict[str, Any]]) -> Path:
    """Write ``records`` (all of one month) as that month's pack, laid out as
    ``pmos ledger pack`` lays them out; like :func:`forge`, nothing checks what
    the records say."""
    from pmos.store.packs import write_pack

    entries = []
    for record in records:
        line, digest = forged_line(record)
        entries.append(((record["recorded_at"], record["record_id"]), digest, line))
    (month,) = {place_of(r["recorded_at"])[0] for r in records}
    bucket = folder(kit_root, kind) / month
    bucket.mkdir(parents=True, exist_ok=True)
    return write_pack(bucket, kind, entries)
