"""Validation against the JSON Schemas in ``schemas/``.

The schema files are the single source of truth for record shape; this module
only loads them, links their cross-references and compiles one validator per
schema per process. Format keywords are asserted, not merely annotated: a
``date-time`` that is not RFC 3339 is an error, and we refuse to run if the
checker for it is unavailable rather than silently accept anything.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jsonschema_rs
import orjson

from pmos.assets import schema_dir
from pmos.errors import PmosError, Violation
from pmos.timestamps import stamp_problem

if TYPE_CHECKING:
    import jsonschema_rs
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

#: Schema names pmos knows; each is ``schemas/<name>.schema.json``.
SCHEMA_NAMES = (
    "common",
    "run",
    "verdict",
    "acceptance",
    "assessment",
    "task-eval",
    "followup",
    "task",
    "policy-approval",
    "rubric",
    "config",
    "exemplar",
    "exemplar-log",
    "known-bad",
    "skill",
    "assessment-spec",
)


def schema_path(name: str) -> Path:
    if name not in SCHEMA_NAMES:
        raise PmosError(f"unknown schema {name!r}; known: {', '.join(SCHEMA_NAMES)}")
    return schema_dir() / f"{name}.schema.json"


@cache
def load_schema(name: str) -> dict[str, Any]:
    path = schema_path(name)
    try:
        schema: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return schema
    except (OSError, ValueError) as exc:
        raise PmosError(f"cannot load schema {path}: {exc}") from exc


def enum_values(name: str, pointer: str) -> tuple[str, ...]:
    """The string values of the ``enum`` at ``pointer`` (a JSON pointer such as
    ``/properties/label``) of the schema ``name``: what a command-line choice of
    the same field offers, so the choice is never a hand-kept copy of the schema."""
    node: Any = load_schema(name)
    for part in pointer.strip("/").split("/"):
        if not isinstance(node, dict) or part not in node:
            raise PmosError(f"schema {name!r} has nothing at {pointer!r}")
        node = node[part]
    values = node.get("enum") if isinstance(node, dict) else None
    if not isinstance(values, list) or not values:
        raise PmosError(f"schema {name!r} has no enum at {pointer!r}")
    return tuple(v for v in values if isinstance(v, str))


#: Keywords whose values are data, never subschemas holding a ``$ref``.
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})


def _resolve(doc: str, ref: str) -> tuple[str, Any]:
    """The schema ``ref`` names from inside schema ``doc``, and the schema it is in."""
    file, _, pointer = ref.partition("#")
    target = file.removesuffix(".schema.json") if file else doc
    node: Any = load_schema(target)
    for part in (p for p in pointer.split("/") if p):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return target, node


def _inline(node: Any, doc: str, seen: tuple[tuple[str, str], ...] = ()) -> Any:
    """``node`` with every ``$ref`` replaced by the schema it names.

    The validator resolves a ``$ref`` through its registry (URL joins, JSON
    pointers) each time an instance reaches it: for a contract of 50,000
    criteria that look-up was most of the time validation took. Inlined once
    per process, the same rules cost less than half as much. A ``$ref`` with
    sibling keywords becomes ``allOf`` with them, which is what 2020-12 means
    by it; a reference that would recurse stays a ``$ref``.
    """
    if isinstance(node, list):
        return [_inline(item, doc, seen) for item in node]
    if not isinstance(node, dict):
        return node
    out = {
        k: (v if k in _DATA_KEYWORDS else _inline(v, doc, seen))
        for k, v in node.items()
        if k != "$ref"
    }
    ref = node.get("$ref")
    if not isinstance(ref, str):
        return out
    key = (doc, ref)
    if key in seen:
        out["$ref"] = ref
        return out
    target_doc, target = _resolve(doc, ref)
    inlined = _inline(target, target_doc, (*seen, key))
    if not out:
        return inlined
    out["allOf"] = [inlined, *out.get("allOf", [])]
    return out


@cache
def _inlined(name: str) -> dict[str, Any]:
    inlined: dict[str, Any] = _inline(load_schema(name), name)  # a schema inlines to a schema
    return inlined


def inlined_schema(name: str) -> dict[str, Any]:
    """Schema ``name`` as one self-contained document: every ``$ref`` replaced by
    the schema it names. For readers with no registry of pmos's schemas, such as
    an MCP host showing a tool's input schema; a fresh copy, safe to edit."""
    return copy.deepcopy(_inlined(name))


@cache
def _validator(name: str) -> Validator:
    # Deferred: the Python validator (about 0.2 s), only to word a violation.
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    resources = [
        (load_schema(n)["$id"], Resource.from_contents(load_schema(n))) for n in SCHEMA_NAMES
    ]
    registry = Registry().with_resources(resources)
    checker = Draft202012Validator.FORMAT_CHECKER
    if "date-time" not in checker.checkers:
        raise PmosError(
            "jsonschema cannot check the date-time format here (install rfc3339-validator); "
            "refusing to validate records without it"
        )
    # The schemas themselves are checked against the metaschema by the test suite;
    # doing it here would cost every command tens of milliseconds.
    return Draft202012Validator(_inlined(name), registry=registry, format_checker=checker)


def _field(path: Iterable[Any]) -> str:
    parts = [str(p) for p in path]
    return "/".join(parts) if parts else "(record)"


@cache
def _fast_validator(name: str) -> jsonschema_rs.Validator:
    """The schema compiled by jsonschema-rs: only ever asked whether a record is valid.

    Re-checking every stored record on read (or when packing) with the pure
    Python validator costs milliseconds a record; this costs microseconds. A
    record it does not accept goes to the Python validator, which words every
    violation; the two must agree, which tests/test_schemas_fast.py checks.
    """
    return jsonschema_rs.Draft202012Validator(_inlined(name), validate_formats=True)


def _fast_valid(name: str, instance: Any) -> bool:
    """Whether the fast validator accepts ``instance``; False when it cannot take it
    at all (a YAML mapping with a non-string key, say): the Python one then says why."""
    try:
        return _fast_validator(name).is_valid(instance)
    except (ValueError, TypeError, OverflowError):
        return False


def validate(name: str, instance: Any, *, parsed: bool = False) -> list[Violation]:
    """Every schema violation of ``instance`` (empty when valid), one per field and rule.

    ``parsed``: ``instance`` was decoded from JSON text by orjson or msgspec,
    which refuse NaN, infinities and numbers too large for a float, so it holds
    none and the search for them is skipped (for a stored record, a round trip
    through orjson, a third of the schema check).
    """
    seen: set[tuple[str, str]] = set()
    try:
        may_be = not parsed and _may_be_non_finite(instance)
        out: list[Violation] = _non_finite(instance, ()) if may_be else []
        if not out and _fast_valid(name, instance):
            return _stamps_out_of_range(name, instance, ())
        found = list(_validator(name).iter_errors(instance))
    except RecursionError:
        return [Violation("schema:depth", "(record)", "nested too deeply to check")]
    errors = sorted(found, key=lambda e: [str(p) for p in e.absolute_path])
    for err in errors:
        field = _field(err.absolute_path)
        if err.validator == "required":
            missing = err.message.split("'")[1] if err.message.count("'") >= 2 else ""
            field = _field((*err.absolute_path, missing))
        rule = f"schema:{err.validator}"
        # An empty string trips both minLength and pattern; say it once.
        text_rule = err.validator in ("minLength", "pattern")
        key = (field, "text" if text_rule else f"{rule}:{err.message}")
        if key in seen:
            continue
        seen.add(key)
        out.append(Violation(rule, field, _message(err)))
    return out + _stamps_out_of_range(name, instance, {v.field for v in out})


@cache
def _stamp_fields(name: str) -> tuple[str, ...]:
    """The top-level fields of schema ``name`` that hold a date-time."""
    properties = _inline(load_schema(name), name).get("properties", {})

    def is_stamp(node: Any) -> bool:
        if not isinstance(node, dict):
            return False
        return node.get("format") == "date-time" or any(is_stamp(n) for n in node.get("allOf", []))

    return tuple(field for field, node in properties.items() if is_stamp(node))


def _stamps_out_of_range(name: str, instance: Any, flagged: Any) -> list[Violation]:
    """Violations of the timestamp range (:func:`pmos.timestamps.stamp_problem`) by a
    date-time field the format check let through (RFC 3339 allows year 0000)."""
    if not isinstance(instance, dict):
        return []
    found = []
    for field in _stamp_fields(name):
        value = instance.get(field)
        if isinstance(value, str) and field not in flagged:
            problem = stamp_problem(value)
            if problem is not None:
                found.append(Violation("schema:date-time-range", field, problem))
    return found


def schema_errors(name: str, instance: Any) -> list[Any]:
    """Every violation of schema ``name`` as the validator reports it (sorted by
    where it is), for an input that words its own messages from the schema
    (see :mod:`pmos.assess.spec`); :func:`validate` words them for records."""
    try:
        found = list(_validator(name).iter_errors(instance))
    except RecursionError:
        raise PmosError(f"the {name} input is nested too deeply to check") from None
    return sorted(found, key=lambda e: [str(p) for p in e.absolute_path])


def _message(err: ValidationError) -> str:
    description = err.schema.get("description") if isinstance(err.schema, dict) else None
    if err.validator in ("pattern", "minLength", "maxLength") and description:
        return f"{err.instance!r} is not valid: {description}"
    if err.validator == "additionalProperties":
        return "unknown field(s) " + err.message.split("(")[-1].rstrip(")")
    if err.validator == "not" and isinstance(err.validator_value, dict):
        alternatives = err.validator_value.get("anyOf", [err.validator_value])
        names = [n for alt in alternatives for n in alt.get("required", [])]
        present = [n for n in names if isinstance(err.instance, dict) and n in err.instance]
        why = f" ({description})" if description else ""
        return f"field(s) {', '.join(present or names)} not allowed here{why}"
    return err.message


def _may_be_non_finite(value: Any) -> bool:
    """Whether ``value`` may hold NaN or an infinity, so that the walk that names where
    one sits is needed (True also when this cannot tell).

    orjson writes NaN and infinities as ``null``, so a value that holds one does
    not survive a round trip through it; most values do, and the round trip
    costs a third of the stdlib encoder's ``allow_nan=False`` check. A value
    orjson cannot encode (a non-string key, an integer beyond 64 bits) is walked.
    """
    try:
        return bool(orjson.loads(orjson.dumps(value)) != value)
    except (orjson.JSONEncodeError, orjson.JSONDecodeError, TypeError, RecursionError):
        return True


def _non_finite(value: Any, path: tuple[Any, ...]) -> list[Violation]:
    """NaN and infinities slip past minimum/maximum checks; refuse them everywhere."""
    if isinstance(value, float) and not math.isfinite(value):
        return [Violation("schema:finite", _field(path), f"{value} is not a finite number")]
    if isinstance(value, dict):
        return [v for k, item in value.items() for v in _non_finite(item, (*path, k))]
    if isinstance(value, list):
        return [v for i, item in enumerate(value) for v in _non_finite(item, (*path, i))]
    return []
