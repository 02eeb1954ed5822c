"""Typed views of ledger records: only the fields a reader uses, typed by the schema.

The hash chain proves that a pmos writer made a line; it does not prove the
line fits today's schema (a line re-chained by hand, or written by an older
writer). A reader that computed with such a line would crash on a wrong type,
or, worse, count it. Decoding each line into a *row type* (a msgspec Struct
holding just the fields that reader uses) checks those fields' types while the
line is parsed, and skips every other field without building it, which is also
what keeps the reader of a million-line ledger fast.

The types come from the JSON Schemas, the one source of truth: a field's JSON
type(s), enum or const become its Python type, a field the schema requires is
required in the row, and any other field is None when absent. Constraints that
are not types (patterns, lengths, formats) stay with ``pmos ledger verify
--schema``, which checks every record against the whole schema.
"""

from __future__ import annotations

from functools import cache, reduce
from operator import or_
from typing import Any, Literal

import msgspec

from pmos.kit import LEDGER_KINDS
from pmos.schemas import load_schema

_JSON_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,  # msgspec's float also takes a JSON integer
    "boolean": bool,
    "null": None,
    "array": list,
    "object": dict,
}


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
        python = _python_type(schema["properties"][field], schema_name)
        spec.append((field, python) if field in required else (field, python | None, None))
    name = "".join(part.title() for part in kind.split("-")) + "Row"
    # gc=False: rows hold only JSON values, which cannot form cycles.
    return msgspec.defstruct(name, spec, kw_only=True, frozen=True, gc=False)


def _python_type(prop: dict[str, Any], schema_name: str) -> Any:
    """The Python type a JSON Schema property admits, as msgspec understands it."""
    if "const" in prop:
        return _literal([prop["const"]])
    if "enum" in prop:
        return _literal(prop["enum"])
    for keyword in ("oneOf", "anyOf"):
        if keyword in prop:
            return reduce(or_, (_python_type(p, schema_name) for p in prop[keyword]))
    if "type" in prop:
        names = prop["type"] if isinstance(prop["type"], list) else [prop["type"]]
        return reduce(or_, (_JSON_TYPES[n] for n in names))
    if "$ref" in prop:
        target, name = _resolve(prop["$ref"], schema_name)
        return _python_type(target, name)
    return Any


def _literal(values: list[Any]) -> Any:
    """``Literal[...]`` of the non-null values, made optional when null is among them."""
    present = [v for v in values if v is not None]
    literal = Literal[tuple(present)] if present else None  # type: ignore[valid-type]
    return literal | None if None in values and present else literal


def _resolve(ref: str, schema_name: str) -> tuple[dict[str, Any], str]:
    """The schema fragment a ``$ref`` such as ``common.schema.json#/$defs/identifier`` names."""
    document, _, pointer = ref.partition("#")
    name = document.removesuffix(".schema.json") if document else schema_name
    target: Any = load_schema(name)
    for part in filter(None, pointer.split("/")):
        target = target[part]
    return target, name
