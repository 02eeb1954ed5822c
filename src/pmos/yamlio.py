"""YAML reading with the C parser when PyYAML has it (several times faster)."""

from __future__ import annotations

from typing import Any

import yaml

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str) -> Any:
    """Parse YAML safely (no arbitrary objects); raises yaml.YAMLError."""
    return yaml.load(text, Loader=_Loader)
