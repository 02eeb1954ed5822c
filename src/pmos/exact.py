"""Exact rounding shared by every score pmos computes.

Python's ``round`` sends 2.5 to 2 (banker's rounding) and binary floats turn
0.7 * 1 + 0.3 * 36 into 11.4999...; scores that must be comparable across
tools are rounded here instead, on exact values.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction


def round_half_up(value: Fraction | Decimal | int) -> int:
    """The nearest integer to an exact value, a half going up (towards +infinity)."""
    return math.floor(Fraction(value) + Fraction(1, 2))
