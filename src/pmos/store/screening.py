"""Screening: readers leave out records that break a writer's rule, and say so.

A record line's digest proves only that somebody followed the recipe; anyone
can write a well-formed loose record file by hand. So the readers that light a
gate (metrics, queue, exemplars, scores) take a :class:`Screen`: the writers'
rules, applied to each stored record. A record that breaks one is not counted;
it is reported, with its record id and the rule, as an :class:`Exclusion`.

The rules live with the writers (:mod:`pmos.gate.screen` makes the screen);
the store applies them to every record a gate reader reads. Nothing committed
says a record passed: a pack is screened like loose records. What a pack's
screening found may be remembered outside the repository, in a cache keyed by
the SHA-256 of the pack's bytes as read and checked against the screen's
*basis* (the rules' version and the digest of every kit file they read, such
as pmos.yaml, the rubrics and the allowed-signers file): see
:mod:`pmos.store.screencache`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from pmos.errors import Violation


class Screen(Protocol):
    """The writers' rules as a reader applies them (see :mod:`pmos.gate.screen`)."""

    def problems(self, kind: str, record: Any) -> list[Violation]:
        """Every rule ``record`` (stored in the ``kind`` ledger) breaks; empty: none."""
        ...

    def basis(self) -> dict[str, str]:
        """What the checks made so far stood on: the rules' version and the digest
        of every kit file they read. Kept with a cached outcome."""
        ...

    def ledgers_read(self) -> list[str]:
        """The ledger kinds whose records the checks made so far read (a run's
        registration, the verdict a label names, the newest version a kind
        holds). A loose record's remembered outcome holds only while the files
        of these ledgers are the ones it was checked beside
        (:func:`pmos.store.screencache.load_loose`)."""
        ...

    def transient(self, rule: str) -> bool:
        """Whether a record that breaks ``rule`` may stop breaking it as time passes,
        nothing else changed (a record dated after the time of checking): a loose
        record's outcome naming such a rule is not remembered."""
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
    _seen: set[tuple[str, str | None, str, str]] = field(default_factory=set)

    def add(self, exclusion: Exclusion) -> None:
        key = (exclusion.kind, exclusion.record_id, exclusion.rule, exclusion.file)
        if key not in self._seen:
            self._seen.add(key)
            self.items.append(exclusion)

    def as_list(self) -> list[dict[str, Any]]:
        return [e.as_dict() for e in self.items]


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
