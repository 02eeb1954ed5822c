"""Model families, for the self-preference check.

An LLM judge tends to over-rate work in its own family's style, so a verdict
whose evaluator and builder share a family is flagged for a cross-family
spot-check. Matching is by prefix on the parts of a model id, so
``anthropic/claude-sonnet-4`` and ``claude-opus-4@20250101`` are both Claude.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

_SEPARATORS = re.compile(r"[/:@\s]+")


def family_of(model: str, families: Mapping[str, Sequence[str]]) -> str | None:
    parts = [p for p in _SEPARATORS.split(model.lower()) if p]
    for family, prefixes in families.items():
        for prefix in prefixes:
            if any(part.startswith(prefix.lower()) for part in parts):
                return family
    return None


def same_family(a: str, b: str, families: Mapping[str, Sequence[str]]) -> str | None:
    """The shared family of two models, or None when they differ or are unknown."""
    fa = family_of(a, families)
    return fa if fa is not None and fa == family_of(b, families) else None
