"""YAML reading: safe, fast, and closed to alias bombs and deep nesting.

Specs, contracts and known-bad cases can come from the work under review, so
the loader treats them as hostile: no Python objects (a safe loader), no
aliases (``*name`` can expand a few lines into gigabytes, the "billion laughs"
attack), and nesting too deep for the parser, or a scalar the safe loader
cannot convert (``2026-13-45``, ``!!int abc``, a 5,000-digit number), is a
YAML error, not a crash. The C parser is used when PyYAML has it.
"""

from __future__ import annotations

from typing import Any

import yaml

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str, loader: Any = None) -> Any:
    """Parse YAML safely; raises yaml.YAMLError for bad, aliased or too deep input."""
    loader = loader or _Loader
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
