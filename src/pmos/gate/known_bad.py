"""Seeded known-bad runs: a negative class for kappa before real failures exist.

A new team's gate has judged only runs that passed, so its TNR is undefined
and its kappa cannot be computed. Each folder under ``planning/evals/known-bad``
is a small defective run: ``contract.yaml`` (the done-criteria), the artifact
(a diff or a few files) and ``expected.yaml`` (the answer key: FAIL, the defect
that must be found, the probe that finds it). Seeding registers each as a run
with its contract and records the PM label ``fail`` by ``seeded``. The gate
then judges the runs blind like any other; its verdicts pair with those labels.

Seeding is idempotent: a case whose run is registered is not registered
again, and a run that already has a PM label is not labelled again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pmos import schemas
from pmos.errors import BadInput, RecordRejected
from pmos.gate.rules import check_contract_ids
from pmos.gate.seeded import INITIATIVE, LABELLER, RUN_PREFIX
from pmos.gate.writers import record_acceptance, register_run
from pmos.inputs import read_input_text
from pmos.kit import Kit
from pmos.paths import resolve_inside
from pmos.store import lookup
from pmos.store.append import record_meta, schema_problems
from pmos.store.read import records
from pmos.yamlio import load_yaml

DEFAULT_DIR = "planning/evals/known-bad"
DEFAULT_BUILDER = "seeded"


CONTRACT, EXPECTED = "contract.yaml", "expected.yaml"


class KnownBadError(BadInput):
    """One or more case folders are unusable; nothing was seeded."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"known-bad cases are invalid; nothing was seeded:\n{lines}")


@dataclass(frozen=True)
class Case:
    case_id: str
    folder: Path
    contract: dict[str, Any]
    expected: dict[str, Any]
    artifacts: tuple[str, ...]

    @property
    def run_id(self) -> str:
        return RUN_PREFIX + self.case_id


@dataclass
class Seeded:
    case: Case
    registered: bool
    labelled: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "case_id": self.case.case_id,
            "run_id": self.case.run_id,
            "probe": self.case.expected["probe"],
            "defect_class": self.case.expected["defect_class"],
            "registered": self.registered,
            "labelled": self.labelled,
        }


@dataclass
class SeedReport:
    seeded: list[Seeded] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "cases": [s.as_dict() for s in self.seeded],
            "registered": [s.case.run_id for s in self.seeded if s.registered],
            "labelled": [s.case.run_id for s in self.seeded if s.labelled],
        }


def cases_dir(kit: Kit) -> Path:
    configured = kit.config.raw.get("known_bad_dir", DEFAULT_DIR)
    real = resolve_inside(kit.root, configured, what="known_bad_dir", for_writing=False)
    if not real.is_dir():
        raise BadInput(f"known_bad_dir {configured!r} is not a folder in the kit root {kit.root}")
    return real


def _load_yaml(path: Path, problems: list[str]) -> Any:
    try:
        return load_yaml(read_input_text(path, what="known-bad file", stdin_ok=False))
    except BadInput as exc:
        problems.append(str(exc))
    except yaml.YAMLError as exc:
        problems.append(f"{path}: cannot be read as YAML: {exc}")
    return None


def load_case(folder: Path) -> tuple[Case | None, list[str]]:
    """One case and every problem with it (the case is None when there is any)."""
    problems: list[str] = []
    contract = _load_yaml(folder / CONTRACT, problems)
    expected = _load_yaml(folder / EXPECTED, problems)
    if problems:
        return None, problems
    probe_run = {
        **record_meta("runs"),
        "run_id": RUN_PREFIX + folder.name,
        "initiative_id": INITIATIVE,
        "builder_model": DEFAULT_BUILDER,
        "contract": contract,
    }
    bad_contract = schema_problems("runs", probe_run)
    if not bad_contract:
        bad_contract = check_contract_ids(contract)
    problems += [f"{folder / CONTRACT}: {v}" for v in bad_contract]
    found = schemas.validate("known-bad", expected)
    problems += [f"{folder / EXPECTED}: {v}" for v in found]
    if not found and expected["case_id"] != folder.name:
        problems.append(
            f"{folder / EXPECTED}: case_id {expected['case_id']!r} must equal the folder "
            f"name {folder.name!r}"
        )
    # The answer key is checked against the contract only when both have the
    # shape their schemas promise; a malformed one is already reported above.
    if not found and not bad_contract:
        ids = {c["id"] for c in contract["done_criteria"]}
        for cid in expected["failed_criteria"]:
            if cid not in ids:
                problems.append(
                    f"{folder / EXPECTED}: failed criterion {cid!r} is not in {CONTRACT}"
                )
    artifacts = tuple(
        sorted(
            p.relative_to(folder).as_posix()
            for p in folder.rglob("*")
            if p.is_file() and p.name not in (CONTRACT, EXPECTED)
        )
    )
    if not artifacts:
        problems.append(f"{folder}: holds no artifact (a diff or files) besides the YAML files")
    if problems:
        return None, problems
    return Case(folder.name, folder, contract, expected, artifacts), []


def load_cases(kit: Kit) -> list[Case]:
    """Every case, validated; raises :class:`KnownBadError` naming every problem."""
    folder = cases_dir(kit)
    cases: list[Case] = []
    problems: list[str] = []
    for sub in sorted(p for p in folder.iterdir() if p.is_dir()):
        case, found = load_case(sub)
        problems += found
        if case is not None:
            cases.append(case)
    if problems:
        raise KnownBadError(problems)
    if not cases:
        raise BadInput(f"{folder} holds no known-bad case")
    return cases


def seed(kit: Kit) -> SeedReport:
    """Register every case as a run and label it fail; skip what is already there."""

    # Both ledgers must be writable before the first run is registered, or a
    # refused seed would leave runs behind without their labels.
    kit.store.ensure_folder("runs")
    kit.store.ensure_folder("acceptances")
    for _ in records(kit.store, "acceptances"):
        pass
    report = SeedReport()
    for case in load_cases(kit):
        registered = labelled = False
        if lookup.find_run(kit.store, case.run_id) is None:
            try:
                register_run(
                    kit,
                    run_id=case.run_id,
                    initiative_id=INITIATIVE,
                    builder_model=case.expected.get("builder_model", DEFAULT_BUILDER),
                    contract=case.contract,
                )
                registered = True
            except RecordRejected as exc:
                # Another seeding process registered it between the look-up and the lock.
                if not all(v.rule == "run-unique" for v in exc.violations):
                    raise
        # Checked under the acceptances lock: concurrent seeds label a run once.
        written = record_acceptance(
            kit,
            run_id=case.run_id,
            label="fail",
            by=LABELLER,
            note=(
                "seeded known-bad case; the answer key is "
                f"{case.case_id}/{EXPECTED} in the known-bad folder"
            ),
            only_if_unlabelled=True,
        )
        if written is not None:
            report.warnings += written.warnings
            labelled = True
        report.seeded.append(Seeded(case, registered, labelled))
    return report
