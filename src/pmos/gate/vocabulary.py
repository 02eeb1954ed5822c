"""The verdict and label words that readers of every layer agree on.

The verdict schema defines these values; they are named here, in the store,
because the store's own readers answer "the latest *judged* verdict of a run"
and every other package builds on that answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PASS, PWF, FAIL, SKIPPED = "PASS", "PASS-WITH-FINDINGS", "FAIL", "SKIPPED"
#: Verdicts on the pass side of the gate (the positive class for calibration).
PASS_SIDE = frozenset({PASS, PWF})
#: Every verdict word in the verdict schema's order (for text that lists them).
VERDICTS = (PASS, PWF, FAIL, SKIPPED)


def side(verdict: object) -> str:
    """``"pass"`` for a pass-side verdict, ``"fail"`` for FAIL, ``""`` otherwise
    (SKIPPED, or no verdict): the one reading of a verdict's side that pages use."""
    if verdict in PASS_SIDE:
        return "pass"
    return "fail" if verdict == FAIL else ""


def pass_side_words() -> str:
    """The pass-side verdicts as text, in the schema's order: ``PASS, PASS-WITH-FINDINGS``."""
    return ", ".join(word for word in VERDICTS if word in PASS_SIDE)


def is_judged(verdict: Mapping[str, Any]) -> bool:
    """Whether a verdict record is a judgement: every verdict but SKIPPED.

    A skip says judging did not happen, so whatever else it carries is not a
    finding: it neither pairs with a PM label, nor can be overridden, nor
    yields follow-up work.
    """
    return verdict.get("verdict") != SKIPPED
