"""The authoritative 0-100 task-evaluation score math.

Three categories, each scored twice: a deterministic score computed from what
the kit recorded (see :mod:`pmos.scorecollect`) and an AI evaluator's score.
The AI score is advisory input; the numbers that are stored and compared are
computed here and nowhere else:

* ``finalScore = round(clamp(0.7 * deterministicScore + 0.3 * aiScore, 0, 100))``
* ``overallScore = round(clamp(sum(finalScore * weight), 0, 100))`` with the weights
  agentPerformance 0.30, taskOutcomeQuality 0.45, processCompliance 0.25
* bands: 0-39 failing, 40-59 weak, 60-74 acceptable, 75-89 strong, 90-100 excellent

``round`` is half up (x.5 goes to x+1). Everything is computed with
:class:`fractions.Fraction`, because in binary floating point
``0.7 * 1 + 0.3 * 36`` is 11.4999..., which would round to 11 instead of 12, and
Python's own ``round`` sends 4.5 to 4. A score is a comparable number across
tasks only if every tool gets the same integer from the same inputs.

Inputs are integers 0..100 and nothing else: ``True`` is not 1 and ``50.0`` is
not 50, because a float that happens to be whole is usually a sign the author
computed something we should be computing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from pmos.errors import BadInput, RecordRejected, Violation
from pmos.exact import round_half_up

AGENT_PERFORMANCE = "agentPerformance"
TASK_OUTCOME_QUALITY = "taskOutcomeQuality"
PROCESS_COMPLIANCE = "processCompliance"

#: The categories in their fixed order, with their exact weights (they sum to 1).
WEIGHTS: dict[str, Fraction] = {
    AGENT_PERFORMANCE: Fraction(30, 100),
    TASK_OUTCOME_QUALITY: Fraction(45, 100),
    PROCESS_COMPLIANCE: Fraction(25, 100),
}
CATEGORIES = tuple(WEIGHTS)
DETERMINISTIC_SHARE = Fraction(7, 10)
AI_SHARE = Fraction(3, 10)
MIN_SCORE, MAX_SCORE = 0, 100

#: (lowest score of the band, band name), highest band first.
BANDS: tuple[tuple[int, str], ...] = (
    (90, "excellent"),
    (75, "strong"),
    (60, "acceptable"),
    (40, "weak"),
    (0, "failing"),
)

#: Fields the writer computes; an author's values for them are dropped with a warning.
COMPUTED_CATEGORY_FIELDS = ("finalScore", "weight", "band")
COMPUTED_TOP_FIELDS = ("overallScore", "band", "categoryScores")
INPUT_CATEGORY_FIELDS = ("deterministicScore", "aiScore", "rationale", "evidence")
INPUT_TOP_FIELDS = ("task_id", "run_id", "categories")


def clamp(value: Fraction, low: int = MIN_SCORE, high: int = MAX_SCORE) -> Fraction:
    return max(Fraction(low), min(Fraction(high), value))


def band(score: int) -> str:
    """The band a 0..100 score falls in."""
    check_score(score, "score")
    for lowest, name in BANDS:
        if score >= lowest:
            return name
    raise AssertionError("unreachable: the lowest band starts at 0")


def is_score(value: Any) -> bool:
    """An int (not a bool, not a float) from 0 to 100."""
    return type(value) is int and MIN_SCORE <= value <= MAX_SCORE


def score_problem(value: Any) -> str | None:
    """Why ``value`` is not a valid score, or None when it is."""
    if value is None:
        return "null; fill in an integer from 0 to 100"
    if isinstance(value, bool):
        return f"{value!r} is a boolean; a score is an integer from 0 to 100"
    if type(value) is not int:
        return (
            f"{value!r} is a {type(value).__name__}; a score is an integer from 0 to 100 "
            "(write 50, not 50.0)"
        )
    if not MIN_SCORE <= value <= MAX_SCORE:
        return f"{value} is out of range; a score is an integer from 0 to 100"
    return None


def check_score(value: Any, field: str) -> int:
    problem = score_problem(value)
    if problem is not None:
        raise BadInput(f"{field}: {problem}")
    score: int = value  # score_problem accepts only an int from 0 to 100
    return score


def final_score(deterministic: int, ai: int) -> int:
    """``round(clamp(0.7 * deterministic + 0.3 * ai, 0, 100))``, exact and half up."""
    d = check_score(deterministic, "deterministicScore")
    a = check_score(ai, "aiScore")
    return round_half_up(clamp(DETERMINISTIC_SHARE * d + AI_SHARE * a))


def overall_score(finals: Mapping[str, int]) -> int:
    """``round(clamp(sum(finalScore * weight), 0, 100))`` over all three categories."""
    missing = [c for c in CATEGORIES if c not in finals]
    unknown = sorted(set(finals) - set(CATEGORIES))
    if missing or unknown:
        raise BadInput(
            f"overall score needs exactly the categories {', '.join(CATEGORIES)}"
            + (f"; missing {', '.join(missing)}" if missing else "")
            + (f"; unknown {', '.join(unknown)}" if unknown else "")
        )
    total = sum(
        (WEIGHTS[c] * check_score(finals[c], f"{c}.finalScore") for c in CATEGORIES), Fraction(0)
    )
    return round_half_up(clamp(total))


def weight_as_number(category: str) -> float:
    """The weight as stored in JSON (0.3, 0.45, 0.25); the math never uses this float."""
    return float(WEIGHTS[category])


# ---------------------------------------------------------------- input -> record


@dataclass
class ScoredInput:
    """A checked score input turned into the stored record's fields."""

    fields: dict[str, Any]
    warnings: list[str]


def score_input(data: Any) -> ScoredInput:
    """Check a ``pmos score record`` input and compute every derived number.

    Raises :class:`RecordRejected` listing every problem (field named) when the
    input is not usable. Values for computed fields are ignored with a warning.
    """
    if not isinstance(data, dict):
        raise RecordRejected(
            "task-eval", [Violation("schema:type", "(record)", "not a JSON object")]
        )
    problems: list[Violation] = []
    warnings: list[str] = []
    for name in sorted(set(data) - set(INPUT_TOP_FIELDS)):
        if name in COMPUTED_TOP_FIELDS:
            warnings.append(f"ignored the supplied {name}: it is computed from the category scores")
        else:
            problems.append(
                Violation(
                    "unknown-field",
                    name,
                    f"not an input of a task evaluation (inputs: {', '.join(INPUT_TOP_FIELDS)})",
                )
            )
    if "task_id" not in data:
        problems.append(Violation("required", "task_id", "missing; name the evaluated task"))
    categories = data.get("categories")
    scored: list[dict[str, Any]] = []
    if not isinstance(categories, dict):
        why = "missing" if categories is None else "not an object keyed by category name"
        problems.append(Violation("required", "categories", f"{why}; give {', '.join(CATEGORIES)}"))
    else:
        for name in sorted(set(categories) - set(CATEGORIES)):
            problems.append(
                Violation(
                    "unknown-category",
                    f"categories/{name}",
                    f"not a scoring category (known: {', '.join(CATEGORIES)})",
                )
            )
        for name in CATEGORIES:
            if name not in categories:
                problems.append(
                    Violation("required", f"categories/{name}", "missing; all three are scored")
                )
                continue
            entry = _score_category(name, categories[name], problems, warnings)
            if entry is not None:
                scored.append(entry)
    if problems:
        raise RecordRejected("task-eval", problems)
    overall = overall_score({e["category"]: e["finalScore"] for e in scored})
    fields: dict[str, Any] = {"task_id": data["task_id"]}
    if data.get("run_id") is not None:
        fields["run_id"] = data["run_id"]
    fields.update(categoryScores=scored, overallScore=overall, band=band(overall))
    return ScoredInput(fields, warnings)


def _score_category(
    name: str, raw: Any, problems: list[Violation], warnings: list[str]
) -> dict[str, Any] | None:
    where = f"categories/{name}"
    if not isinstance(raw, dict):
        problems.append(Violation("schema:type", where, "not an object"))
        return None
    before = len(problems)
    for key in sorted(set(raw) - set(INPUT_CATEGORY_FIELDS)):
        if key in COMPUTED_CATEGORY_FIELDS:
            warnings.append(f"ignored the supplied {where}/{key}: the writer computes it")
        else:
            problems.append(
                Violation(
                    "unknown-field",
                    f"{where}/{key}",
                    f"not a category input (inputs: {', '.join(INPUT_CATEGORY_FIELDS)})",
                )
            )
    for key in ("deterministicScore", "aiScore"):
        if key not in raw:
            problems.append(Violation("required", f"{where}/{key}", "missing"))
            continue
        problem = score_problem(raw[key])
        if problem is not None:
            problems.append(Violation("score-integer", f"{where}/{key}", problem))
    rationale = raw.get("rationale")
    if not isinstance(rationale, str) or not rationale.strip():
        why = "missing" if rationale is None else "blank or not text"
        problems.append(
            Violation("rationale-required", f"{where}/rationale", f"{why}; say why these scores")
        )
    evidence = raw.get("evidence", [])
    if not isinstance(evidence, list) or not all(
        isinstance(ref, str) and ref.strip() for ref in evidence
    ):
        problems.append(
            Violation(
                "schema:type",
                f"{where}/evidence",
                "must be a list of non-blank evidence ids or references",
            )
        )
    if len(problems) > before:
        return None
    final = final_score(raw["deterministicScore"], raw["aiScore"])
    return {
        "category": name,
        "deterministicScore": raw["deterministicScore"],
        "aiScore": raw["aiScore"],
        "finalScore": final,
        "weight": weight_as_number(name),
        "band": band(final),
        "rationale": rationale,
        "evidence": list(evidence),
    }
