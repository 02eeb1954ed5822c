"""The validated writers: the only way a record enters a ledger.

Each writer builds the stored record (adding the fields the writer owns),
validates it against its schema and the rules of its kind, and appends it
under the ledger lock. Any violation raises :class:`RecordRejected` listing
every problem, and nothing is written. Checks that read the ledger being
written (a run registered once, the pass fraction before a verdict) run under
that ledger's lock, so concurrent writers cannot both pass them.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from pmos.errors import BadInput, RecordRejected, Violation
from pmos.gate import pass_fraction
from pmos.gate import rules as verdict_rules
from pmos.gate.families import same_family
from pmos.gate.rubric import Rubric, load_rubric
from pmos.inputs import read_input_text
from pmos.kit import Kit
from pmos.store import lookup
from pmos.store.append import (
    Draft,
    Written,
    append,
    record_meta,
    reject_if,
    schema_problems,
    writer_field_violations,
)
from pmos.store.vocabulary import SKIPPED

# ---------------------------------------------------------------- runs


def register_run(
    kit: Kit,
    *,
    run_id: str,
    initiative_id: str,
    builder_model: str,
    contract: dict[str, Any] | None = None,
    target: str | Path | None = None,
) -> Written:
    record: dict[str, Any] = {
        **record_meta("runs"),
        "run_id": run_id,
        "initiative_id": initiative_id,
        "builder_model": builder_model,
    }
    if contract is not None:
        record["contract"] = contract

    def build() -> Draft:
        problems = schema_problems("runs", record)
        if not problems and contract is not None:
            problems += verdict_rules.check_contract_ids(contract)
        if not problems and lookup.find_run(kit.store, run_id) is not None:
            problems.append(
                Violation("run-unique", "run_id", f"run {run_id!r} is already registered")
            )
        reject_if("runs", problems)
        return Draft([record])

    return append(kit.store, "runs", build, target=target)


def load_contract(path: Path) -> dict[str, Any]:
    """Read a contract file (YAML or JSON; JSON is YAML) into a mapping."""
    import yaml

    from pmos.yamlio import load_yaml

    text = read_input_text(path, what="contract", stdin_ok=False)
    try:
        data = load_yaml(text)
    except yaml.YAMLError as exc:
        raise BadInput(f"contract {path} is not valid YAML or JSON: {exc}") from None
    if not isinstance(data, dict):
        raise BadInput(f"contract {path} must be a mapping with done_criteria")
    return data


# ---------------------------------------------------------------- verdicts


def record_verdict(kit: Kit, verdict: Any, *, target: str | Path | None = None) -> Written:
    """Store a full verdict object (the form ``pmos eval record`` takes)."""
    if not isinstance(verdict, dict):
        raise RecordRejected("verdict", [Violation("schema:type", "(record)", "not a JSON object")])
    problems = writer_field_violations(verdict)
    record = {**record_meta("evals"), "form": "full", **verdict}
    return _record_verdict(kit, record, problems, target)


def record_short_verdict(
    kit: Kit,
    *,
    run_id: str,
    initiative_id: str,
    verdict: str,
    score: float | None = None,
    rubric_path: str | None = None,
    evaluator_model: str | None = None,
    spec: str | None = None,
    standards: str | None = None,
    note: str | None = None,
    skipped_reason: str | None = None,
    target: str | Path | None = None,
) -> Written:
    """Store the kit's short positional form (``pmos eval log``); no dimensions."""
    if verdict == SKIPPED and (spec is not None or standards is not None):
        raise BadInput("a SKIPPED verdict takes no --spec or --standards: a skip is not a judgment")
    record: dict[str, Any] = {
        **record_meta("evals"),
        "form": "short",
        "run_id": run_id,
        "initiative_id": initiative_id,
        "verdict": verdict,
        "score": score,
    }
    optional = {
        "rubric_path": rubric_path,
        "evaluator_model": evaluator_model,
        "note": note,
        "skipped_reason": skipped_reason,
    }
    record.update({k: v for k, v in optional.items() if v is not None})
    if verdict != SKIPPED:
        axes = {}
        if spec is not None:
            axes["spec"] = {"verdict": spec}
        if standards is not None:
            axes["standards"] = {"verdict": standards}
        record["axes"] = axes
    return _record_verdict(kit, record, [], target)


SHORT_FORM_USAGE = (
    "usage: pmos eval log RUN_ID INITIATIVE_ID SCORE VERDICT RUBRIC_PATH [EVALUATOR_MODEL] "
    "--spec pass|fail --standards pass|fail [--note TEXT]\n"
    "   or: pmos eval log RUN_ID INITIATIVE_ID SKIPPED REASON [RUBRIC_PATH] [EVALUATOR_MODEL]"
)


def parse_short_form(
    args: list[str], *, spec: str | None, standards: str | None, note: str | None
) -> dict[str, Any]:
    """The fields of :func:`record_short_verdict` from the kit's positional form.

    The grammar is the kit's documented call (``scripts/pmos-log.sh eval ...``):
    a judged verdict needs a numeric SCORE and both axes; a SKIPPED one takes a
    reason and no axes. EVALUATOR_MODEL defaults to ``$PMOS_EVALUATOR_MODEL``.
    """
    if len(args) < 4:
        raise BadInput(f"too few arguments\n{SHORT_FORM_USAGE}")
    run_id, initiative_id, third, fourth, *rest = args
    fields: dict[str, Any] = {"run_id": run_id, "initiative_id": initiative_id, "note": note}
    if third == SKIPPED:
        if len(rest) > 2:
            raise BadInput(f"too many arguments\n{SHORT_FORM_USAGE}")
        fields.update(verdict=third, skipped_reason=fourth, spec=spec, standards=standards)
        fields["rubric_path"] = rest[0] if rest else None
    else:
        if not rest or len(rest) > 2:
            raise BadInput(f"expected RUBRIC_PATH and at most EVALUATOR_MODEL\n{SHORT_FORM_USAGE}")
        try:
            score = float(third)
        except ValueError:
            raise BadInput(f"SCORE must be a number from 0 to 1, got {third!r}") from None
        if not math.isfinite(score):
            raise BadInput(f"SCORE must be a finite number, got {third!r}")
        missing = [name for name, v in (("--spec", spec), ("--standards", standards)) if v is None]
        if missing:
            raise BadInput(
                f"missing {' and '.join(missing)}: declare both axes\n{SHORT_FORM_USAGE}"
            )
        fields.update(
            verdict=fourth, score=score, rubric_path=rest[0], spec=spec, standards=standards
        )
    fields["evaluator_model"] = rest[1] if len(rest) > 1 else evaluator_model_from_env()
    if fields["evaluator_model"] is None and third != SKIPPED:
        raise BadInput(
            "EVALUATOR_MODEL is missing: give the evaluator's model as the sixth argument, "
            "after RUBRIC_PATH, or set PMOS_EVALUATOR_MODEL\n" + SHORT_FORM_USAGE
        )
    return fields


def _record_verdict(
    kit: Kit, record: dict[str, Any], problems: list[Violation], target: str | Path | None
) -> Written:
    def build() -> Draft:
        # Under the evals lock: the pass fraction is exactly the one before this record.
        record["pass_fraction"] = pass_fraction.recent_pass_fraction(
            kit.store, kit.config.pass_fraction_window
        )
        found = problems + schema_problems("evals", record)
        rubric = _rubric_of(kit, record, found)
        if not found and rubric is not None and record["verdict"] != SKIPPED:
            check = (
                verdict_rules.check_full if record["form"] == "full" else verdict_rules.check_short
            )
            found += check(record, rubric)
        run = None
        if not found:
            run = lookup.find_run(kit.store, record["run_id"])
            found += _check_against_run(record, run)
        reject_if("evals", found)
        flags, notes = _verdict_flags(kit, record, run)
        if flags:
            record["flags"] = flags
        return Draft([record], notes)

    return append(kit.store, "evals", build, target=target)


def _rubric_of(kit: Kit, record: dict[str, Any], problems: list[Violation]) -> Rubric | None:
    """Load the rubric the record names (normalising its path), noting a bad one."""
    rubric_path = record.get("rubric_path")
    if not isinstance(rubric_path, str) or not rubric_path:
        return None
    try:
        rubric = load_rubric(kit.root, rubric_path)
    except BadInput as exc:
        problems.append(Violation("rubric-path", "rubric_path", str(exc)))
        return None
    record["rubric_path"] = rubric.path
    return rubric


def _check_against_run(record: dict[str, Any], run: dict[str, Any] | None) -> list[Violation]:
    if run is None:
        return []
    problems: list[Violation] = []
    if record["initiative_id"] != run["initiative_id"]:
        problems.append(
            Violation(
                "run-match",
                "initiative_id",
                f"{record['initiative_id']!r}, but run {run['run_id']!r} was registered under "
                f"{run['initiative_id']!r}",
            )
        )
    builder = record.get("builder_model")
    if builder is not None and builder != run["builder_model"]:
        problems.append(
            Violation(
                "run-match",
                "builder_model",
                f"{builder!r}, but run {run['run_id']!r} was registered as built by "
                f"{run['builder_model']!r}",
            )
        )
    contract = run.get("contract")
    if record["form"] == "full" and "criteria" in record and contract:
        problems += verdict_rules.check_contract(record["criteria"], contract)
    return problems


def _verdict_flags(
    kit: Kit, record: dict[str, Any], run: dict[str, Any] | None
) -> tuple[list[str], list[str]]:
    flags: list[str] = []
    notes: list[str] = []
    if run is None:
        flags.append("unregistered-run")
        notes.append(
            f"run {record['run_id']!r} was never registered ('pmos run register'); "
            "the verdict is flagged unregistered-run"
        )
    builder = record.get("builder_model") or (run or {}).get("builder_model")
    evaluator = record.get("evaluator_model")
    if builder and evaluator:
        family = same_family(builder, evaluator, kit.config.model_families)
        if family:
            flags.append("same-family")
            notes.append(
                f"builder {builder!r} and evaluator {evaluator!r} are both {family} models: "
                "self-preference bias is likely; a cross-family spot-check is due"
            )
    return flags, notes


# ---------------------------------------------------------------- acceptance

#: The rule that refuses a label for a run the kit has never seen.
UNKNOWN_RUN = "unknown-run"


def record_acceptance(
    kit: Kit,
    *,
    run_id: str,
    label: str,
    by: str,
    note: str | None = None,
    target: str | Path | None = None,
    only_if_unlabelled: bool = False,
    refuse_unknown_run: bool = False,
) -> Written | None:
    """Store a PM's acceptance label; it supersedes any earlier label of the run.

    The label is stored against the run's latest judged (non-SKIPPED) verdict
    (``gate_verdict``, ``gate_record_id``): a skip is no judgement to accept or
    reject. A label on the other side of that verdict is an override: it is
    also appended to the exemplar log, naming the same verdict, and a warning
    says so.

    With ``only_if_unlabelled`` nothing is written, and None is returned, when
    the run already has a label. That check runs under the acceptances lock,
    so concurrent callers (seeding) label a run once; without it the result is
    never None.

    With ``refuse_unknown_run`` (what ``pmos accept`` passes unless told
    ``--allow-unknown-run``), a run the kit has never seen (not registered, no
    verdict of any kind) is refused (``unknown-run``): a label is permanent,
    and a label for a run nobody registered or judged is far more often a typo
    in the run id than a run recorded elsewhere. Programs that label runs they
    know about (seeding, tests, other kits' imports) keep the old behaviour.
    """
    from pmos.gate import exemplars

    already = "already-labelled"
    # The verdict this label overrides, found under the lock by build().
    overridden: dict[str, dict[str, Any]] = {}

    def build() -> Draft:
        if only_if_unlabelled and lookup.find_label(kit.store, run_id) is not None:
            raise RecordRejected(
                "acceptance", [Violation(already, "run_id", f"run {run_id!r} is labelled")]
            )
        record: dict[str, Any] = {
            **record_meta("acceptances"),
            "run_id": run_id,
            "label": label,
            "by": by,
        }
        if note is not None:
            record["note"] = note
        notes: list[str] = []
        run = lookup.find_run(kit.store, run_id)
        if run is not None:
            record["initiative_id"] = run["initiative_id"]
        else:
            record["flags"] = ["unregistered-run"]
            notes.append(f"run {run_id!r} was never registered; the label is flagged")
        latest = lookup.latest_verdict(kit.store, run_id, judged=True)
        unknown = run is None and latest is None and refuse_unknown_run
        if unknown and lookup.latest_verdict(kit.store, run_id) is None:
            raise RecordRejected("acceptance", [_unknown_run(run_id)])
        record["gate_verdict"] = latest["verdict"] if latest else None
        record["gate_record_id"] = latest["record_id"] if latest else None
        reject_if("acceptances", schema_problems("acceptances", record))
        # Checks the exemplar log before anything is stored (raises if it is malformed).
        verdict = exemplars.overridden_verdict(kit, run_id, label)
        if verdict is not None:
            overridden["verdict"] = verdict
            # A verdict recorded between the two look-ups (the evals ledger is
            # not locked here): the label names the verdict its override names.
            record["gate_verdict"], record["gate_record_id"] = (
                verdict["verdict"],
                verdict["record_id"],
            )
        return Draft([record], notes)

    try:
        written = append(kit.store, "acceptances", build, target=target)
    except RecordRejected as exc:
        if only_if_unlabelled and [v.rule for v in exc.violations] == [already]:
            return None
        raise
    if overridden:
        written.warnings.append(exemplars.log_override(kit, written.record, overridden["verdict"]))
    return written


def _unknown_run(run_id: str) -> Violation:
    return Violation(
        UNKNOWN_RUN,
        "run_id",
        f"the kit has never seen run {run_id!r}: it is not registered and has no verdict. "
        "Check RUN_ID for a typo ('pmos queue' and 'pmos ledger show runs' list known runs), "
        "or pass --allow-unknown-run to label it anyway",
    )


def evaluator_model_from_env() -> str | None:
    return os.environ.get("PMOS_EVALUATOR_MODEL") or None
