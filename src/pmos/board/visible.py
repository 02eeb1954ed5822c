"""Record text made safe to show: every character visible, nothing able to act.

Ledger text (run ids, notes, evidence, model names) is written by agents and by
the work they judged, so the board treats it as hostile. HTML escaping (done by
the page's autoescaping templates) stops it from becoming markup; this module
handles what escaping leaves: characters that are invisible or that reorder
the text around them (bidi overrides and isolates, zero-width characters,
control codes). Each one is shown as a visible code, ``⟨U+202E⟩``, so a run id
cannot masquerade as another ("Trojan Source") or hide part of itself.
"""

from __future__ import annotations

import unicodedata

#: Unicode categories shown as codes: controls, format characters (bidi, zero
#: width, soft hyphen...), and line/paragraph separators.
HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})
#: Whitespace kept as is where the layout shows it (notes keep their lines).
KEPT = frozenset("\n\t")


def code(char: str) -> str:
    """The visible stand-in of one hidden character."""
    return f"⟨U+{ord(char):04X}⟩"


def is_hidden(char: str) -> bool:
    return char not in KEPT and unicodedata.category(char) in HIDDEN_CATEGORIES


def pieces(text: str) -> list[tuple[bool, str]]:
    """``text`` split into runs of ordinary text (False) and single hidden characters (True)."""
    out: list[tuple[bool, str]] = []
    start = 0
    if text.isascii() and text.isprintable():
        return [(False, text)] if text else []
    for i, char in enumerate(text):
        if is_hidden(char):
            if i > start:
                out.append((False, text[start:i]))
            out.append((True, char))
            start = i + 1
    if start < len(text):
        out.append((False, text[start:]))
    return out


def shorten(text: str, limit: int | None) -> str:
    """``text`` cut to ``limit`` characters with a note of how much was left out."""
    if limit is None or len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} more characters)"


def plain(value: object, limit: int | None = None) -> str:
    """Plain text with every hidden character spelled out (for chart labels)."""
    text = "" if value is None else str(value)
    return "".join(code(p) if hidden else p for hidden, p in pieces(shorten(text, limit)))
