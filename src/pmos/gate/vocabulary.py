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


def is_judged(verdict: Mapping[str, Any]) -> bool:
    """Whether a verdict record is a judgement: every verdict but SKIPPED.

    A skip says judging did not happen, so whatever else it carries is not a
    finding: it neither pairs with a PM label, nor can be overridden, nor
    yields follow-up work.
    """
    return verdict.get("verdict") != SKIPPED
