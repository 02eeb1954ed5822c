"""Screening: readers leave out records that break a writer's rule, and say so.

A record line's digest proves only that somebody followed the recipe; anyone
can write a well-formed loose record file by hand. So the readers that light a
gate (metrics, queue, exemplars, scores) take a :class:`Screen`: the writers'
rules, applied to each stored record. A record that breaks one is not counted;
it is reported, with its record id and the rule, as an :class:`Exclusion`.

The rules live with the writers (:mod:`pmos.gate.screen` makes the screen);
the store only knows when to apply them, so that a million-record kit is not
re-checked on every read:

* ``pmos ledger pack`` checks every record it folds and writes the outcome
  into the new pack's header (:class:`Checked`): the line numbers of the
  records that break a rule, and the *basis* the check stood on (the rules'
  version and the digest of every kit file they read, such as the rubric and
  the allowed-signers file);
* a reader trusts a pack's recorded outcome while the basis still holds (it
  re-hashes those few files), and otherwise checks the pack's records itself;
* loose records, which are few, are always checked as they are read.

What this does not defend against, and what does: a hand-made *pack* can
claim that its records passed. ``pmos ledger verify --schema`` ignores every
recorded outcome and re-applies every rule to every record, and the merge gate
checks every record a change adds in full (docs/how-to/gate-merges-in-ci.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import orjson

from pmos.errors import Violation
from pmos.store import lines


class Screen(Protocol):
    """The writers' rules as a reader applies them (see :mod:`pmos.gate.screen`)."""

    def problems(self, kind: str, record: Any) -> list[Violation]:
        """Every rule ``record`` (stored in the ``kind`` ledger) breaks; empty: none."""
        ...

    def basis(self) -> dict[str, str]:
        """What the checks made so far stood on: the rules' version and the digest
        of every kit file they read. Recorded in a pack with its outcome."""
        ...

    def holds(self, basis: dict[str, str]) -> bool:
        """Whether a recorded basis still describes this kit and these rules, so
        that the outcome recorded with it is the one a check would give now."""
        ...

    def prepare(self, kind: str, records: list[Any]) -> None:
        """``records`` of ``kind`` are about to be checked: look up at once what
        their rules will ask of the kit (one pass, not one per record)."""
        ...


class Exclusion(NamedTuple):
    """A record a reader left out, and why."""

    kind: str
    record_id: str | None
    rule: str
    problem: str
    file: str

    def as_dict(self) -> dict[str, Any]:
        return self._asdict()


@dataclass
class Excluded:
    """Where readers report what they left out: one per report (metrics, queue, ...).

    A record met twice (read by two readers of one report) is reported once.
    """

    items: list[Exclusion] = field(default_factory=list)
    _seen: set[tuple[str, str | None, str]] = field(default_factory=set)

    def add(self, exclusion: Exclusion) -> None:
        key = (exclusion.kind, exclusion.record_id, exclusion.rule)
        if key not in self._seen:
            self._seen.add(key)
            self.items.append(exclusion)

    def as_list(self) -> list[dict[str, Any]]:
        return [e.as_dict() for e in self.items]


class Checked(NamedTuple):
    """A pack's recorded screening: the basis, and per failing record its line
    (1-based, counted after the header), record id, rule and problem."""

    basis: dict[str, str]
    failed: dict[int, tuple[str | None, str, str]]

    def as_json(self) -> dict[str, Any]:
        return {
            "basis": self.basis,
            "failed": [[n, rid, rule, problem] for n, (rid, rule, problem) in self.failed.items()],
        }

    @classmethod
    def from_json(cls, data: Any) -> Checked:
        """Parse a header's ``checked`` member; ValueError when malformed."""
        if not isinstance(data, dict) or set(data) != {"basis", "failed"}:
            raise ValueError("'checked' must hold exactly 'basis' and 'failed'")
        basis, failed = data["basis"], data["failed"]
        if not isinstance(basis, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in basis.items()
        ):
            raise ValueError("'checked.basis' must map names to digests")
        if not isinstance(failed, list):
            raise ValueError("'checked.failed' must be a list")
        out: dict[int, tuple[str | None, str, str]] = {}
        for entry in failed:
            if (
                not isinstance(entry, list)
                or len(entry) != 4
                or type(entry[0]) is not int
                or entry[0] < 1
                or not (entry[1] is None or isinstance(entry[1], str))
                or not all(isinstance(x, str) for x in entry[2:])
            ):
                raise ValueError(f"malformed 'checked.failed' entry {entry!r}")
            out[entry[0]] = (entry[1], entry[2], entry[3])
        return cls(basis, out)


def screen_line(screen: Screen, kind: str, raw: bytes, file: str) -> Exclusion | None:
    """Why the record line ``raw`` (checked, without its newline) is left out, or None.

    Raises :class:`~pmos.store.lines.LineError` or ``orjson.JSONDecodeError``
    for a line that is no record at all.
    """
    return screen_record(screen, kind, orjson.loads(lines.split(raw)[0]), file)


def screen_record(screen: Screen, kind: str, record: Any, file: str) -> Exclusion | None:
    """Why ``record`` (parsed from a stored line) is left out, or None.

    A reader needs one reason, not all: the first rule the record breaks.
    """
    found = screen.problems(kind, record)
    if not found:
        return None
    record_id = record.get("record_id") if isinstance(record, dict) else None
    return Exclusion(
        kind,
        record_id if isinstance(record_id, str) else None,
        found[0].rule,
        f"{found[0].field}: {found[0].message}",
        file,
    )
