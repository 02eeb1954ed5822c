"""A cache of what screening found in each pack, kept outside version control.

Screening a pack (:mod:`pmos.store.screening`) can cost far more than reading
it: a label's signature is verified, a verdict's rubric is looked up. A pack
never changes, so its outcome can be remembered, but not in the repository:
nothing committed vouches for a record. The cache lives in
``$PMOS_CACHE_DIR``, else ``$XDG_CACHE_HOME/pmos``, else ``~/.cache/pmos``,
and is not used at all when that folder lies inside the kit (a committed or
force-added file must never act as a cache).

An entry is keyed by the SHA-256 of the pack's bytes, computed by hashing the
bytes the reader read (never taken from the pack's name), and by the kit; it
holds the basis the screening stood on (the rules' version and the digest of
every kit file they read) and the failing lines. It is used only while
:meth:`Screen.holds` says that basis still describes the kit. Entries are
written atomically; an entry that cannot be read or parsed is a miss.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from pmos.store.screening import Screen

#: 2: the lines checked are kept as runs of consecutive numbers (:func:`_runs`).
FORMAT = 2
Failures = dict[int, tuple[str | None, str, str]]


def cache_folder(kit_root: Path) -> Path | None:
    """The screening cache of the kit at ``kit_root``, or None when there is none to use."""
    base = os.environ.get("PMOS_CACHE_DIR")
    if not base:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = os.path.join(xdg, "pmos") if xdg else os.path.expanduser("~/.cache/pmos")
    if not os.path.isabs(base):
        return None
    real_base = os.path.realpath(base)
    real_root = os.path.realpath(kit_root)
    if _inside(real_base, _work_tree(real_root)):
        return None  # inside the kit's work tree: a file there could be committed
    kit_key = hashlib.sha256(real_root.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return Path(real_base) / "screen" / kit_key


def _work_tree(real_root: str) -> str:
    """The top of the git work tree holding the kit (the kit root when there is none)."""
    here = real_root
    while True:
        if os.path.exists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return real_root
        here = parent


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(os.path.join(folder, ""))


def _entry(kit_root: Path, sha: str, screen: Screen) -> Any:
    """The entry of the pack whose bytes hash to ``sha``, if one holds for ``screen``;
    None (a miss) otherwise."""
    folder = cache_folder(kit_root)
    if folder is None:
        return None
    try:
        data = orjson.loads((folder / f"{sha}.json").read_bytes())
        if data["format"] != FORMAT or data["pack"] != sha:
            return None
        basis = data["basis"]
        return data if isinstance(basis, dict) and screen.holds(basis) else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def load(kit_root: Path, sha: str, screen: Screen) -> tuple[set[int], Failures] | None:
    """``(lines checked, failing lines)`` of the pack whose bytes hash to ``sha``,
    if an entry for it holds for ``screen``; None (a miss) otherwise."""
    data = _entry(kit_root, sha, screen)
    if data is None:
        return None
    try:
        checked = {n for first, last in data["checked"] for n in range(int(first), int(last) + 1)}
        failed: Failures = {}
        for number, record_id, rule, problem in data["failed"]:
            failed[int(number)] = (record_id, str(rule), str(problem))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return checked, failed


def clean(kit_root: Path, sha: str, screen: Screen, lines: int) -> bool:
    """Whether an entry that holds for ``screen`` says every one of the ``lines``
    record lines of the pack whose bytes hash to ``sha`` was checked and none fails
    (what :func:`load` would say, without a set of line numbers)."""
    data = _entry(kit_root, sha, screen)
    try:
        return bool(
            data is not None and data["failed"] == [] and data["checked"] == [[2, lines + 1]]
        )
    except (KeyError, TypeError):
        return False


def save(kit_root: Path, sha: str, screen: Screen, failed: Failures, checked: list[int]) -> None:
    """Remember a pack's screening (best effort: a cache that cannot be written is none)."""
    folder = cache_folder(kit_root)
    if folder is None:
        return
    data = orjson.dumps(
        {
            "format": FORMAT,
            "pack": sha,
            "basis": screen.basis(),
            "checked": _runs(checked),
            "failed": [[n, *failure] for n, failure in sorted(failed.items())],
        }
    )
    _write(folder, f"{sha}.json", data)


def _runs(numbers: list[int]) -> list[list[int]]:
    """Line numbers as ``[first, last]`` runs of consecutive numbers, in order: a
    pack checked whole is one run, where one number a line made the entry of a
    40,000-line pack 250 KB that every reading of it parsed."""
    runs: list[list[int]] = []
    for number in sorted(set(numbers)):
        if runs and runs[-1][1] == number - 1:
            runs[-1][1] = number
        else:
            runs.append([number, number])
    return runs


def _write(folder: Path, name: str, data: bytes) -> None:
    """Write ``folder/name`` atomically (a torn write is never read), best effort."""
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
        temp = folder / f".tmp-{os.getpid()}-{os.urandom(6).hex()}"
        try:
            with open(temp, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, folder / name)
        finally:
            with contextlib.suppress(FileNotFoundError):
                temp.unlink()


# ---------------------------------------------------------------- loose records

#: The outcome of screening one loose record: None (it counts) or the
#: ``(record_id, rule, problem)`` of the first rule it breaks.
Outcome = tuple[str | None, str, str] | None
#: How many bases one month's entry keeps (the newest): older ones rarely hold.
MAX_BASES = 8


def _loose_name(kind: str, bucket: str) -> str:
    return f"loose-{kind}-{bucket}.json"


#: The basis entries naming a ledger whose records a loose record's checks read,
#: with the fingerprint of that ledger's files (see :func:`load_loose`).
LEDGER = "ledger:"


def load_loose(
    kit_root: Path, kind: str, bucket: str, screen: Screen, ledger: Callable[[str], str]
) -> dict[str, Outcome]:
    """content digest -> outcome of ``kind``'s loose records of ``bucket`` screened
    before on this machine, under a basis that still holds for ``screen``.

    Only a digest the integrity check verified may be looked up here (a loose
    file's name carries its record's digest, and a file whose bytes do not hash to
    it is refused before screening): an entry says what screening found for the
    record with exactly those bytes.

    A record's checks may read other records (the verdict a label names, a
    run's registration): its basis then names those ledgers with the
    fingerprint ``ledger(kind)`` gave of their files when it was saved, and it
    holds only while each still has that fingerprint, so a verdict replaced or
    added since makes the labels checked beside the old one be checked again.
    A damaged entry is a miss (empty)."""
    out: dict[str, Outcome] = {}
    for basis, outcomes in _loose_groups(kit_root, kind, bucket):
        if _loose_holds(basis, screen, ledger):
            for digest, outcome in outcomes.items():
                out.setdefault(digest, outcome)
    return out


def _loose_holds(basis: dict[str, str], screen: Screen, ledger: Callable[[str], str]) -> bool:
    rest = {k: v for k, v in basis.items() if not k.startswith(LEDGER)}
    return all(
        ledger(k[len(LEDGER) :]) == v for k, v in basis.items() if k.startswith(LEDGER)
    ) and screen.holds(rest)


def save_loose(
    kit_root: Path,
    kind: str,
    bucket: str,
    screen: Screen,
    ledger: Callable[[str], str],
    found: dict[str, Outcome],
    present: set[str],
) -> None:
    """Remember the outcomes ``found`` of ``kind``'s loose records of ``bucket``
    under the basis ``screen`` stood on, with the fingerprint ``ledger(kind)`` of
    each ledger its checks read (best effort). What an entry held for records no
    longer in ``present`` (packed since, or removed) and under bases that no
    longer hold is dropped, so an entry stays the size of the month."""
    folder = cache_folder(kit_root)
    if folder is None or not found:
        return
    basis = screen.basis()
    for read in screen.ledgers_read():
        basis[LEDGER + read] = ledger(read)
    mine: dict[str, Outcome] = {}
    others: list[dict[str, object]] = []
    for old_basis, outcomes in _loose_groups(kit_root, kind, bucket):
        kept = {d: o for d, o in outcomes.items() if d in present and d not in found}
        if old_basis == basis:
            mine = kept
        elif kept and _loose_holds(old_basis, screen, ledger):
            others.append({"basis": old_basis, "outcomes": _encoded(kept)})
    mine.update(found)
    groups = [{"basis": basis, "outcomes": _encoded(mine)}, *others][:MAX_BASES]
    entry = {"format": FORMAT, "kind": kind, "bucket": bucket, "groups": groups}
    _write(folder, _loose_name(kind, bucket), orjson.dumps(entry))


def _encoded(outcomes: dict[str, Outcome]) -> dict[str, list[str | None] | None]:
    return {d: None if o is None else list(o) for d, o in outcomes.items()}


def _loose_groups(
    kit_root: Path, kind: str, bucket: str
) -> list[tuple[dict[str, str], dict[str, Outcome]]]:
    """The ``(basis, outcomes)`` groups of one month's entry, as written (unchecked)."""
    folder = cache_folder(kit_root)
    if folder is None:
        return []
    try:
        data = orjson.loads((folder / _loose_name(kind, bucket)).read_bytes())
        if data["format"] != FORMAT or data["kind"] != kind or data["bucket"] != bucket:
            return []
        groups = []
        for group in data["groups"]:
            basis = group["basis"]
            if not (isinstance(basis, dict) and all(isinstance(v, str) for v in basis.values())):
                continue
            outcomes: dict[str, Outcome] = {}
            for digest, outcome in group["outcomes"].items():
                if outcome is None:
                    outcomes[digest] = None
                else:
                    record_id, rule, problem = outcome
                    outcomes[digest] = (
                        record_id if isinstance(record_id, str) else None,
                        str(rule),
                        str(problem),
                    )
            groups.append((basis, outcomes))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return []
    return groups
