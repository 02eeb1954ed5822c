"""The rules a verdict must obey beyond its schema.

A verdict that contradicts its own evidence must not be stored: a gate that
says PASS while a criterion failed, or a score that is not the weighted sum of
its dimensions, would turn the ledger into a place where the reviewer's prose
and its numbers disagree. Each function returns every violation it finds, so an
author sees all problems at once.

The combine rule, derived here and compared with what the record declares:

* spec axis fails iff any criterion failed;
* standards axis fails iff a defect is critical or must-fix, or the score is
  below the rubric threshold;
* spec fail -> FAIL; standards fail -> FAIL with a blocking defect, else
  PASS-WITH-FINDINGS; both pass -> PASS only with no should-fix-or-worse
  defect, else PASS-WITH-FINDINGS.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from pmos.errors import Violation
from pmos.gate.clock import future_dated
from pmos.gate.rubric import Rubric
from pmos.gate.vocabulary import FAIL, PASS, PWF, SKIPPED

BLOCKING = frozenset({"critical", "must-fix"})
FINDINGS = BLOCKING | {"should-fix"}
SCORE_TOLERANCE = 0.005
UNVERIFIED = "unverified"
UNVERIFIED_CAP = 0.5
#: Wording that admits a check did not happen. Evidence that says so while
#: claiming ``verified: true`` (or not saying) contradicts itself: the cap on
#: unverified dimensions must not depend on the exact word an evaluator chose.
ADMISSION = re.compile(
    r"\bun-?verified\b"
    r"|\bnot\s+(?:been\s+|be\s+)?(?:verified|checked|tested|run|reproduced)\b"
    r"|\b(?:could\s*(?:not|n't)|cannot|can't|unable\s+to|did\s*(?:not|n't)|was\s+unable\s+to)"
    r"\s+(?:be\s+)?(?:run|verify|verified|check|checked|test|tested|reproduce|execute|build)\b",
    re.IGNORECASE,
)


def admits_unverified(text: str) -> str | None:
    """The words of ``text`` that admit a check did not happen, or None."""
    found = ADMISSION.search(text)
    return found.group(0) if found else None


def derive_spec(criteria: Iterable[dict[str, Any]]) -> str:
    return "fail" if any(c["result"] == "fail" for c in criteria) else "pass"


def derive_standards(defects: Iterable[dict[str, Any]], score: float, threshold: float) -> str:
    blocking = any(d["severity"] in BLOCKING for d in defects)
    return "fail" if blocking or score < threshold else "pass"


def combine(spec: str, standards: str, defects: Iterable[dict[str, Any]]) -> str:
    severities = {d["severity"] for d in defects}
    if spec == "fail":
        return FAIL
    if standards == "fail":
        return FAIL if severities & BLOCKING else PWF
    return PASS if not severities & FINDINGS else PWF


def verdicts_consistent_with(spec: str, standards: str) -> frozenset[str]:
    """Overall verdicts some defect list could produce from these axes.

    The short form carries no defects, so only this much can be checked.
    """
    if spec == "fail":
        return frozenset({FAIL})
    if standards == "fail":
        return frozenset({FAIL, PWF})
    return frozenset({PASS, PWF})


def check_full(verdict: dict[str, Any], rubric: Rubric) -> list[Violation]:
    """Rules for a complete, schema-valid, non-SKIPPED verdict."""
    problems = check_dimensions(verdict["dimensions"], rubric)
    problems += check_score(verdict["score"], verdict["dimensions"])
    problems += _check_unique_criteria(verdict["criteria"])
    defects = verdict.get("defects", [])
    spec = derive_spec(verdict["criteria"])
    standards = derive_standards(defects, verdict["score"], rubric.threshold)
    problems += _check_axes(verdict["axes"], spec, standards)
    expected = combine(spec, standards, defects)
    if verdict["verdict"] != expected:
        problems.append(
            Violation(
                "combine-rule",
                "verdict",
                f"declared {verdict['verdict']}, but the axes (spec {spec}, standards "
                f"{standards}) and defects give {expected}",
            )
        )
    return problems


def check_short(verdict: dict[str, Any], rubric: Rubric) -> list[Violation]:
    """Rules the short form's arguments allow: graded criteria vs the spec axis,
    score vs threshold, axes vs verdict."""
    axes = verdict["axes"]
    spec, standards = axes["spec"]["verdict"], axes["standards"]["verdict"]
    problems: list[Violation] = []
    criteria = verdict.get("criteria")
    if criteria:
        problems += _check_unique_criteria(criteria)
        derived = derive_spec(criteria)
        if spec != derived:
            why = "a criterion failed" if derived == "fail" else "every criterion passed"
            problems.append(
                Violation(
                    "spec-axis",
                    "axes/spec/verdict",
                    f"declared {spec}, derived {derived} from the graded criteria ({why})",
                )
            )
            spec = derived
    if verdict["score"] < rubric.threshold and standards == "pass":
        problems.append(
            Violation(
                "standards-axis",
                "axes/standards/verdict",
                f"declared pass, but score {verdict['score']} is below the rubric threshold "
                f"{rubric.threshold}, which gives fail",
            )
        )
        standards = "fail"
    allowed = verdicts_consistent_with(spec, standards)
    if verdict["verdict"] not in allowed:
        problems.append(
            Violation(
                "combine-rule",
                "verdict",
                f"declared {verdict['verdict']}, but spec {spec} and standards {standards} "
                f"allow only {' or '.join(sorted(allowed))}",
            )
        )
    return problems


def check_dimensions(dimensions: dict[str, Any], rubric: Rubric) -> list[Violation]:
    problems: list[Violation] = []
    expected = rubric.dimension_map()
    for name in sorted(set(expected) - set(dimensions)):
        problems.append(
            Violation("rubric-dimensions", f"dimensions/{name}", "missing; the rubric has it")
        )
    for name in sorted(set(dimensions) - set(expected)):
        problems.append(
            Violation("rubric-dimensions", f"dimensions/{name}", "not a dimension of the rubric")
        )
    for name in sorted(set(dimensions) & set(expected)):
        got, want = dimensions[name], expected[name]
        if not math.isclose(got["weight"], want.weight, abs_tol=1e-9):
            problems.append(
                Violation(
                    "rubric-dimensions",
                    f"dimensions/{name}/weight",
                    f"declared {got['weight']}, the rubric says {want.weight}",
                )
            )
        if got["axis"] != want.axis:
            problems.append(
                Violation(
                    "rubric-dimensions",
                    f"dimensions/{name}/axis",
                    f"declared {got['axis']}, the rubric says {want.axis}",
                )
            )
        if _unverified(got) and got["score"] > UNVERIFIED_CAP:
            problems.append(
                Violation(
                    "unverified-cap",
                    f"dimensions/{name}/score",
                    f"{got['score']} with verified: false; an unverified dimension "
                    f"scores at most {UNVERIFIED_CAP}",
                )
            )
    return problems


def _unverified(dimension: dict[str, Any]) -> bool:
    """``verified: false``; a record from before the field (schema_version 1) said
    so with the evidence string 'unverified'."""
    if "verified" in dimension:
        return dimension["verified"] is False
    evidence: str = dimension["evidence"]
    return evidence.strip().lower() == UNVERIFIED


def check_verified(verdict: dict[str, Any]) -> list[Violation]:
    """Evidence and ``verified`` agree, and an unverified criterion is not a pass.

    Runs on input of any shape (alongside the schema check), so that evidence
    admitting a check did not happen is named even when ``verified`` is missing.
    """
    problems: list[Violation] = []
    items: list[tuple[str, Any]] = []
    dimensions = verdict.get("dimensions")
    if isinstance(dimensions, dict):
        items += [(f"dimensions/{name}", d) for name, d in dimensions.items()]
    criteria = verdict.get("criteria")
    if isinstance(criteria, list):
        items += [(f"criteria/{i}", c) for i, c in enumerate(criteria)]
    for where, item in items:
        if not isinstance(item, dict):
            continue
        verified = item.get("verified")
        evidence = item.get("evidence")
        said = admits_unverified(evidence) if isinstance(evidence, str) else None
        if said and verified is not False:
            claim = "is missing" if verified is None else f"is {str(verified).lower()}"
            problems.append(
                Violation(
                    "verified-admission",
                    f"{where}/verified",
                    f"{claim}, but the evidence says {said!r}: set verified: false "
                    f"(a dimension is then scored at most {UNVERIFIED_CAP}, a criterion "
                    "graded fail), or give evidence of the check that was made",
                )
            )
        if where.startswith("criteria/") and verified is False and item.get("result") == "pass":
            hint = (
                ""
                if evidence
                else " (no evidence was given, so nothing shows it was checked: cite it, "
                "as in --criterion ID=pass:tests/test_api.py::test_404)"
            )
            problems.append(
                Violation(
                    "criterion-unverified",
                    f"{where}/result",
                    "pass with verified: false; a criterion that was not checked is graded "
                    f"fail{hint}",
                )
            )
    return problems


def check_score(score: float, dimensions: dict[str, Any]) -> list[Violation]:
    weighted = math.fsum(d["score"] * d["weight"] for d in dimensions.values())
    # "Within 0.005" is inclusive; the epsilon absorbs binary floating-point noise.
    if abs(weighted - score) > SCORE_TOLERANCE + 1e-9:
        return [
            Violation(
                "score-weighted-sum",
                "score",
                f"declared {score}, but the weighted sum of the dimension scores is "
                f"{weighted:.4f} (tolerance {SCORE_TOLERANCE})",
            )
        ]
    return []


def repeated(values: Iterable[str]) -> list[str]:
    """The values that occur more than once, sorted; one pass, so a contract of
    50,000 criteria is checked in milliseconds (``list.count`` per id was quadratic)."""
    counts = Counter(values)
    return sorted(v for v, n in counts.items() if n > 1)


def _check_unique_criteria(criteria: list[dict[str, Any]]) -> list[Violation]:
    return [
        Violation("criteria-unique", "criteria", f"criterion {cid!r} is graded more than once")
        for cid in repeated(c["id"] for c in criteria)
    ]


def check_contract_ids(contract: dict[str, Any]) -> list[Violation]:
    """Each done-criterion of a (schema-valid) contract has its own id.

    A verdict grades every criterion once by id (``criteria-unique``), so a
    contract naming an id twice could never be graded; it is refused when the
    run is registered instead.
    """
    return [
        Violation(
            "contract-unique",
            "contract/done_criteria",
            f"criterion id {cid!r} appears more than once; each criterion needs its own id",
        )
        for cid in repeated(c["id"] for c in contract["done_criteria"])
    ]


def check_contract(
    criteria: list[dict[str, Any]], contract: dict[str, Any], *, form: str = "full"
) -> list[Violation]:
    """The verdict grades exactly the criteria of the run's registered contract,
    whatever its form: a short verdict grades them with ``--criterion``."""
    wanted = [c["id"] for c in contract["done_criteria"]]
    graded = {c["id"] for c in criteria}
    how = " (--criterion {cid}=pass|fail[:evidence])" if form == "short" else ""
    wanted_set = set(wanted)
    problems = [
        Violation(
            "criteria-contract",
            "criteria",
            f"contract criterion {cid!r} is not graded{how.format(cid=cid)}; an unchecked "
            "criterion must be graded fail, not left out",
        )
        for cid in wanted
        if cid not in graded
    ]
    problems += [
        Violation("criteria-contract", "criteria", f"{cid!r} is not a criterion of the contract")
        for cid in sorted(graded - wanted_set)
    ]
    return problems


def check_against_run(record: dict[str, Any], run: dict[str, Any] | None) -> list[Violation]:
    """A verdict against the run it judges (None: not registered, nothing to check):
    the same initiative and builder, and, unless skipped, the run's contract."""
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
    if contract and record["verdict"] != SKIPPED:
        problems += check_contract(record.get("criteria", []), contract, form=record["form"])
    return problems


#: The rule a verdict breaks when it passes a criterion its run's assessment failed.
ASSESSMENT_CONTRADICTED = "assessment-contradiction"


def governing_assessment(
    run: dict[str, Any] | None,
    run_id: str,
    assessments: Iterable[dict[str, Any]],
    *,
    now: datetime,
) -> dict[str, Any] | None:
    """The assessment of ``run_id`` a verdict on it answers to, or None.

    Among the run's assessments (``assessments`` may hold other runs' too) of
    the run's registered ``head`` commit (every one of the run's when its
    registration names no head), the latest clean one (``dirty: false``), else
    the latest of any state: a clean assessment of the commit outranks any
    assessment of a dirty tree, which is not the commit (a test planted in the
    work tree cannot outvote it), and a failure seen only in a dirty tree is
    still a failure nothing contradicts. An assessment dated after ``now``
    (:func:`pmos.gate.clock.future_dated`) is none: its date was set by hand.
    "Latest" is the readers' order, (``recorded_at``, ``record_id``).
    """
    head = (run or {}).get("head")
    mine = [
        a
        for a in assessments
        if a.get("run_id") == run_id
        and (head is None or a.get("commit") == head)
        and future_dated(a, now) is None
    ]
    if not mine:
        return None
    clean = [a for a in mine if a.get("dirty") is False]
    return max(clean or mine, key=lambda a: (str(a.get("recorded_at")), str(a.get("record_id"))))


def check_against_assessments(
    verdict: dict[str, Any],
    run: dict[str, Any] | None,
    assessments: Iterable[dict[str, Any]],
    *,
    now: datetime,
) -> list[Violation]:
    """A verdict that grades a criterion ``pass`` while the run's governing
    assessment (:func:`governing_assessment`) records that criterion's check
    failing contradicts a check that ran: one violation per such criterion,
    naming both records. The one rule for it: the verdict writer refuses such a
    verdict, and the merge gate reports it (issue 24.7).

    A SKIPPED verdict grades nothing; criteria the assessment did not check, or
    checked and passed, are the evaluator's to judge."""
    if verdict.get("verdict") == SKIPPED:
        return []
    governing = governing_assessment(run, str(verdict.get("run_id")), assessments, now=now)
    if governing is None:
        return []
    failed: dict[str, dict[str, Any]] = {}
    for check in governing.get("checks") or []:
        cid = check.get("criterion_id")
        if cid is not None and not check.get("passed"):
            failed.setdefault(cid, check)
    tree = governing.get("commit") or "no commit"
    if governing.get("dirty"):
        tree += ", dirty tree"
    problems = []
    for position, criterion in enumerate(verdict.get("criteria") or []):
        check = failed.get(criterion.get("id"))
        if check is None or criterion.get("result") != "pass":
            continue
        problems.append(
            Violation(
                ASSESSMENT_CONTRADICTED,
                f"criteria/{position}/result",
                f"verdict {verdict.get('record_id')} grades criterion {criterion['id']!r} pass, "
                f"but assessment {governing.get('record_id')} of run {governing.get('run_id')!r} "
                f"({tree}) records its check {check.get('index')} ({check.get('type')}) "
                f"failing: {check.get('reason')}. Grade it fail, or fix the work, assess it "
                "again ('pmos assess --run-id') and judge the new assessment",
            )
        )
    return problems


def _check_axes(axes: dict[str, Any], spec: str, standards: str) -> list[Violation]:
    problems: list[Violation] = []
    for axis, derived, why in (
        ("spec", spec, "a criterion failed" if spec == "fail" else "every criterion passed"),
        (
            "standards",
            standards,
            "a blocking defect or a score below the threshold"
            if standards == "fail"
            else "no blocking defect and the score meets the threshold",
        ),
    ):
        declared = axes[axis]["verdict"]
        if declared != derived:
            problems.append(
                Violation(
                    f"{axis}-axis",
                    f"axes/{axis}/verdict",
                    f"declared {declared}, derived {derived} ({why})",
                )
            )
    return problems
