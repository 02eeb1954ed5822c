"""The writers' rules as a screen for readers (:mod:`pmos.store.screening`).

The store decides when records are checked; this module says what a check is
(:func:`pmos.gate.recheck.stored_record_problems`, every rule a writer
enforces that a stored record can be checked against) and what it stood on:

* :data:`RULES_VERSION`, bumped whenever a writer rule changes, so every
  outcome recorded under the old rules is checked again;
* the digest of every kit file the rules read: ``pmos.yaml`` (rubric, signing
  and other settings), the allowed-signers file when signing is configured, and
  each rubric a verdict named;
* ``until``, when the allowed-signers file has validity windows: the first
  instant after the check at which one opens or closes. Signatures are checked
  at the time of checking (:mod:`pmos.gate.clock`), so an outcome stands only
  until then. (The other rule on time, :func:`pmos.gate.clock.future_dated`,
  can only turn a failure into a pass as time goes on: an outcome recorded
  before errs on the side of leaving a record out.)

A pack's outcome kept in the screening cache (outside the repository,
:mod:`pmos.store.screencache`) holds while its rules version and every one of
those files are unchanged; editing a rubric or the allowed signers makes the
readers check the pack's records again.
"""

from __future__ import annotations

import hashlib
import os
from datetime import datetime
from pathlib import Path
from typing import Any

from pmos.errors import BadInput, ConfigError, Violation
from pmos.gate.clock import FUTURE_DATED
from pmos.gate.recheck import Context, stored_record_problems
from pmos.gate.signing import allowed_signers_path
from pmos.gate.versions import CommittedAtHead, head_commit
from pmos.kit import Kit
from pmos.kit.config import CONFIG_NAME
from pmos.store.verify import BucketCheck, verify_store
from pmos.timestamps import rfc3339

#: The version of the writer rules; change it whenever a rule changes.
RULES_VERSION = "pmos-rules-4"
_ABSENT = "absent"
#: The basis entry naming the commit whose tree an outcome read (version order).
HEAD = "git:HEAD"
#: The basis entry saying until when an outcome stands (see the module docstring).
UNTIL = "until"


def _before(now: datetime, until: str | None) -> bool:
    """Whether ``now`` is before a basis's ``until`` (none: always)."""
    if until is None:
        return True
    try:
        return now < datetime.fromisoformat(until)
    except ValueError:
        return False


class KitScreen:
    """The writers' rules, applied to records stored in one kit."""

    def __init__(self, kit: Kit) -> None:
        self.kit = kit
        self.context = Context(kit)
        self._holds: dict[tuple[tuple[str, str], ...], bool] = {}

    def problems(self, kind: str, record: Any) -> list[Violation]:
        return stored_record_problems(self.kit, kind, record, context=self.context)

    def prepare(self, kind: str, records: list[Any]) -> None:
        if kind == "acceptances":
            named = {r.get("gate_record_id") for r in records if isinstance(r, dict)}
            wanted = {n for n in named if isinstance(n, str)}
            self.context.find_verdicts(wanted)
            if self.context.signatures.path is not None:  # signatures bind verdicts
                self.context.want_digests(wanted)
            self.context.signatures.warm(records)

    def basis(self) -> dict[str, str]:
        files = [CONFIG_NAME, *self._signers(), *self.context.rubrics_read]
        basis = {"rules": RULES_VERSION, **{f"file:{p}": self._digest(p) for p in files}}
        until = self._until()
        if until is not None:
            basis[UNTIL] = rfc3339(until)
        order = self.context.order
        if isinstance(order, CommittedAtHead) and order.head is not None:
            # An older-version record was judged by what HEAD holds: the outcome
            # stands only while HEAD is that commit (committing it changes it).
            basis[HEAD] = order.head
        return basis

    def ledgers_read(self) -> list[str]:
        return self.context.ledgers_read

    def transient(self, rule: str) -> bool:
        return rule == FUTURE_DATED

    def _until(self) -> datetime | None:
        try:
            return self.context.signatures.changes_after()
        except (BadInput, ConfigError):
            return None  # a misconfigured file: every label's check says so

    def holds(self, basis: dict[str, str]) -> bool:
        key = tuple(sorted(basis.items()))
        found = self._holds.get(key)
        if found is None:
            needed = {f"file:{p}" for p in (CONFIG_NAME, *self._signers())}
            found = (
                basis.get("rules") == RULES_VERSION
                and needed <= basis.keys()
                and _before(self.context.now, basis.get(UNTIL))
                and (HEAD not in basis or basis[HEAD] == head_commit(self.kit.root))
                and all(
                    self._digest(name[5:]) == digest
                    for name, digest in basis.items()
                    if name.startswith("file:")
                )
            )
            self._holds[key] = found
        return found

    def _signers(self) -> list[str]:

        try:
            path = allowed_signers_path(self.kit.config, self.kit.root)
        except BadInput:
            return []  # a misconfigured file: every label's check says so
        if path is None:
            return []
        try:
            return [path.relative_to(os.path.realpath(self.kit.root)).as_posix()]
        except ValueError:
            return [str(path)]

    def _digest(self, relative: str) -> str:
        path = Path(relative) if Path(relative).is_absolute() else self.kit.root / relative
        try:
            return hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            return _ABSENT


def verify_kit(
    kit: Kit,
    *,
    recheck_all: bool = False,
    each_month: dict[str, BucketCheck] | None = None,
    rows: dict[str, type] | None = None,
) -> list[Any]:
    """``pmos ledger verify``: every file sound, and every record within the writers'
    rules. By default every record is screened (a pack's outcome may come from
    the cache outside the repository); ``recheck_all`` (``--schema``) checks every
    record's schema and every rule with no cache. ``each_month`` and ``rows``: see
    :func:`pmos.store.verify.verify_store`."""

    if not recheck_all:
        return verify_store(
            kit.store, screen=KitScreen(kit), each_month=each_month, rows=rows, ids=False
        )
    context = Context(kit)

    def check(kind: str, record: dict[str, Any]) -> list[Violation]:
        return stored_record_problems(kit, kind, record, context=context)

    return verify_store(kit.store, check=check, each_month=each_month, ids=False)
