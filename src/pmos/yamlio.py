"""YAML reading: safe, fast, and closed to alias bombs and deep nesting.

Specs, contracts and known-bad cases can come from the work under review, so
the loader treats them as hostile: no Python objects (a safe loader), no
aliases (``*name`` can expand a few lines into gigabytes, the "billion laughs"
attack), and nesting too deep for the parser, or a scalar the safe loader
cannot convert (``2026-13-45``, ``!!int abc``, a 5,000-digit number), is a
YAML error, not a crash. The C parser is used when PyYAML has it.

A document written as JSON (JSON is YAML) is read by orjson when that gives
exactly what the YAML loader would: PyYAML builds its objects in Python, and
a contract of 20,000 criteria took it 1.5 s, against milliseconds.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import orjson
import yaml

from pmos.inputs import duplicate_json_key


class _UniqueKeys:
    """A constructor mix-in that refuses a mapping repeating a key, naming it.

    PyYAML keeps the last value of a repeated key without a word, so a contract
    or a config could say one thing to a reader and another to pmos. Keys are
    compared as constructed (``1`` and ``0x1`` are one key); the keys a merge
    (``<<``) brings in may be overridden, as YAML means them to be.
    """

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: set[Any] = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)  # type: ignore[attr-defined]
                try:
                    repeated = key in seen
                except TypeError:
                    continue  # an unhashable key: the constructor says so itself
                if repeated:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        f"found the key {key!r} repeated",
                        key_node.start_mark,
                    )
                seen.add(key)
        return super().construct_mapping(node, deep)  # type: ignore[misc]


@lru_cache(maxsize=16)
def unique_keys(loader: Any) -> Any:
    """``loader`` refusing repeated mapping keys (one class per loader)."""
    return type(f"UniqueKeys{loader.__name__}", (_UniqueKeys, loader), {})


_Loader = unique_keys(getattr(yaml, "CSafeLoader", yaml.SafeLoader))
_NOT_JSON = object()
_YAML_LINE_BREAK = re.compile("[\x85\u2028\u2029]")
#: The longest key read as JSON: written with an escape for every character and
#: its quotes, it is under YAML's limit of 1,024 characters for a key.
_SHORT_KEY = 500


def load_yaml(text: str, loader: Any = None) -> Any:
    """Parse YAML safely; raises yaml.YAMLError for bad, aliased or too deep input,
    and for a mapping that repeats a key."""
    if loader is None:
        data = _as_json(text)
        if data is not _NOT_JSON:
            return data
    loader = unique_keys(loader) if loader is not None else _Loader
    try:
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, yaml.AliasEvent):
                mark = event.start_mark
                where = f" (line {mark.line + 1})" if mark is not None else ""
                raise yaml.YAMLError(
                    f"YAML aliases such as *{event.anchor} are not accepted{where}"
                )
        return yaml.load(text, Loader=loader)
    except RecursionError:
        raise yaml.YAMLError("the document is nested too deeply") from None
    except (ValueError, TypeError, KeyError, IndexError, OverflowError) as exc:
        raise yaml.YAMLError(f"a value cannot be read: {exc!r}") from None


def _as_json(text: str) -> Any:
    """``text`` read as JSON, or ``_NOT_JSON`` unless that is what YAML reads too.

    On JSON, the YAML 1.1 loader differs in five places, so such a document is
    left to it: numbers with a fraction or an exponent (YAML reads ``1e5`` as a
    string), ``\\u`` escapes (YAML does not join a surrogate pair), characters
    YAML refuses (control characters JSON allows in a string), the line breaks
    only YAML has (NEL, U+2028, U+2029: YAML folds them in a string) and long
    keys (YAML refuses a key of more than 1,024 characters as written; one of
    up to :data:`_SHORT_KEY` characters is at most 1,002 as written). Text
    that is not strict JSON (a comment, a trailing comma, NaN, a BOM, an integer
    past 64 bits) falls to YAML as well, which then reads it or says why not.
    An object that repeats a key is refused, as the YAML loader refuses it.
    """
    if (
        text.lstrip()[:1] not in ("{", "[")
        or "\\u" in text
        or yaml.reader.Reader.NON_PRINTABLE.search(text)
        or _YAML_LINE_BREAK.search(text)
    ):
        return _NOT_JSON
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        return _NOT_JSON
    todo = [data]
    while todo:
        value = todo.pop()
        if isinstance(value, dict):
            if any(len(key) > _SHORT_KEY for key in value):
                return _NOT_JSON
            todo.extend(value.values())
        elif isinstance(value, list):
            todo.extend(value)
        elif isinstance(value, float):
            return _NOT_JSON
    repeated = duplicate_json_key(text)
    if repeated is not None:
        raise yaml.YAMLError(repeated)
    return data
