"""Evidence pointers and exemplar names, resolved as the writer resolves them.

:mod:`pmos.gate.evidence_pointers` holds the rule: a criterion or dimension
marked ``verified: true`` cites pointers that resolve (a file at the run's head
revision, an assessment check of the run), and the exemplars a verdict names
are calibration cases the kit has. The writer applies it to a new verdict
(:func:`verdict_evidence_problems`); every reader checks the cheap part (a
pointer of a documented form is cited) on stored verdicts; ``pmos ledger
verify`` resolves every stored verdict of ``schema_version`` 2 again
(:func:`verify_with_evidence`), so a hand-written record file whose pointer does
not resolve, or that names an exemplar that does not exist, is reported with the
reason the writer gives. ``pmos gate`` resolves the pointers of each verdict a
change adds (:func:`unresolved_pointers`, :mod:`pmos.merge.decision`).

Resolving reads git (the run's repository) and the kit's assessments and
exemplar cases, once per pass: it is ``pmos ledger verify``'s, never the
metrics readers'.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import msgspec
import orjson

from pmos.errors import Violation
from pmos.gate import exemplars
from pmos.gate.artifact import local_repository
from pmos.gate.evidence_pointers import (
    BY_FORM,
    Resolver,
    evidence_problems,
    exemplar_problems,
)
from pmos.gate.screen import verify_kit
from pmos.kit import Kit
from pmos.store.integrity import BucketScan
from pmos.store.read import records
from pmos.store.verify import KindReport


def verdict_evidence_problems(
    kit: Kit,
    verdict: dict[str, Any],
    run: dict[str, Any] | None,
    assessments: Callable[[], list[dict[str, Any]]],
    known_cases: Callable[[], set[str]],
) -> list[Violation]:
    """Every pointer of ``verdict``'s verified evidence that is missing or does not
    resolve against its ``run`` (its registration: repository and head) and
    ``assessments()`` (the run's), and every exemplar it names that is not among
    ``known_cases()``."""
    head = (run or {}).get("head")
    resolver = Resolver(
        local_repository(kit.root, run), head if isinstance(head, str) else None, assessments
    )
    return evidence_problems(verdict, resolver) + exemplar_problems(verdict, known_cases)


def unresolved_pointers(
    verdict: dict[str, Any],
    repository: Path | None,
    head: Any,
    assessments: Callable[[], list[dict[str, Any]]],
) -> list[Violation]:
    """The pointers of a stored verdict's verified evidence that do not resolve
    against its run's ``repository`` at ``head`` and ``assessments()``; a verified
    item that cites none is left out (every reader reports that one already)."""
    resolver = Resolver(repository, head if isinstance(head, str) else None, assessments)
    cited = {str(v) for v in evidence_problems(verdict, BY_FORM)}
    return [v for v in evidence_problems(verdict, resolver) if str(v) not in cited]


def known_cases(kit: Kit) -> set[str]:
    """The calibration cases a verdict may name as exemplars (``pmos exemplars``)."""
    return {name for a in exemplars.candidates(kit) for name in (a.case_id, a.run_id)}


class _Pass:
    """What resolving many verdicts reads, read once: registrations, assessments by
    run, the exemplar cases."""

    def __init__(self, kit: Kit) -> None:
        self.kit = kit
        self._runs: dict[str, dict[str, Any]] | None = None
        self._assessments: dict[str, list[dict[str, Any]]] | None = None
        self._cases: set[str] | None = None

    def run(self, run_id: str) -> dict[str, Any] | None:
        if self._runs is None:
            self._runs = {}
            for record in records(self.kit.store, "runs", plain=True):
                if isinstance(record.get("run_id"), str):
                    self._runs.setdefault(record["run_id"], record)
        return self._runs.get(run_id)

    def assessments(self, run_id: str) -> list[dict[str, Any]]:
        if self._assessments is None:
            self._assessments = {}
            for record in records(self.kit.store, "assessments", plain=True):
                run = record.get("run_id")
                if isinstance(run, str):
                    self._assessments.setdefault(run, []).append(record)
        return self._assessments.get(run_id, [])

    def cases(self) -> set[str]:
        if self._cases is None:
            self._cases = known_cases(self.kit)
        return self._cases


def verify_with_evidence(kit: Kit, *, recheck_all: bool = False) -> list[KindReport]:
    """``pmos ledger verify``: :func:`pmos.gate.screen.verify_kit`, and every stored
    verdict of ``schema_version`` 2 whose verified evidence does not resolve, or
    that names an exemplar the kit does not have, reported where it is stored.

    Each month of the eval ledger is checked as verification reads it (a month
    of one sound pack decoded in one call): only the fields that say whether a
    verdict cites anything are decoded, and only a verdict that does is parsed
    whole and resolved (a short-form verdict cites nothing)."""
    state = _Pass(kit)

    def resolve(report: KindReport, bucket: BucketScan) -> None:
        for file, line, raw in _citing(bucket):
            for violation in _resolved(kit, state, raw):
                report.add(file, line, f"rule: {violation}")

    return verify_kit(
        kit, recheck_all=recheck_all, each_month={"evals": resolve}, rows={"evals": _Cites}
    )


class _Cites(msgspec.Struct, kw_only=True, gc=False):
    """What says whether a stored verdict cites anything to resolve (left undecoded),
    beside what the store reads of each line of a month read whole (its record id and
    digest), so that such a month is decoded once for both."""

    record_id: str
    digest: str
    schema_version: object = None
    dimensions: msgspec.Raw = msgspec.Raw()
    criteria: msgspec.Raw = msgspec.Raw()
    exemplars: msgspec.Raw = msgspec.Raw()


_CITES = msgspec.json.Decoder(_Cites)


def _cites(row: _Cites) -> bool:
    version = row.schema_version
    return (
        type(version) is int
        and version >= 2
        and bool(len(row.dimensions) or len(row.criteria) or len(row.exemplars))
    )


def _citing(bucket: BucketScan) -> Iterator[tuple[str, int | None, bytes]]:
    """``(file, line, raw line)`` of the month's verdicts that cite something."""
    whole = bucket.whole
    if whole is not None:
        rows: list[Any] | None = whole.keys
        if not (rows and isinstance(rows[0], _Cites)):  # not read for verify: decode them
            try:
                rows = _CITES.decode_lines(whole.body)
            except msgspec.DecodeError:
                rows = None  # a line that does not fit: read line by line below
        if rows is not None:
            # A field that cites is present in a verdict that cites (a short form has none).
            wanted = [
                i
                for i, row in enumerate(rows)
                if (row.dimensions or row.criteria or row.exemplars) and _cites(row)
            ]
            if wanted:
                lines = bytes(whole.body).split(b"\n")
                for i in wanted:
                    yield whole.file, i + 2, lines[i]
            return
    for entry in bucket.stored:
        try:
            cites = _cites(_CITES.decode(entry.raw))
        except msgspec.DecodeError:
            continue  # the record's own problem is reported by verify_kit
        if cites:
            yield entry.file, entry.line, entry.raw


def _resolved(kit: Kit, state: _Pass, raw: bytes) -> list[Violation]:
    """Every pointer a stored verdict's verified evidence cites that does not resolve,
    and every exemplar it names that the kit does not have."""
    try:
        record = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return []  # the record's own problem is reported by verify_kit
    run_id = record.get("run_id") if isinstance(record, dict) else None
    if not isinstance(run_id, str):
        return []
    run = state.run(run_id)
    return unresolved_pointers(
        record,
        local_repository(kit.root, run),
        (run or {}).get("head"),
        partial(state.assessments, run_id),
    ) + exemplar_problems(record, state.cases)
