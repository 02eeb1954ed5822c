"""Assessment specs: reading them and deciding which entries can run.

A spec says what can be established about a task without judgment: commands
that must exit 0, files that must exist, metrics that must clear a threshold,
and LLM reviews scored by a panel of reviewers. Its field names are those of
the task format the assessment contract comes from, so an existing task file
works unchanged (fields the assessment does not use, such as a task's title,
are left alone).

A malformed entry is a spec author's mistake that would otherwise turn into a
silent pass or a confusing failure, so every rule here says where the problem
is (``expectations[2]``) and how to fix it. By default any problem stops the
assessment before anything runs; ``lenient`` instead drops the malformed
entries with the same messages as warnings and runs the rest, as the original
runtime does. All spec rules live in this module.
"""

from __future__ import annotations

import math
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pmos.errors import BadInput
from pmos.inputs import read_input_text

EXPECTATION_TYPES = ("test", "script", "file_exists", "llm_review")
DEFAULT_REVIEW_THRESHOLD = 3.0
DEFAULT_MAX_FIX_ATTEMPTS = 2
DEFAULT_MAX_ASSESSMENT_RETRIES = 1
#: Upper bound of maxFixAttempts and maxAssessmentRetries. Far above any real
#: budget, and small enough that the stored record and the retry loop stay sane.
MAX_COUNT = 100
SCORE_MIN, SCORE_MAX = 1, 5
CONFIDENCE_VALUES = ("firm", "estimated")

#: Fields each expectation type takes. ``files`` is a pmos addition: files whose
#: content is put in front of the reviewers as evidence.
_FIELDS: dict[str, frozenset[str]] = {
    "test": frozenset({"type", "command", "confidence"}),
    "script": frozenset({"type", "command", "confidence"}),
    "file_exists": frozenset({"type", "paths", "confidence"}),
    "llm_review": frozenset({"type", "criteria", "dimensions", "threshold", "files", "confidence"}),
}
_METRIC_FIELDS = frozenset({"name", "command", "threshold"})
_DIMENSION_FIELDS = frozenset({"name", "description", "weight", "rubric"})
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
#: Control characters a command or path may not hold: everything _CONTROL
#: matches except tab and newline (a script is several lines). NUL cannot even
#: reach a process, and the others are invisible in a terminal or a review.
_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class ReviewDimension:
    """One scored aspect of an LLM review, with its 1-5 anchors."""

    name: str
    description: str
    weight: float
    rubric: tuple[tuple[int, str], ...] = ()

    def anchors(self) -> tuple[tuple[int, str], ...]:
        return self.rubric or GENERIC_ANCHORS


GENERIC_ANCHORS: tuple[tuple[int, str], ...] = (
    (1, "Unacceptable: the aspect is missing or wrong throughout."),
    (2, "Weak: serious gaps a user would hit at once."),
    (3, "Adequate: the common case works, with visible gaps."),
    (4, "Good: only minor issues remain."),
    (5, "Excellent: nothing to improve that a careful reviewer could find."),
)

#: Used when an llm_review names no dimensions.
DEFAULT_DIMENSIONS: tuple[ReviewDimension, ...] = (
    ReviewDimension(
        "correctness",
        "The result does what it should: no logic errors, crashes or wrong output.",
        0.35,
        (
            (1, "Broken: does not run, or its output is wrong in the main case."),
            (2, "Runs, but a significant bug breaks core behaviour."),
            (3, "Right for the common case; some inputs give wrong results."),
            (4, "Right for every stated case; only minor flaws."),
            (5, "Right everywhere, boundaries included; no flaw found."),
        ),
    ),
    ReviewDimension(
        "completeness",
        "Every requirement and acceptance criterion is addressed; nothing is missing.",
        0.30,
        (
            (1, "Most requirements are not met."),
            (2, "Some requirements are met; large parts are missing."),
            (3, "The core requirements are met; secondary ones are missing."),
            (4, "All requirements are met, with small omissions."),
            (5, "Every requirement and criterion is fully covered."),
        ),
    ),
    ReviewDimension(
        "code_quality",
        "The work is readable, well organised and easy to change.",
        0.20,
        (
            (1, "Unreadable; no structure a maintainer could follow."),
            (2, "Hard to follow: unclear names, tangled organisation."),
            (3, "Readable, but structure or idiom could clearly be better."),
            (4, "Clean, clearly named and well organised."),
            (5, "Exemplary: idiomatic, simple, easy to extend."),
        ),
    ),
    ReviewDimension(
        "edge_cases",
        "Errors, empty or unexpected input and boundary values are handled.",
        0.15,
        (
            (1, "Fails on any unexpected input."),
            (2, "Only the happy path is handled."),
            (3, "Common edge cases are handled; clear gaps remain."),
            (4, "Most edge cases and errors are handled well."),
            (5, "Every edge case and error path found is handled."),
        ),
    ),
)


@dataclass(frozen=True)
class Expectation:
    """One check to run. ``index`` is its position in the spec's list (or in the
    run contract's done_criteria), so results point back at the entry."""

    index: int
    type: str
    where: str
    command: str | None = None
    paths: tuple[str, ...] = ()
    criteria: str | None = None
    dimensions: tuple[ReviewDimension, ...] = ()
    threshold: float = DEFAULT_REVIEW_THRESHOLD
    files: tuple[str, ...] = ()
    confidence: str | None = None
    criterion_id: str | None = None


@dataclass(frozen=True)
class Metric:
    index: int
    name: str
    command: str
    threshold: float


@dataclass
class Spec:
    """A sanitised spec: only entries that can run, plus the reasons others were dropped."""

    source: str
    expectations: list[Expectation]
    metrics: list[Metric]
    max_fix_attempts: int = DEFAULT_MAX_FIX_ATTEMPTS
    max_assessment_retries: int = DEFAULT_MAX_ASSESSMENT_RETRIES
    #: The task's own id, title and description when the spec is a task file.
    task_id: str | None = None
    title: str | None = None
    description: str | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.expectations and not self.metrics

    @property
    def needs_review(self) -> bool:
        return any(e.type == "llm_review" for e in self.expectations)


class InvalidSpec(BadInput):
    """The spec has malformed entries and strict handling was asked for; nothing ran."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(
            f"spec {source} is invalid ({len(problems)} problem(s)); nothing was run:\n{lines}\n"
            "Fix the entries, or pass --lenient to drop them and run the rest."
        )


class NothingToAssess(BadInput):
    """The spec (after sanitising) has no expectation and no metric: it is not
    assessed, rather than passed with nothing checked."""

    def __init__(self, spec: Spec) -> None:
        why = ""
        if spec.warnings:
            why = " after dropping its malformed entries:\n" + "\n".join(
                f"  - {w}" for w in spec.warnings
            )
        super().__init__(
            f"{spec.source} is not assessed: it has no expectation and no metric (the spec "
            f"lists them under 'expectations' and 'metrics'){why}"
        )


# ---------------------------------------------------------------- loading


def load_spec(path: Path, *, lenient: bool = False) -> Spec:
    """Read a YAML or JSON spec file and sanitise it (see module docstring)."""
    import yaml

    from pmos.yamlio import load_yaml

    path = Path(path)
    text = read_input_text(path, what="spec", stdin_ok=False)
    try:
        data = load_yaml(text)
    except yaml.YAMLError as exc:
        raise BadInput(f"spec {path} is not valid YAML or JSON: {exc}") from None
    return parse_spec(data, source=str(path), lenient=lenient)


def parse_spec(data: Any, *, source: str, lenient: bool = False) -> Spec:
    """Sanitise a parsed spec mapping; raises :class:`InvalidSpec` unless ``lenient``."""
    if not isinstance(data, dict):
        raise BadInput(
            f"spec {source} must be a mapping with 'expectations' and/or 'metrics', "
            f"got {type(data).__name__}"
        )
    fatal: list[str] = []
    problems: list[str] = []
    expectations: list[Expectation] = []
    metrics: list[Metric] = []

    raw_expectations = data.get("expectations", [])
    if raw_expectations is None:
        raw_expectations = []
    if not isinstance(raw_expectations, list):
        fatal.append("expectations: must be a list of expectation objects")
        raw_expectations = []
    for i, entry in enumerate(raw_expectations):
        exp, entry_problems = _expectation(entry, i, f"expectations[{i}]")
        problems += entry_problems
        if exp is not None:
            expectations.append(exp)

    raw_metrics = data.get("metrics", [])
    if raw_metrics is None:
        raw_metrics = []
    if not isinstance(raw_metrics, list):
        fatal.append("metrics: must be a list of {name, command, threshold} objects")
        raw_metrics = []
    seen_names: set[str] = set()
    for i, entry in enumerate(raw_metrics):
        metric, entry_problems = _metric(entry, i, seen_names)
        problems += entry_problems
        if metric is not None:
            metrics.append(metric)
            seen_names.add(metric.name)

    max_fix, p1 = _count(data, "maxFixAttempts", DEFAULT_MAX_FIX_ATTEMPTS)
    max_retries, p2 = _count(data, "maxAssessmentRetries", DEFAULT_MAX_ASSESSMENT_RETRIES)
    problems += p1 + p2

    if fatal:
        raise InvalidSpec(source, fatal + problems)
    if problems and not lenient:
        raise InvalidSpec(source, problems)
    warnings = [f"dropped {p}" if _is_entry(p) else p for p in problems]
    return Spec(
        source=source,
        expectations=expectations,
        metrics=metrics,
        max_fix_attempts=max_fix,
        max_assessment_retries=max_retries,
        task_id=_text_or_none(data.get("id")),
        title=_text_or_none(data.get("title")),
        description=_text_or_none(data.get("description")),
        warnings=warnings,
    )


def from_contract(run: dict[str, Any], *, lenient: bool = False) -> Spec:
    """The spec a run's contract implies: every done-criterion whose test_method is
    an expectation object, each tied to its criterion id."""
    run_id = run["run_id"]
    source = f"contract:{run_id}"
    criteria = (run.get("contract") or {}).get("done_criteria", [])
    expectations: list[Expectation] = []
    problems: list[str] = []
    for i, criterion in enumerate(criteria):
        method = criterion.get("test_method")
        if not isinstance(method, dict):
            continue
        where = f"done_criteria[{i}] ({criterion['id']}) test_method"
        if method.get("type") == "llm_review" and not _has_any(method, ("criteria", "dimensions")):
            # A review with no criteria of its own judges the criterion's text.
            method = {**method, "criteria": criterion["text"]}
        exp, entry_problems = _expectation(method, i, where, criterion_id=criterion["id"])
        problems += entry_problems
        if exp is not None:
            expectations.append(exp)
    if problems and not lenient:
        raise InvalidSpec(source, problems)
    return Spec(
        source=source,
        expectations=expectations,
        metrics=[],
        task_id=None,
        warnings=[f"dropped {p}" for p in problems],
    )


# ---------------------------------------------------------------- entries


def _is_entry(problem: str) -> bool:
    return problem.startswith(("expectations[", "metrics[", "done_criteria["))


def _has_any(entry: dict[str, Any], names: tuple[str, ...]) -> bool:
    return any(entry.get(n) not in (None, "", []) for n in names)


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _is_number(value: Any) -> bool:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer too large for a float: no threshold or weight
        return False


def _shown(value: Any) -> str:
    """A value as a message quotes it: a 400-digit number is not read, only cut."""
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "..."


def _unsafe_text(value: str, what: str) -> list[str]:
    """A command or path holding a control character other than tab or newline."""
    found = _UNSAFE.search(value)
    if found is None:
        return []
    return [
        f"{what} contains the control character {found.group()!r} at position "
        f"{found.start()}; fix: remove it (only tab and newline are allowed)"
    ]


def _relative_paths(paths: list[str], what: str) -> list[str]:
    """Paths must name something inside --cwd: relative, and not climbing out of it
    with '..'. Checked on the text alone; symbolic links are checked where the
    files are read, since only then is the working directory known."""
    problems: list[str] = []
    for j, path in enumerate(paths):
        at = f"{what}[{j}] {path[:200]!r}"
        unsafe = _unsafe_text(path, at)
        if unsafe:
            problems += unsafe
        elif posixpath.isabs(path):
            problems.append(
                f"{at} is absolute; fix: give it relative to --cwd (the assessed working "
                "directory), e.g. dist/index.js"
            )
        elif posixpath.normpath(path).split("/")[0] == "..":
            problems.append(
                f"{at} climbs out of --cwd with '..'; fix: name a path inside the assessed "
                "working directory"
            )
    return problems


def _expectation(
    entry: Any, index: int, where: str, *, criterion_id: str | None = None
) -> tuple[Expectation | None, list[str]]:
    """Check one expectation; returns it (or None when it cannot run) and its problems."""
    if not isinstance(entry, dict):
        return None, [
            f"{where}: must be an object such as {{type: test, command: ...}}, "
            f"got {type(entry).__name__}"
        ]
    kind = entry.get("type")
    if kind not in EXPECTATION_TYPES:
        shown = "missing" if kind is None else repr(kind)
        return None, [f"{where}: type is {shown}; fix: use one of {', '.join(EXPECTATION_TYPES)}"]
    where = f"{where} ({kind})"
    problems: list[str] = []
    # Named mistakes first: they are the ones authors actually make.
    if "expectExitCode" in entry:
        problems.append(
            f"{where}: has expectExitCode; exit code 0 is the only success. Fix: remove "
            "expectExitCode and make the command exit 0 when it succeeds"
        )
    if kind == "file_exists" and "path" in entry:
        problems.append(
            f"{where}: uses 'path'; fix: use 'paths' with a non-empty list, "
            "e.g. paths: [dist/index.js]"
        )
    if kind == "llm_review" and "prompt" in entry:
        problems.append(
            f"{where}: uses 'prompt'; fix: put the review question in 'criteria' instead"
        )
    named = {"expectExitCode", "path", "prompt"}
    unknown = sorted(set(entry) - _FIELDS[kind] - named)
    if unknown:
        problems.append(
            f"{where}: unknown field(s) {', '.join(unknown)}; fix: remove them "
            f"({kind} takes {', '.join(sorted(_FIELDS[kind]))})"
        )
    confidence = entry.get("confidence")
    if confidence is not None and confidence not in CONFIDENCE_VALUES:
        problems.append(f"{where}: confidence {confidence!r}; fix: use firm or estimated")

    fields: dict[str, Any] = {}
    if kind in ("test", "script"):
        command = entry.get("command")
        if not _is_text(command):
            problems.append(
                f"{where}: needs 'command', a non-empty shell command (one line, or a "
                "multi-line Bash script for script)"
            )
        else:
            problems += _unsafe_text(command, f"{where}: 'command'")
        fields["command"] = command
    elif kind == "file_exists":
        paths = entry.get("paths")
        if "paths" not in entry and "path" not in entry:
            problems.append(
                f"{where}: needs 'paths', a non-empty list, e.g. paths: [dist/index.js]"
            )
        elif "paths" in entry and (not isinstance(paths, list) or not paths):
            problems.append(
                f"{where}: 'paths' must be a non-empty list of paths; fix: list at least one "
                "path, e.g. paths: [dist/index.js]"
            )
        elif isinstance(paths, list) and not all(_is_text(p) for p in paths):
            problems.append(f"{where}: every entry of 'paths' must be a non-empty string")
        elif isinstance(paths, list):
            problems += _relative_paths(paths, f"{where}: paths")
        fields["paths"] = tuple(paths) if isinstance(paths, list) else ()
    else:
        fields.update(_review_fields(entry, where, problems))

    if problems:
        return None, problems
    return (
        Expectation(
            index=index,
            type=kind,
            where=where,
            confidence=confidence,
            criterion_id=criterion_id,
            **fields,
        ),
        [],
    )


def _review_fields(entry: dict[str, Any], where: str, problems: list[str]) -> dict[str, Any]:
    criteria = entry.get("criteria")
    has_dimensions = entry.get("dimensions") is not None
    if criteria is not None and not _is_text(criteria):
        problems.append(f"{where}: 'criteria' must be non-empty text")
    if criteria is None and not has_dimensions and "prompt" not in entry:
        problems.append(f"{where}: needs 'criteria' (what the reviewers judge) and/or 'dimensions'")
    threshold = entry.get("threshold", DEFAULT_REVIEW_THRESHOLD)
    if not _is_number(threshold) or not SCORE_MIN <= threshold <= SCORE_MAX:
        problems.append(
            f"{where}: threshold {_shown(threshold)}; fix: give a number from {SCORE_MIN} to "
            f"{SCORE_MAX} (default {DEFAULT_REVIEW_THRESHOLD})"
        )
    dimensions: tuple[ReviewDimension, ...] = DEFAULT_DIMENSIONS
    if has_dimensions:
        dimensions = _dimensions(entry["dimensions"], where, problems)
    files = entry.get("files", [])
    if not isinstance(files, list) or not all(_is_text(f) for f in files):
        problems.append(f"{where}: 'files' must be a list of paths to show the reviewers")
        files = []
    else:
        problems += _relative_paths(files, f"{where}: files")
    return {
        "criteria": criteria if _is_text(criteria) else None,
        "dimensions": dimensions,
        "threshold": float(threshold) if _is_number(threshold) else DEFAULT_REVIEW_THRESHOLD,
        "files": tuple(files),
    }


def _dimensions(raw: Any, where: str, problems: list[str]) -> tuple[ReviewDimension, ...]:
    if not isinstance(raw, list) or not raw:
        problems.append(
            f"{where}: 'dimensions' must be a non-empty list of {{name, description, weight}}; "
            "fix: list them, or leave 'dimensions' out to use the default four"
        )
        return ()
    out: list[ReviewDimension] = []
    names: set[str] = set()
    for j, dim in enumerate(raw):
        at = f"{where}: dimensions[{j}]"
        if not isinstance(dim, dict):
            problems.append(f"{at} must be an object {{name, description, weight}}")
            continue
        before = len(problems)
        name, description, weight = dim.get("name"), dim.get("description"), dim.get("weight")
        if not _is_text(name) or _CONTROL.search(name) or len(name) > 100:
            problems.append(f"{at} needs a 'name' (1-100 characters, no control characters)")
        elif name in names:
            problems.append(f"{at}: name {name!r} repeats; fix: give each dimension its own name")
        if not _is_text(description):
            problems.append(f"{at} needs a 'description' saying what the reviewers score")
        if not _is_number(weight) or not 0 <= weight <= 1:
            problems.append(f"{at}: weight {_shown(weight)}; fix: give a number from 0 to 1")
        unknown = sorted(set(dim) - _DIMENSION_FIELDS)
        if unknown:
            problems.append(
                f"{at}: unknown field(s) {', '.join(unknown)}; fix: remove them "
                "(a dimension takes name, description, weight, rubric)"
            )
        rubric = _rubric(dim.get("rubric"), at, problems)
        if len(problems) == before:
            names.add(name)
            out.append(ReviewDimension(name, description, float(weight), rubric))
    if out and len(out) == len(raw) and math.fsum(d.weight for d in out) <= 0:
        problems.append(
            f"{where}: the dimension weights sum to 0; fix: give at least one a positive weight"
        )
    return tuple(out)


def _rubric(raw: Any, at: str, problems: list[str]) -> tuple[tuple[int, str], ...]:
    if raw is None:
        return ()
    fix = f"{at}: 'rubric' must map scores {SCORE_MIN}-{SCORE_MAX} to descriptions"
    if not isinstance(raw, dict) or not raw:
        problems.append(fix)
        return ()
    anchors: list[tuple[int, str]] = []
    for key, text in raw.items():
        try:
            score = int(str(key))
        except ValueError:
            score = 0
        if not SCORE_MIN <= score <= SCORE_MAX or not _is_text(text):
            problems.append(f"{fix}; entry {key!r} is not")
            return ()
        anchors.append((score, text))
    return tuple(sorted(anchors))


def _metric(entry: Any, index: int, seen: set[str]) -> tuple[Metric | None, list[str]]:
    where = f"metrics[{index}]"
    if not isinstance(entry, dict):
        return None, [f"{where}: must be an object {{name, command, threshold}}"]
    name = entry.get("name")
    if _is_text(name):
        where = f"metrics[{index}] ({name})"
    problems: list[str] = []
    if not _is_text(name) or _CONTROL.search(name) or len(name) > 200:
        problems.append(f"{where}: needs a 'name' (1-200 characters, no control characters)")
    elif name in seen:
        problems.append(f"{where}: name {name!r} repeats; fix: give each metric its own name")
    if not _is_text(entry.get("command")):
        problems.append(
            f"{where}: needs 'command', a shell command that prints one number on stdout"
        )
    else:
        problems += _unsafe_text(entry["command"], f"{where}: 'command'")
    threshold = entry.get("threshold")
    if not _is_number(threshold):
        problems.append(
            f"{where}: threshold {_shown(threshold)}; fix: give the number the value must reach "
            "(value >= threshold passes)"
        )
    unknown = sorted(set(entry) - _METRIC_FIELDS)
    if unknown:
        problems.append(
            f"{where}: unknown field(s) {', '.join(unknown)}; fix: remove them "
            "(a metric takes name, command, threshold)"
        )
    if problems:
        return None, problems
    return Metric(index, name, entry["command"], float(threshold)), []


def _count(data: dict[str, Any], key: str, default: int) -> tuple[int, list[str]]:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        return default, [
            f"{key}: {_shown(value)} is not a whole number from 0 to {MAX_COUNT}; fix: give one "
            f"(default {default}); using {default}"
        ]
    return value, []
