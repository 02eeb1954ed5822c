"""Types of ledger records, derived from the schemas, for readers to decode into.

A record's digest proves that somebody followed the recipe; it does not prove
the line fits today's schema (a line made by hand, or written by an older
writer). A reader that computed with such a line would crash on a wrong type,
or, worse, count it. So readers decode each line into a type that checks it as
it parses:

* :func:`record_type`: the whole record, as a TypedDict tree; it decodes to a
  plain dict, so code reads it like any record.
* :func:`row_type`: a msgspec Struct holding just the fields a hot reader uses;
  every other field is skipped without being built, which is what keeps the
  reader of a million-line ledger fast.

The types come from the JSON Schemas, the one source of truth: a field's JSON
type(s), enum or const become its Python type, a field the schema requires is
required, and any other field may be absent (None in a row). Constraints that
are not types (patterns, lengths, formats, if/then rules) stay with the writers
and ``pmos ledger verify --schema``, which checks every record against the
whole schema.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache, reduce
from operator import or_
from typing import Annotated, Any, Literal, NotRequired, Required, TypedDict

import msgspec

from pmos.schemas import load_schema
from pmos.store.registry import LEDGER_KINDS

#: Integers a reader accepts: 64-bit signed, the widest msgspec bounds. No pmos
#: count or code comes near; a larger value could not be printed as JSON.
_INT = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
_SCALARS: dict[str, Any] = {
    "string": str,
    "integer": _INT,
    "number": _INT | float,  # an integer stays an int, as the writer stored it
    "boolean": bool,
    "null": None,
}


@cache
def record_type(kind: str) -> Any:
    """The type of a whole record of ``kind``: a TypedDict tree, so it decodes to a dict."""
    schema_name = LEDGER_KINDS[kind].schema
    return _python_type(load_schema(schema_name), schema_name, kind)


@cache
def row_type(kind: str, fields: tuple[str, ...]) -> type[msgspec.Struct]:
    """The row type for ``fields`` of ``kind``'s records (cached per field set)."""
    schema_name = LEDGER_KINDS[kind].schema
    schema = load_schema(schema_name)
    required = set(schema.get("required", ()))
    spec: list[tuple[Any, ...]] = []
    for field in fields:
        if field not in schema["properties"]:
            raise ValueError(f"{schema_name}.schema.json has no field {field!r}")
        python = _python_type(schema["properties"][field], schema_name, f"{kind}.{field}")
        spec.append((field, python) if field in required else (field, python | None, None))
    name = "".join(part.title() for part in kind.split("-")) + "Row"
    # gc=False: rows hold only JSON values, which cannot form cycles.
    return msgspec.defstruct(name, spec, kw_only=True, frozen=True, gc=False)


def _python_type(node: dict[str, Any], schema_name: str, name: str) -> Any:
    """The Python type a JSON Schema node admits, as msgspec understands it.

    Conditional parts (``if``/``then``, ``not``) are rules, not types: they
    stay with the writers and ``pmos ledger verify --schema``.
    """
    if "const" in node:
        return _literal([node["const"]])
    if "enum" in node:
        return _literal(node["enum"])
    for keyword in ("oneOf", "anyOf"):
        if keyword in node:
            return _union(_python_type(part, schema_name, name) for part in node[keyword])
    if "type" in node:
        names = node["type"] if isinstance(node["type"], list) else [node["type"]]
        return _union(_of_json_type(n, node, schema_name, name) for n in names)
    if "$ref" in node:
        return _ref_type(node["$ref"], schema_name)
    if "allOf" in node:  # a base type ($ref) narrowed by constants: the base is the type
        return _python_type(node["allOf"][0], schema_name, name)
    return Any


def _of_json_type(json_type: str, node: dict[str, Any], schema_name: str, name: str) -> Any:
    if json_type in _SCALARS:
        return _SCALARS[json_type]
    if json_type == "array":
        if isinstance(node.get("items"), dict):
            return list[_python_type(node["items"], schema_name, f"{name}[]")]  # type: ignore[misc]
        if "prefixItems" in node:
            parts = [_python_type(p, schema_name, f"{name}[]") for p in node["prefixItems"]]
            return list[_union(parts)]  # type: ignore[misc]
        return list
    # An object. Only a closed one (additionalProperties: false) becomes a
    # TypedDict, which drops unknown keys; an open one stays a plain dict.
    extra = node.get("additionalProperties")
    properties = node.get("properties")
    if properties and extra is False:
        required = set(node.get("required", ()))
        fields = {
            key: (Required if key in required else NotRequired)[
                _python_type(value, schema_name, f"{name}.{key}")
            ]
            for key, value in properties.items()
        }
        return TypedDict(name, fields)  # type: ignore[operator]
    if isinstance(extra, dict) and not properties:
        return dict[str, _python_type(extra, schema_name, f"{name}.*")]  # type: ignore[misc]
    return dict


@cache
def _ref_type(ref: str, schema_name: str) -> Any:
    """One type per referenced definition, so a union never holds two copies of it."""
    target, name = _resolve(ref, schema_name)
    return _python_type(target, name, f"{name}:{ref.rpartition('/')[2]}")


def _union(types: Any) -> Any:
    return reduce(or_, types)


def _literal(values: list[Any]) -> Any:
    """``Literal[...]`` of the non-null values, made optional when null is among them."""
    present = [v for v in values if v is not None]
    literal: Any = Literal[tuple(present)] if present else None
    return literal | None if None in values and present else literal


def _resolve(ref: str, schema_name: str) -> tuple[dict[str, Any], str]:
    """The schema fragment a ``$ref`` such as ``common.schema.json#/$defs/identifier`` names."""
    document, _, pointer = ref.partition("#")
    name = document.removesuffix(".schema.json") if document else schema_name
    target: Any = load_schema(name)
    for part in filter(None, pointer.split("/")):
        target = target[part]
    return target, name


# ---------------------------------------------------------------- conditional rules

_MISSING = object()
_IS_JSON_TYPE: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


@cache
def record_rules(kind: str) -> Callable[[dict[str, Any]], str | None] | None:
    """A check of the schema's top-level if/then/else rules, or None when it has none.

    Types cannot say "a created task has a title" or "a judged verdict names
    its model", yet readers rely on it. The schemas state those rules in one
    small form: ``if`` a field has (or has not) a constant value, ``then`` or
    ``else`` some fields are required or of a type. That form is checked here
    on every decoded record; the check returns the broken rule in words, or
    None. Rules that forbid a field are left to the writers: a reader ignores
    what it does not use, and records from before such a rule must stay
    readable (an old SKIPPED verdict that still carries defects).
    """
    schema = load_schema(LEDGER_KINDS[kind].schema)
    rules = [rule for rule in schema.get("allOf", ()) if "if" in rule]
    if not rules:
        return None

    def check(record: dict[str, Any]) -> str | None:
        for rule in rules:
            holds = _matches(rule["if"], record)
            branch = rule.get("then" if holds else "else")
            problem = _branch_problem(branch, record) if branch else None
            if problem:
                return f"{_condition(rule['if'], holds)}, {problem}"
        return None

    return check


def _fits(value: Any, node: dict[str, Any]) -> bool:
    if "const" in node:
        const = node["const"]
        return type(value) is type(const) and value == const
    if "not" in node:
        return not _fits(value, node["not"])
    if "type" in node:
        names = node["type"] if isinstance(node["type"], list) else [node["type"]]
        return any(_IS_JSON_TYPE[name](value) for name in names)
    return True


def _matches(condition: dict[str, Any], record: dict[str, Any]) -> bool:
    if any(name not in record for name in condition.get("required", ())):
        return False
    return all(
        _fits(record[name], node)
        for name, node in condition.get("properties", {}).items()
        if name in record
    )


def _branch_problem(branch: dict[str, Any], record: dict[str, Any]) -> str | None:
    missing = [name for name in branch.get("required", ()) if name not in record]
    if missing:
        return f"so it needs {', '.join(missing)}"
    wrong = [
        name
        for name, node in branch.get("properties", {}).items()
        if record.get(name, _MISSING) is not _MISSING and not _fits(record[name], node)
    ]
    if wrong:
        return f"so {', '.join(wrong)} may not be {', '.join(repr(record[n]) for n in wrong)}"
    return None


def _condition(condition: dict[str, Any], holds: bool) -> str:
    """The rule's condition in words, as it applied to the record."""
    parts = []
    for name, node in condition.get("properties", {}).items():
        if "const" in node:
            parts.append(f"{name} is {node['const']!r}")
        elif "const" in node.get("not", {}):
            parts.append(f"{name} is not {node['not']['const']!r}")
    said = " and ".join(parts) or "the record's condition"
    return said if holds else f"not ({said})"
