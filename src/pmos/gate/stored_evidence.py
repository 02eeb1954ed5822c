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

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from pmos.errors import PmosError, Violation
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
from pmos.store.integrity import scan
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
    that names an exemplar the kit does not have, reported where it is stored."""
    reports = verify_kit(kit, recheck_all=recheck_all)
    evals = next((r for r in reports if r.kind == "evals"), None)
    if evals is None:
        return reports
    state = _Pass(kit)
    try:
        buckets = list(scan(kit.store.sources("evals"), "evals"))
    except PmosError:
        return reports  # the ledger itself is unreadable: verify_kit reported it
    for bucket in buckets:
        for entry in bucket.stored:
            try:
                record = orjson.loads(entry.raw)
            except orjson.JSONDecodeError:
                continue  # the record's own problem is reported by verify_kit
            if not isinstance(record, dict) or record.get("schema_version", 1) < 2:
                continue
            run_id = record.get("run_id")
            if not isinstance(run_id, str):
                continue
            run = state.run(run_id)
            found = unresolved_pointers(
                record,
                local_repository(kit.root, run),
                (run or {}).get("head"),
                partial(state.assessments, run_id),
            ) + exemplar_problems(record, state.cases)
            for violation in found:
                evals.add(entry.file, entry.line, f"rule: {violation}")
    return reports
