"""``pmos ledger pack``: fold loose records (and an older kit's single file) into a pack.

Like ``git gc``, packing only adds a file and deletes files; it never edits one.
It folds, under the kind's lock:

* every loose record;
* the single-file ledger of a kit from before the folder layout (its chain is
  checked first; an unterminated last line, left by a crash of an old writer,
  is moved to ``<ledger>.quarantine``);
* every pack whose key range overlaps what is folded, or another folded pack
  (packs made on two branches from the same loose records overlap), so that
  afterwards the packs are disjoint in time and readers take their fast path.

The new pack holds each record once (copies share a digest), sorted by key.
Only after it is on disk are the folded files removed; a crash in between
leaves copies that readers de-duplicate and the next pack removes.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from pmos.errors import LedgerCorrupt
from pmos.store import chain, lines, packs
from pmos.store.digest import CHAIN_FIELDS
from pmos.store.files import kind_lock, remove_many, stale_temps
from pmos.store.layout import Store
from pmos.store.read import read_loose_many
from pmos.store.registry import LEDGER_KINDS
from pmos.store.screening import Checked, Screen, screen_line, screen_record

Entry = tuple[packs.Key, str, bytes]


class PackReport(NamedTuple):
    kind: str
    records: int
    loose_folded: int
    packs_folded: int
    legacy_folded: bool
    pack: str | None
    warnings: list[str]

    def as_dict(self) -> dict[str, Any]:
        return self._asdict()


def pack_store(
    store: Store, kinds: list[str] | None = None, *, screen: Screen | None = None
) -> list[PackReport]:
    """Pack each kind (all by default); one report per kind."""
    return [pack_kind(store, kind, screen=screen) for kind in kinds or list(LEDGER_KINDS)]


def pack_kind(store: Store, kind: str, *, screen: Screen | None = None) -> PackReport:
    """Fold ``kind``'s loose records (and what overlaps them) into one new pack.

    With a ``screen``, every record of the new pack is checked against the
    writers' rules and the outcome is written into its header, so readers need
    not check them again while the rules and the kit files they read stay the same.
    """
    folder = store.ensure_folder(kind)
    with kind_lock(folder), _no_cycle_collection():
        sources = store.sources(kind)
        warnings: list[str] = []
        entries: dict[str, Entry] = {}
        for entry in _legacy_entries(sources.legacy, kind, warnings):
            entries.setdefault(entry[1], entry)
        parsed: dict[str, dict[str, Any]] = {}  # loose records, parsed once, by digest
        for found in read_loose_many(sources.folder, sources.loose_names):
            if found.digest not in entries:
                entries[found.digest] = (found.key, found.digest, found.line)
                parsed[found.digest] = found.record
        headed = [(packs.read_header(p, kind), p) for p in sources.packs]
        folded = _packs_to_fold(headed, [e[0] for e in entries.values()])
        for path in folded:
            for entry in _pack_entries(path, kind):
                entries.setdefault(entry[1], entry)
        temps = stale_temps(folder)
        if not entries:
            remove_many(folder, temps)
            return PackReport(kind, 0, 0, 0, False, None, warnings)
        ordered = sorted(entries.values(), key=lambda e: (e[0], e[1]))
        checked = None if screen is None else screen_entries(kind, ordered, screen, parsed)
        made = packs.write_pack(folder, kind, ordered, checked)
        remove_many(folder, [*sources.loose_files(), *(p for p in folded if p != made), *temps])
        if sources.legacy is not None:
            remove_many(sources.legacy.parent, [sources.legacy])
        return PackReport(
            kind,
            len(ordered),
            len(sources.loose_names),
            len([p for p in folded if p != made]),
            sources.legacy is not None,
            made.name,
            warnings,
        )


@contextlib.contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Pause Python's cycle collector while a pack holds its records, as it was after.

    A pack of 100,000 loose records holds as many parsed records, a million
    objects, and their allocation sets the collector off again and again to
    walk them all (a tenth of the pack's CPU time), though they form no cycles
    and reference counting frees them.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


#: How much of a problem's text a pack header keeps per failing record.
PROBLEM_CHARS = 500


def screen_entries(
    kind: str, entries: list[Entry], screen: Screen, parsed: dict[str, dict[str, Any]] | None = None
) -> Checked:
    """Screen a pack's records (in pack order): the outcome its header records.

    ``parsed`` holds records already parsed (by digest), the loose ones, so
    that a file read to be packed is parsed once; the others are parsed here.
    """
    parsed = parsed or {}
    if parsed:  # one look-up of what the loose records' rules need from the kit
        screen.prepare(kind, list(parsed.values()))
    failed: dict[int, tuple[str | None, str, str]] = {}
    for number, (_, digest, line) in enumerate(entries, start=1):
        record = parsed.get(digest)
        if record is None:
            exclusion = screen_line(screen, kind, line[:-1], "")
        else:
            exclusion = screen_record(screen, kind, record, "")
        if exclusion is not None:
            failed[number] = (
                exclusion.record_id,
                exclusion.rule,
                exclusion.problem[:PROBLEM_CHARS],
            )
    return Checked(screen.basis(), failed)


def _packs_to_fold(headed: list[tuple[packs.Header, Path]], keys: list[packs.Key]) -> list[Path]:
    """The packs that overlap the folded records or, transitively, each other."""
    ranges = [(min(keys), max(keys))] if keys else []
    chosen: list[Path] = []
    rest = list(headed)
    changed = True
    while changed:
        changed = False
        for header, path in list(rest):
            overlaps = any(header.first <= hi and lo <= header.last for lo, hi in ranges)
            others = [h for h, p in rest if p != path]
            if not overlaps and any(
                header.first <= h.last and h.first <= header.last for h in others
            ):
                overlaps = True
            if overlaps:
                chosen.append(path)
                ranges.append((header.first, header.last))
                rest.remove((header, path))
                changed = True
    return chosen


def _pack_entries(path: Path, kind: str) -> list[Entry]:
    out = []
    for offset, buf in packs.buffers(path, kind):
        start = offset
        for raw in buf.split(b"\n")[:-1]:
            try:
                body, digest = lines.check(raw)
            except lines.LineError as exc:
                number = packs.line_number(path, start)
                raise LedgerCorrupt(str(path), number, f"the record {exc}") from None
            out.append((packs.key_of(orjson.loads(body)), digest, raw + b"\n"))
            start += len(raw) + 1
    return out


def _legacy_entries(path: Path | None, kind: str, warnings: list[str]) -> list[Entry]:
    """The records of an older kit's single file, re-encoded as record lines."""
    if path is None:
        return []
    report = chain.verify(path, kind)
    torn = [p for p in report.problems if "unterminated" in p.problem]
    broken = [p for p in report.problems if p not in torn]
    if broken:
        first = broken[0]
        raise LedgerCorrupt(
            str(path),
            first.line or None,
            f"{first.problem}; the file is not converted while its chain is broken "
            "(run 'pmos ledger verify' for every problem)",
        )
    out = []
    for record in chain.iter_records(path, kind, plain=True):
        body = {k: v for k, v in record.items() if k not in CHAIN_FIELDS}
        line, digest = lines.encode(body)
        out.append((packs.key_of(body), digest, line))
    if torn:
        warnings.append(_quarantine_tail(path))
    return out


def _quarantine_tail(path: Path) -> str:
    """Keep an unterminated last line of a converted file, which no reader counted."""
    data = path.read_bytes()
    cut = data.rfind(b"\n") + 1
    torn = data[cut:]
    quarantine = path.with_name(path.name + ".quarantine")
    entry = {"ledger": path.name, "offset": cut, "length": len(torn)}
    entry["text"] = torn.decode("utf-8", "backslashreplace")
    with open(quarantine, "ab") as handle:
        handle.write(orjson.dumps(entry) + b"\n")
    return (
        f"{path}: an unterminated last line ({len(torn)} bytes, left by an interrupted write) "
        f"was moved to {quarantine}"
    )
