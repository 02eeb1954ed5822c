"""This machine's memo of its own line checks, kept outside version control.

Every reader checks every record line (:mod:`pmos.store.integrity`): its digest
against its bytes, its canonical form, its ledger and month. For a pack that
check is a function of the pack's bytes alone, and a pack is never changed, so
the outcome of checking it once is the outcome of checking it again. This
module remembers that outcome in the cache folder of
:mod:`pmos.store.screencache` (``$PMOS_CACHE_DIR``, ``$XDG_CACHE_HOME/pmos`` or
``~/.cache/pmos``; never inside the kit's work tree): an entry is keyed by the
SHA-256 of the bytes the reader has just read (hashed on every read, never
taken from the pack's name or header) and holds the lines that failed and why.
Nothing committed can fill it, and a missing, unreadable or mismatched entry
is a miss: the reader checks every line, then writes the entry.

A loose file is content-named (``<stamp>-<digest>.json``), so the writers'
newest-first look-ups (:func:`pmos.store.integrity.newest_in_bucket`) keep,
per month, which ``(recorded_at, record_id)`` each digest's record carries:
what the month-duplicate rule needs of the files a look-up does not read. The
fact "the record whose line hashes to D has id X" never goes stale; a file
named after D whose bytes do not hash to D is refused and counts for nothing.

A run of leading months each held by one pack (:mod:`pmos.store.earlier`) is
keyed by the SHA-256 of this module's rules, the ledger and each month's name and
pack SHA-256, and holds that the run repeats no record id, with its ids sorted
and the month of each (a numpy archive: a million ids are a few megabytes read
in one call).

Entries are written atomically (a torn write is a miss) without ``fsync``: a
memo lost in a crash is only checked again.
"""

from __future__ import annotations

import contextlib
import os
import zipfile
from pathlib import Path
from typing import Any

import orjson

#: Bumped whenever :mod:`pmos.store.integrity` changes what a line must satisfy,
#: so every outcome remembered under the old rule is checked again.
RULES = "pmos-lines-2"
Refusals = dict[int, tuple[str | None, str]]


def load_pack(
    folder: Path | None, sha: str, kind: str, bucket: str
) -> tuple[Refusals, bool] | None:
    """The failing lines (number -> (record_id, problem)) of the ``kind`` pack of
    ``bucket`` whose bytes hash to ``sha``, and whether its sound lines are in
    ledger order with no repeated record id; None when there is no sound entry."""
    data = _load(folder, f"lines-{sha}.json")
    try:
        if data is None or data["rules"] != RULES or data["pack"] != sha:
            return None
        if data["kind"] != kind or data["bucket"] != bucket:
            return None
        refused = {int(n): (rid, str(problem)) for n, rid, problem in data["refused"]}
        return refused, data["ordered"] is True
    except (KeyError, TypeError, ValueError):
        return None


def save_pack(
    folder: Path | None, sha: str, kind: str, bucket: str, refused: Refusals, ordered: bool
) -> None:
    """Remember a pack's line checks (best effort: a memo that cannot be written is none)."""
    entry = {
        "rules": RULES,
        "pack": sha,
        "kind": kind,
        "bucket": bucket,
        "refused": [[n, *why] for n, why in sorted(refused.items())],
        "ordered": ordered,
    }
    _save(folder, f"lines-{sha}.json", entry)


def load_ids(folder: Path | None, kind: str, bucket: str) -> dict[str, tuple[str, str]]:
    """digest -> (recorded_at, record_id) of ``kind``'s loose records of ``bucket``
    checked before on this machine (empty when none)."""
    data = _load(folder, f"ids-{kind}-{bucket}.json")
    try:
        if data is None or data["rules"] != RULES:
            return {}
        return {d: (at, rid) for d, (at, rid) in data["ids"].items()}
    except (KeyError, TypeError, ValueError, AttributeError):
        return {}


def save_ids(folder: Path | None, kind: str, bucket: str, ids: dict[str, tuple[str, str]]) -> None:
    """Remember the ids of ``kind``'s loose records of ``bucket`` (best effort)."""
    _save(folder, f"ids-{kind}-{bucket}.json", {"rules": RULES, "ids": ids})


def load_run(folder: Path | None, key: str, months: int) -> tuple[Any, Any] | None:
    """The ids of a run of ``months`` leading months (sorted, a numpy bytes column) and
    the month of each, remembered under ``key``; None when there is no sound entry."""
    if folder is None:
        return None
    import numpy as np  # only a scan with a run of packs to recall loads it

    try:
        with np.load(folder / f"run-{key}.npz", allow_pickle=False) as data:
            ids, of = data["ids"], data["months"]
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return None
    if ids.dtype.kind != "S" or of.dtype != np.uint16 or ids.shape != of.shape or ids.ndim != 1:
        return None
    if not len(ids) or int(of.max()) >= months or not bool(np.all(ids[1:] > ids[:-1])):
        return None
    return ids, of


def save_run(folder: Path | None, key: str, ids: Any, months: Any) -> None:
    """Remember a run's sorted ids and their months under ``key`` (best effort)."""
    if folder is None:
        return
    import numpy as np  # the caller holds numpy arrays already: loaded, not loaded anew

    if not bool(np.all(ids[1:] > ids[:-1])):  # a repeated id: the run is not one to remember
        return
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
        temp = folder / f".tmp-{os.getpid()}-{os.urandom(6).hex()}.npz"
        try:
            with open(temp, "wb") as handle:
                np.savez(handle, ids=ids, months=months)
            os.replace(temp, folder / f"run-{key}.npz")
        finally:
            with contextlib.suppress(FileNotFoundError):
                temp.unlink()


def _load(folder: Path | None, name: str) -> Any:
    if folder is None:
        return None
    try:
        return orjson.loads((folder / name).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None


def _save(folder: Path | None, name: str, entry: Any) -> None:
    if folder is None:
        return
    data = orjson.dumps(entry)
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
        temp = folder / f".tmp-{os.getpid()}-{os.urandom(6).hex()}"
        try:
            temp.write_bytes(data)
            os.replace(temp, folder / name)
        finally:
            with contextlib.suppress(FileNotFoundError):
                temp.unlink()
