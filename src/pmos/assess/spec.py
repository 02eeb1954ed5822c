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
runtime does. The spec's shape, and the words for each violation of it, are
in ``schemas/assessment-spec.schema.json``; this module fills the words in and
adds what a schema cannot say.
"""

from __future__ import annotations

import math
import posixpath
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import yaml

from pmos import schemas
from pmos.errors import BadInput
from pmos.inputs import read_input_text
from pmos.yamlio import load_yaml

#: The spec's schema: every rule of its shape, and the words for each violation.
SCHEMA = "assessment-spec"

_SPEC = schemas.load_schema(SCHEMA)
_REVIEW = _SPEC["$defs"]["expectation"]["allOf"][3]["then"]["properties"]["threshold"]
EXPECTATION_TYPES: tuple[str, ...] = tuple(
    _SPEC["$defs"]["expectation"]["properties"]["type"]["enum"]
)
#: The reviewers' score scale, which an llm_review threshold must lie on.
SCORE_MIN, SCORE_MAX = int(_REVIEW["minimum"]), int(_REVIEW["maximum"])
DEFAULT_REVIEW_THRESHOLD = float(_REVIEW["default"])
DEFAULT_MAX_FIX_ATTEMPTS = int(_SPEC["properties"]["maxFixAttempts"]["default"])
DEFAULT_MAX_ASSESSMENT_RETRIES = int(_SPEC["properties"]["maxAssessmentRetries"]["default"])
#: Control characters a command or path may not hold (the schema's pattern
#: refuses them; this finds the one to name): all but tab and newline (a script
#: is several lines). NUL cannot even reach a process, and the others are
#: invisible in a terminal or a review.
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
    path = Path(path)
    text = read_input_text(path, what="spec", stdin_ok=False)
    try:
        data = load_yaml(text)
    except yaml.YAMLError as exc:
        raise BadInput(f"spec {path} is not valid YAML or JSON: {exc}") from None
    return parse_spec(data, source=str(path), lenient=lenient)


def parse_spec(data: Any, *, source: str, lenient: bool = False) -> Spec:
    """Sanitise a parsed spec mapping; raises :class:`InvalidSpec` unless ``lenient``."""
    found = _Problems(data)
    if found.root:
        raise BadInput(f"spec {source} {found.root}")
    problems: list[str] = []
    expectations: list[Expectation] = []
    for i, entry in enumerate(_listed(data, "expectations")):
        exp, entry_problems = _expectation(entry, i, f"expectations[{i}]", found)
        problems += entry_problems
        if exp is not None:
            expectations.append(exp)
    metrics: list[Metric] = []
    seen_names: set[str] = set()
    for i, entry in enumerate(_listed(data, "metrics")):
        metric, entry_problems = _metric(entry, i, seen_names, found)
        problems += entry_problems
        if metric is not None:
            metrics.append(metric)
            seen_names.add(metric.name)
    max_fix = _count(data, "maxFixAttempts", found, problems)
    max_retries = _count(data, "maxAssessmentRetries", found, problems)
    if found.fatal:
        raise InvalidSpec(source, found.fatal + problems)
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


def _listed(data: dict[str, Any], key: str) -> list[Any]:
    """The entries of a list field (none when it is not a list: a fatal problem)."""
    value = data.get(key)
    return value if isinstance(value, list) else []


def from_contract(run: dict[str, Any], *, lenient: bool = False) -> Spec:
    """The spec a run's contract implies: every done-criterion whose test_method is
    an expectation object, each tied to its criterion id."""
    run_id = run["run_id"]
    source = f"contract:{run_id}"
    criteria = (run.get("contract") or {}).get("done_criteria", [])
    methods: list[tuple[int, dict[str, Any]]] = []
    for i, criterion in enumerate(criteria):
        method = criterion.get("test_method")
        if not isinstance(method, dict):
            continue
        if method.get("type") == "llm_review" and not _has_any(method, ("criteria", "dimensions")):
            # A review with no criteria of its own judges the criterion's text.
            method = {**method, "criteria": criterion["text"]}
        methods.append((i, method))
    # The methods are checked as a spec's expectations, in the order listed.
    found = _Problems({"expectations": [m for _, m in methods]})
    expectations: list[Expectation] = []
    problems: list[str] = []
    for n, (i, method) in enumerate(methods):
        criterion = criteria[i]
        where = f"done_criteria[{i}] ({criterion['id']}) test_method"
        exp, entry_problems = _expectation(
            method, i, where, found, at=n, criterion_id=criterion["id"]
        )
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


# ---------------------------------------------------------------- the schema's words


class _Problems:
    """A spec's violations of ``schemas/assessment-spec.schema.json``, worded.

    Each schema node may carry ``x-messages``: the words for a violation of a
    keyword (``*`` for any; ``required`` on a property for its absence), with
    placeholders filled in here. Problems are grouped by where they belong: the
    whole spec (``root``, ``fatal``), one entry of a list (``entries``, whose
    words the caller prefixes with the entry's place), or a top-level field.
    """

    def __init__(self, data: Any) -> None:
        self.root: str | None = None
        self.fatal: list[str] = []
        self.entries: dict[tuple[str, int], list[str]] = {}
        self.fields: dict[str, list[str]] = {}
        for err in schemas.schema_errors(SCHEMA, _finite(data)):
            path = list(err.absolute_path)
            if err.validator == "required":
                path.append(_missing(err))
            text = _word(err, data)
            if not path:
                self.root = text
            elif len(path) == 1 and path[0] in ("expectations", "metrics"):
                self.fatal.append(f"{path[0]}: {text}")
            elif path[0] in ("expectations", "metrics"):
                _add(self.entries.setdefault((path[0], path[1]), []), text)
            else:
                _add(self.fields.setdefault(str(path[0]), []), f"{path[0]}: {text}")

    def entry(self, section: str, index: int) -> list[str]:
        return list(self.entries.get((section, index), []))


def _add(found: list[str], text: str) -> None:
    if text not in found:  # two keywords of one field can say the same thing
        found.append(text)


def _finite(value: Any) -> Any:
    """``value`` with NaN, infinities and integers too large for a float as null,
    which no number field accepts: the schema's minimum and maximum let NaN
    through (it compares false), and a threshold must be a float. The message
    still shows the value as written."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > sys.float_info.max:
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _missing(err: Any) -> str:
    """The property a ``required`` error is about."""
    present = err.instance if isinstance(err.instance, dict) else {}
    return next(str(n) for n in err.validator_value if n not in present)


def _at(data: Any, path: list[Any]) -> Any:
    for part in path:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return None
    return data


def _place(path: list[Any]) -> str:
    """A path inside an entry as an author reads it: ``dimensions[0].name``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _word(err: Any, data: Any) -> str:
    """The schema's words for ``err``, placeholders filled in."""
    path = list(err.absolute_path)
    schema = err.schema if isinstance(err.schema, dict) else {}
    words = schema.get("x-messages", {})
    owner = path
    template: str
    if err.validator == "required":
        missing = _missing(err)
        prop = schema.get("properties", {}).get(missing, {})
        own = prop.get("x-messages", {}) if isinstance(prop, dict) else {}
        template = own.get("required") or own.get("*") or words.get("required")
        template = template or f"needs '{missing}'"
        default = prop.get("default") if isinstance(prop, dict) else None
        path = [*path, missing]
        value: Any = None
    else:
        template = words.get(err.validator) or words.get("*") or err.message
        default = schema.get("default")
        value = _at(data, path)
        owner = path[:-1]
    inside = path[2:] if path and path[0] in ("expectations", "metrics") else path
    fills = {
        "{value}": _shown(value),
        "{kind}": type(value).__name__,
        "{default}": str(default),
        "{path}": _place(inside),
        "{owner}": _place(owner[2:] if len(owner) >= 2 else []),
    }
    if err.validator == "additionalProperties" and isinstance(value, dict):
        known = schema.get("properties", {})
        fills["{unknown}"] = ", ".join(sorted(str(k) for k in value if k not in known))
    unsafe = _UNSAFE.search(value) if isinstance(value, str) else None
    if unsafe is not None:
        fills["{control}"] = repr(unsafe.group())
        fills["{position}"] = str(unsafe.start())
    for name, text in fills.items():
        template = template.replace(name, text)
    return template


# ---------------------------------------------------------------- what a schema cannot say


def _is_entry(problem: str) -> bool:
    return problem.startswith(("expectations[", "metrics[", "done_criteria["))


def _has_any(entry: dict[str, Any], names: tuple[str, ...]) -> bool:
    return any(entry.get(n) not in (None, "", []) for n in names)


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _shown(value: Any) -> str:
    """A value as a message quotes it: a 400-digit number is not read, only cut."""
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "..."


def _inside_cwd(paths: Any, what: str) -> list[str]:
    """Paths must not climb out of --cwd with '..' (absolute paths and control
    characters are the schema's). Checked on the text alone; symbolic links are
    checked where the files are read, since only then is the working directory
    known."""
    if not isinstance(paths, list):
        return []
    return [
        f"{what}[{j}] {path[:200]!r} climbs out of --cwd with '..'; fix: name a path inside "
        "the assessed working directory"
        for j, path in enumerate(paths)
        if isinstance(path, str) and posixpath.normpath(path).split("/")[0] == ".."
    ]


def _expectation(
    entry: Any,
    index: int,
    where: str,
    found: _Problems,
    *,
    at: int | None = None,
    criterion_id: str | None = None,
) -> tuple[Expectation | None, list[str]]:
    """One expectation (None when it cannot run) and its problems, each prefixed
    with ``where`` (and the type, when it is one)."""
    kind = entry.get("type") if isinstance(entry, dict) else None
    if kind in EXPECTATION_TYPES:
        where = f"{where} ({kind})"
    problems = found.entry("expectations", index if at is None else at)
    fields: dict[str, Any] = {}
    if not problems and kind == "file_exists":
        problems += _inside_cwd(entry["paths"], "paths")
        fields["paths"] = tuple(entry["paths"])
    elif not problems and kind == "llm_review":
        problems += _inside_cwd(entry.get("files", []), "files")
        dimensions = DEFAULT_DIMENSIONS
        if entry.get("dimensions") is not None:
            dimensions = _dimensions(entry["dimensions"], problems)
        fields.update(
            criteria=_text_or_none(entry.get("criteria")),
            dimensions=dimensions,
            threshold=float(entry.get("threshold", DEFAULT_REVIEW_THRESHOLD)),
            files=tuple(entry.get("files", [])),
        )
    elif not problems:
        fields["command"] = entry["command"]
    if problems:
        return None, [f"{where}: {p}" for p in problems]
    return (
        Expectation(
            index=index,
            type=cast("str", kind),  # no problems: the schema found a known type name
            where=where,
            confidence=entry.get("confidence"),
            criterion_id=criterion_id,
            **fields,
        ),
        [],
    )


def _dimensions(raw: list[dict[str, Any]], problems: list[str]) -> tuple[ReviewDimension, ...]:
    """Dimensions the schema accepted: names unique, a rubric keyed by scores, a
    positive weight somewhere."""
    out: list[ReviewDimension] = []
    for j, dim in enumerate(raw):
        at = f"dimensions[{j}]"
        before = len(problems)
        if any(d.name == dim["name"] for d in out):
            problems.append(
                f"{at}: name {dim['name']!r} repeats; fix: give each dimension its own name"
            )
        rubric = _rubric(dim.get("rubric"), at, problems)
        if len(problems) == before:
            out.append(
                ReviewDimension(dim["name"], dim["description"], float(dim["weight"]), rubric)
            )
    if len(out) == len(raw) and math.fsum(d.weight for d in out) <= 0:
        problems.append("the dimension weights sum to 0; fix: give at least one a positive weight")
    return tuple(out)


def _rubric(raw: Any, at: str, problems: list[str]) -> tuple[tuple[int, str], ...]:
    """A rubric's keys are scores, which YAML reads as integers and JSON as text."""
    if raw is None:
        return ()
    anchors: list[tuple[int, str]] = []
    for key, text in raw.items():
        try:
            score = int(str(key))
        except ValueError:
            score = 0
        if not SCORE_MIN <= score <= SCORE_MAX or not isinstance(text, str) or not text.strip():
            problems.append(
                f"{at}: 'rubric' must map scores {SCORE_MIN}-{SCORE_MAX} to descriptions; "
                f"entry {key!r} is not"
            )
            return ()
        anchors.append((score, text))
    return tuple(sorted(anchors))


def _metric(
    entry: Any, index: int, seen: set[str], found: _Problems
) -> tuple[Metric | None, list[str]]:
    where = f"metrics[{index}]"
    name = entry.get("name") if isinstance(entry, dict) else None
    if isinstance(name, str) and name.strip():
        where = f"metrics[{index}] ({name})"
    problems = found.entry("metrics", index)
    if not problems and name in seen:
        problems.append(f"name {name!r} repeats; fix: give each metric its own name")
    if problems:
        return None, [f"{where}: {p}" for p in problems]
    named = cast("str", name)  # no problems: the schema found a non-empty name
    return Metric(index, named, entry["command"], float(entry["threshold"])), []


def _count(data: dict[str, Any], key: str, found: _Problems, problems: list[str]) -> int:
    """A budget; a bad one is a problem, and its default is used when lenient."""
    default = int(_SPEC["properties"][key]["default"])
    if key in found.fields:
        problems += found.fields[key]
        return default
    return int(data.get(key, default))
