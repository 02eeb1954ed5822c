"""Making record text safe to show on a terminal.

Ledger text comes from agents and from the work they judged; an escape
sequence inside a note must not be able to rewrite the reader's screen.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def neutralise(text: str) -> str:
    """Replace terminal control characters (ESC, CSI, BEL...) with visible escapes."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
