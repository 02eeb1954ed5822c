"""The validated writers: the only way a record enters a ledger.

Each writer builds the stored record (adding the fields the writer owns),
validates it against its schema and the rules of its kind, and appends it
under the ledger lock. Any violation raises :class:`RecordRejected` listing
every problem, and nothing is written. Checks that read the ledger being
written (a run registered once, the pass fraction before a verdict) run under
that ledger's lock, so concurrent writers cannot both pass them.
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path
from typing import Any

import yaml

from pmos.errors import BadInput, RecordRejected, Violation
from pmos.gate import exemplars, pass_fraction, signing
from pmos.gate import plan as labelling_plan
from pmos.gate import rules as verdict_rules
from pmos.gate.artifact import run_artifact
from pmos.gate.clock import checking_time, future_dated, label_before_verdict
from pmos.gate.families import same_family
from pmos.gate.rubric import Rubric, load_rubric
from pmos.gate.stored_evidence import known_cases, verdict_evidence_problems
from pmos.gate.versions import LABEL_SCHEMA_VERSION, VERDICT_SCHEMA_VERSION
from pmos.gate.vocabulary import PASS_SIDE, SKIPPED, is_judged
from pmos.inputs import read_input_text
from pmos.kit import Kit
from pmos.store import lookup
from pmos.store.append import (
    Draft,
    Written,
    append,
    new_record_id,
    record_meta,
    reject_if,
    schema_problems,
    seal,
    writer_field_violations,
)
from pmos.store.read import records
from pmos.yamlio import load_yaml

# ---------------------------------------------------------------- runs


def register_run(
    kit: Kit,
    *,
    run_id: str,
    initiative_id: str,
    builder_model: str,
    contract: dict[str, Any] | None = None,
    repo: str | None = None,
    base: str | None = None,
    head: str | None = None,
    target: str | Path | None = None,
) -> Written:
    """Register a run, its pre-run contract and what it built (``repo``, ``base``,
    ``head``: see :mod:`pmos.gate.artifact`), once per run id."""

    record: dict[str, Any] = {
        **record_meta("runs"),
        "run_id": run_id,
        "initiative_id": initiative_id,
        "builder_model": builder_model,
    }
    if contract is not None:
        record["contract"] = contract
    record.update(run_artifact(kit.root, repo=repo, base=base, head=head))
    # Everything that does not depend on the ledger is checked before its lock
    # is taken, the store's validation included (seal), so a large contract
    # never holds up other writers.
    sealed = seal("runs", record)
    if contract is not None:
        reject_if("runs", verdict_rules.check_contract_ids(contract))

    def build() -> Draft:
        if lookup.find_run(kit.store, run_id) is not None:
            reject_if(
                "runs",
                [Violation("run-unique", "run_id", f"run {run_id!r} is already registered")],
            )
        return Draft([sealed])

    return append(kit.store, "runs", build, target=target)


def load_contract(path: Path) -> dict[str, Any]:
    """Read a contract file (YAML or JSON; JSON is YAML) into a mapping."""
    text = read_input_text(path, what="contract", stdin_ok=False)
    try:
        data = load_yaml(text)
    except yaml.YAMLError as exc:
        raise BadInput(f"contract {path} is not valid YAML or JSON: {exc}") from None
    if not isinstance(data, dict):
        raise BadInput(f"contract {path} must be a mapping with done_criteria")
    return data


# ---------------------------------------------------------------- verdicts

#: The verdict layout the writers produce: 2 since each dimension and criterion
#: carries ``verified`` (readers still take version 1 records).


def record_verdict(
    kit: Kit,
    verdict: Any,
    *,
    target: str | Path | None = None,
    refuse_unknown_run: bool = False,
) -> Written:
    """Store a full verdict object (the form ``pmos eval record`` takes).

    With ``refuse_unknown_run`` (what ``pmos eval record`` passes unless told
    ``--allow-unknown-run``), a verdict for a run that is not registered is
    refused (``unknown-run``): it is most often a typo in the run id, which would
    leave the real run owed and make a phantom one."""
    if not isinstance(verdict, dict):
        raise RecordRejected("verdict", [Violation("schema:type", "(record)", "not a JSON object")])
    problems = writer_field_violations(verdict) + verdict_rules.check_verified(verdict)
    record = {**record_meta("evals"), "form": "full", **verdict}
    record["schema_version"] = VERDICT_SCHEMA_VERSION
    return _record_verdict(kit, record, problems, target, refuse_unknown_run)


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
    criteria: list[dict[str, Any]] | None = None,
    target: str | Path | None = None,
    refuse_unknown_run: bool = False,
) -> Written:
    """Store the kit's short positional form (``pmos eval log``); no dimensions
    (``refuse_unknown_run``: see :func:`record_verdict`).

    ``criteria`` grade the run's contract as the full form does (a run with a
    contract is refused without them); the spec axis, when not given, is
    derived from them, and when given must agree with them.
    """
    if verdict == SKIPPED and (spec is not None or standards is not None or criteria):
        raise BadInput(
            "a SKIPPED verdict takes no --spec, --standards or --criterion: "
            "a skip is not a judgment"
        )
    if criteria and spec is None:
        spec = verdict_rules.derive_spec(criteria)
    record: dict[str, Any] = {
        **record_meta("evals"),
        "schema_version": VERDICT_SCHEMA_VERSION,
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
        if criteria:
            record["criteria"] = criteria
    return _record_verdict(
        kit, record, verdict_rules.check_verified(record), target, refuse_unknown_run
    )


SHORT_FORM_USAGE = (
    "usage: pmos eval log RUN_ID INITIATIVE_ID SCORE VERDICT RUBRIC_PATH [EVALUATOR_MODEL] "
    "[--criterion ID=pass|fail|unverified[:EVIDENCE]]... [--spec pass|fail] "
    "--standards pass|fail [--note TEXT]\n"
    "   (a run with a contract: one --criterion per done-criterion; --spec is derived from them)\n"
    "   or: pmos eval log RUN_ID INITIATIVE_ID SKIPPED REASON [RUBRIC_PATH] [EVALUATOR_MODEL]"
)


CRITERION_RESULTS = ("pass", "fail", "unverified")


def parse_criterion(text: str) -> dict[str, Any]:
    """One ``--criterion ID=pass|fail|unverified[:EVIDENCE]`` grade.

    ``unverified`` is stored as the full form says it: result fail with
    ``verified: false`` (a criterion that was not checked is not met).
    """
    cid, sep, rest = text.partition("=")
    result, _, evidence = rest.partition(":")
    result = result.strip().lower()
    if not sep or not cid.strip() or result not in CRITERION_RESULTS:
        raise BadInput(
            f"--criterion {text!r}: expected ID=pass|fail|unverified[:EVIDENCE], "
            "for example --criterion c1=pass:tests/test_api.py::test_404"
        )
    # Without evidence nothing shows a check happened: the grade is unverified
    # (and a pass that is unverified is refused, naming the evidence it needs).
    grade: dict[str, Any] = {
        "id": cid.strip(),
        "result": "fail" if result == "unverified" else result,
        "verified": result != "unverified" and bool(evidence.strip()),
    }
    if evidence.strip():
        grade["evidence"] = evidence.strip()
    return grade


#: A plain decimal: ASCII digits, optionally a point and more digits. Python's
#: float() also takes "0.8_2", "1e-1", " 0.8", "nan", "infinity" and other
#: scripts' digits, none of which a score typed on a command line should be.
_PLAIN_DECIMAL = re.compile(r"[0-9]+(?:\.[0-9]+)?")


def parse_plain_decimal(text: str, what: str) -> float:
    """``text`` as a number when it is a plain decimal such as 0.82; else bad input."""
    if not _PLAIN_DECIMAL.fullmatch(text):
        raise BadInput(
            f"{what} must be a plain decimal number from 0 to 1 (digits, optionally a point "
            f"and more digits, e.g. 0.82), got {text!r}"
        )
    return float(text)


def parse_short_form(
    args: list[str],
    *,
    spec: str | None,
    standards: str | None,
    note: str | None,
    criteria: list[str] | None = None,
) -> dict[str, Any]:
    """The fields of :func:`record_short_verdict` from the kit's positional form.

    The grammar is the kit's documented call (``scripts/pmos-log.sh eval ...``):
    a judged verdict needs a numeric SCORE, the standards axis and either the
    spec axis or the graded criteria it is derived from; a SKIPPED one takes a
    reason and no axes. EVALUATOR_MODEL defaults to ``$PMOS_EVALUATOR_MODEL``.
    """
    grades = [parse_criterion(c) for c in criteria or ()]
    if len(args) < 4:
        raise BadInput(f"too few arguments\n{SHORT_FORM_USAGE}")
    run_id, initiative_id, third, fourth, *rest = args
    fields: dict[str, Any] = {"run_id": run_id, "initiative_id": initiative_id, "note": note}
    if third == SKIPPED:
        if len(rest) > 2:
            raise BadInput(f"too many arguments\n{SHORT_FORM_USAGE}")
        fields.update(
            verdict=third, skipped_reason=fourth, spec=spec, standards=standards, criteria=grades
        )
        fields["rubric_path"] = rest[0] if rest else None
    else:
        if not rest or len(rest) > 2:
            raise BadInput(f"expected RUBRIC_PATH and at most EVALUATOR_MODEL\n{SHORT_FORM_USAGE}")
        score = parse_plain_decimal(third, "SCORE")
        needed = (("--spec or --criterion", spec or grades), ("--standards", standards))
        missing = [name for name, v in needed if not v]
        if missing:
            raise BadInput(
                f"missing {' and '.join(missing)}: declare both axes\n{SHORT_FORM_USAGE}"
            )
        fields.update(
            verdict=fourth,
            score=score,
            rubric_path=rest[0],
            spec=spec,
            standards=standards,
            criteria=grades,
        )
    fields["evaluator_model"] = rest[1] if len(rest) > 1 else evaluator_model_from_env()
    if fields["evaluator_model"] is None and third != SKIPPED:
        raise BadInput(
            "EVALUATOR_MODEL is missing: give the evaluator's model as the sixth argument, "
            "after RUBRIC_PATH, or set PMOS_EVALUATOR_MODEL\n" + SHORT_FORM_USAGE
        )
    return fields


def _record_verdict(
    kit: Kit,
    record: dict[str, Any],
    problems: list[Violation],
    target: str | Path | None,
    refuse_unknown_run: bool = False,
) -> Written:
    def build() -> Draft:
        # Under the evals lock: the pass fraction is exactly the one before this record.
        record["pass_fraction"] = pass_fraction.recent_pass_fraction(
            kit.store, kit.config.pass_fraction_window
        )
        found = schema_problems("evals", record)
        rubric = _rubric_of(kit, record, found)
        if not found and rubric is not None and record["verdict"] != SKIPPED:
            check = (
                verdict_rules.check_full if record["form"] == "full" else verdict_rules.check_short
            )
            found += check(record, rubric)
        run = None
        if not found:
            run = lookup.find_run(kit.store, record["run_id"])
            if run is None and refuse_unknown_run:
                found.append(_unregistered_run(kit, record["run_id"]))
            found += verdict_rules.check_against_run(record, run)
            found += verdict_rules.check_against_assessments(
                record, run, _assessments_of(kit, record["run_id"]), now=checking_time()
            )
            if record["verdict"] != SKIPPED:
                found += _evidence_problems(kit, record, run)
        reject_if("evals", problems + found)
        flags, notes = _verdict_flags(kit, record, run)
        if flags:
            record["flags"] = flags
        return Draft([record], notes)

    return append(kit.store, "evals", build, target=target)


def _assessments_of(kit: Kit, run_id: str) -> list[dict[str, Any]]:
    """The run's assessments, oldest first (the assessments ledger is not locked:
    one recorded while the verdict is written is the next verdict's to answer to)."""
    return [a for a in records(kit.store, "assessments", plain=True) if a.get("run_id") == run_id]


def _evidence_problems(
    kit: Kit, record: dict[str, Any], run: dict[str, Any] | None
) -> list[Violation]:
    """Evidence behind ``verified: true`` resolves, and named exemplars exist
    (:mod:`pmos.gate.evidence_pointers`, applied by :mod:`pmos.gate.stored_evidence`)."""
    return verdict_evidence_problems(
        kit,
        record,
        run,
        lambda: _assessments_of(kit, record["run_id"]),
        lambda: known_cases(kit),
    )


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
    signing_key: Any = None,
    refuse_unknown_run: bool = False,
    verdict_id: str | None = None,
    blind: bool = False,
    plan: bool = False,
) -> Written | None:
    """Store a PM's acceptance label; it supersedes any earlier label of the run.

    ``plan`` (``pmos accept --plan``): the PM labels a run the labelling plan
    asked for, and the label records the weight it stands for
    (``plan_weight``, :func:`pmos.gate.plan.plan_weight` of the verdict it
    judges under the kit's ``calibration.plan_pass_side_rate``). The weight is
    derived here, never typed in; a run the plan did not sample, or a kit with
    no plan, is refused (``not-in-plan``), as is a label that judges no verdict.

    ``blind`` marks a label the PM gave without seeing the gate's verdict
    (``pmos accept --blind``): stored as ``blind: true``.

    The label is stored against the verdict it judges (``gate_verdict``,
    ``gate_record_id``): ``verdict_id`` when given (``pmos accept --verdict``),
    else the run's latest judged (non-SKIPPED) verdict. A PM who reviewed an
    earlier verdict, or who labels after the gate judged the run again, names
    the one they read, so the pair the calibration counts is the one the PM
    judged. ``verdict_id`` must be a judged verdict of this run
    (``gate-record``): a skip is no judgement to accept or reject, and another
    run's verdict is no judgement of this one. A label on the other side of its
    verdict is an override: it is also appended to the exemplar log, naming the
    same verdict, and a warning says so.

    With ``only_if_unlabelled`` nothing is written, and None is returned, when
    the run already has a label. That check runs under the acceptances lock,
    so concurrent callers (seeding) label a run once; without it the result is
    never None.

    ``signing_key`` (a private key, :func:`pmos.gate.sshsig.load_private_key`)
    signs the label (:mod:`pmos.gate.signing`). When the kit's pmos.yaml names
    an allowed-signers file, a signature it does not allow is refused, and with
    ``signing.required`` so is an unsigned label.

    With ``refuse_unknown_run`` (what ``pmos accept`` passes unless told
    ``--allow-unknown-run``), a run the kit has never seen (not registered, no
    verdict of any kind) is refused (``unknown-run``): a label is permanent,
    and a label for a run nobody registered or judged is far more often a typo
    in the run id than a run recorded elsewhere. Programs that label runs they
    know about (seeding, tests, other kits' imports) keep the old behaviour.
    """

    now = checking_time()
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
            "schema_version": LABEL_SCHEMA_VERSION,
            "run_id": run_id,
            "label": label,
            "by": by,
        }
        if note is not None:
            record["note"] = note
        if blind:
            record["blind"] = True
        notes: list[str] = []
        run = lookup.find_run(kit.store, run_id)
        if run is not None:
            record["initiative_id"] = run["initiative_id"]
        else:
            record["flags"] = ["unregistered-run"]
            notes.append(f"run {run_id!r} was never registered; the label is flagged")
        # A verdict dated after the time of checking is no run's latest: readers
        # leave it out (pmos.gate.clock), so a label never binds to one.
        latest = lookup.latest_verdict(
            kit.store, run_id, where=lambda v: is_judged(v) and future_dated(v, now) is None
        )
        unknown = run is None and latest is None and refuse_unknown_run
        if unknown and lookup.latest_verdict(kit.store, run_id) is None:
            raise RecordRejected("acceptance", [_unknown_run(run_id)])
        named = None if verdict_id is None else _named_verdict(kit, run_id, verdict_id)
        judged = named or latest
        record["gate_verdict"] = judged["verdict"] if judged else None
        record["gate_record_id"] = judged["record_id"] if judged else None
        problems = schema_problems("acceptances", record)
        early = None if judged is None else label_before_verdict(record, judged)
        if early is not None:
            problems.append(early)
        reject_if("acceptances", problems)
        # Checks the exemplar log before anything is stored (raises if it is malformed).
        verdict = exemplars.overridden_verdict(kit, run_id, label, named)
        if verdict is not None:
            overridden["verdict"] = verdict
            # A verdict recorded between the two look-ups (the evals ledger is
            # not locked here): the label names the verdict its override names.
            record["gate_verdict"], record["gate_record_id"] = (
                verdict["verdict"],
                verdict["record_id"],
            )
        if plan:
            record["plan_weight"] = _plan_weight(kit, run_id, overridden.get("verdict") or judged)
        # Signed last: the signature covers every content field as stored, the kit's
        # identity and the verdict the label judges.
        judged_digest = signing.verdict_sha256(overridden.get("verdict") or judged)
        if signing_key is not None:
            record["signature"] = signing.sign_label(
                record, signing_key, kit=signing.kit_id(kit.config), verdict=judged_digest
            )
        problem = signing.label_signature_problem(
            kit.config, kit.root, record, verdicts=lambda _named: judged_digest, now=now
        )
        if problem is not None:
            field = "signature" if "signature" in record else "by"
            reject_if("acceptances", [Violation("label-signature", field, problem)])
        if "signature" in record and signing.allowed_signers_path(kit.config, kit.root) is None:
            notes.append(
                "the label is signed, but pmos.yaml names no signing.allowed_signers file, "
                "so nothing checks who signed it"
            )
        if "verdict" in overridden:
            # The override entry is written (to a temporary name) before the label is
            # stored, so a folder that cannot take it refuses the label: both or neither.
            pending.append(exemplars.prepare_override(kit, record, overridden["verdict"]))
        return Draft([record], notes)

    pending: list[exemplars.PendingOverride] = []
    try:
        written = append(kit.store, "acceptances", build, target=target)
    except RecordRejected as exc:
        for entry in pending:
            entry.discard()
        if only_if_unlabelled and [v.rule for v in exc.violations] == [already]:
            return None
        raise
    except BaseException:
        for entry in pending:
            entry.discard()
        raise
    for entry in pending:
        written.warnings.append(entry.publish())
    return written


#: The rule that refuses ``--plan`` for a run the labelling plan did not ask for.
NOT_IN_PLAN = "not-in-plan"


def _plan_weight(kit: Kit, run_id: str, judged: dict[str, Any] | None) -> float:
    """The weight a plan label of ``run_id`` stands for, or ``not-in-plan``."""
    rate = kit.config.plan_pass_side_rate
    problem = None
    if rate >= 1.0:
        problem = (
            "the kit has no labelling plan (pmos.yaml calibration.plan_pass_side_rate is 1): "
            "label without --plan"
        )
    elif judged is None:
        problem = f"run {run_id!r} has no judged verdict yet, so the plan has not sampled it"
    else:
        passed = judged["verdict"] in PASS_SIDE
        weight = labelling_plan.plan_weight(judged["record_id"], passed, rate)
        if weight is not None:
            return weight
        problem = (
            f"the labelling plan did not sample run {run_id!r} (its verdict "
            f"{judged['record_id']} draws {labelling_plan.draw(judged['record_id']):.4f}, "
            f"not below the pass-side rate {rate:g}): label it without --plan, or "
            "'pmos label next' for a run the plan asks for"
        )
    raise RecordRejected("acceptance", [Violation(NOT_IN_PLAN, "plan_weight", problem)])


def _named_verdict(kit: Kit, run_id: str, verdict_id: str) -> dict[str, Any]:
    """The verdict ``--verdict`` names, refused (``gate-record``, nothing written) unless
    it is a judged verdict of ``run_id``: the same rule the stored label is checked
    against again (:mod:`pmos.gate.recheck`), plus no skip, which judges nothing."""
    found = lookup.find_verdict(kit.store, verdict_id)
    listing = f"'pmos ledger show evals --run-id {run_id} --json' lists the run's verdicts"
    if found is None:
        problem = f"--verdict {verdict_id!r}: the kit has no verdict with that record id; {listing}"
    elif found.get("run_id") != run_id:
        problem = (
            f"--verdict {verdict_id!r} judges run {found.get('run_id')!r}, not {run_id!r}: "
            f"a label judges a verdict of its own run; {listing}"
        )
    elif found.get("verdict") == SKIPPED:
        problem = (
            f"--verdict {verdict_id!r} is a SKIPPED verdict, which judged nothing: name a "
            f"judged (non-SKIPPED) verdict of run {run_id!r}; {listing}"
        )
    else:
        return found
    raise RecordRejected("acceptance", [Violation("gate-record", "gate_record_id", problem)])


def _unknown_run(run_id: str) -> Violation:
    return Violation(
        UNKNOWN_RUN,
        "run_id",
        f"the kit has never seen run {run_id!r}: it is not registered and has no verdict. "
        "Check RUN_ID for a typo ('pmos queue' and 'pmos ledger show runs' list known runs), "
        "or pass --allow-unknown-run to label it anyway",
    )


def _unregistered_run(kit: Kit, run_id: str) -> Violation:
    """``unknown-run`` for a verdict: the run is not registered; the registered ids
    closest to it are named, since a typo is the usual cause."""
    known = {r.get("run_id") for r in records(kit.store, "runs", plain=True)}
    close = difflib.get_close_matches(run_id, [k for k in known if isinstance(k, str)], n=3)
    hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
    return Violation(
        UNKNOWN_RUN,
        "run_id",
        f"run {run_id!r} is not registered{hint}. Check RUN_ID for a typo ('pmos ledger show "
        "runs' lists registered runs), register the run first ('pmos run register'), or pass "
        "--allow-unknown-run to record the verdict anyway, flagged unregistered-run",
    )


def new_run_id() -> str:
    """A run id no other branch will choose: time-ordered (UTC to the microsecond) and
    random (32 bits), as record ids are: ``run-20261202T061500123456Z-5f2c9a1b``."""
    return new_record_id("run")


def evaluator_model_from_env() -> str | None:
    return os.environ.get("PMOS_EVALUATOR_MODEL") or None
