"""Making record text safe to show on a terminal.

Ledger text comes from agents and from the work they judged; an escape
sequence inside a note must not be able to rewrite the reader's screen, and a
right-to-left override (U+202E), an isolate (U+2066), a line separator
(U+2028) or a zero-width space (U+200B) must not make one id look like
another. Every control character (Unicode category Cc), format character
(Cf), line and paragraph separator (Zl, Zp) and lone surrogate (Cs) is shown
as a visible escape instead: ``\\x1b``, ``\\u202e``, ``\\U000e0041``. Tab and
newline are kept; they are how text is laid out.

The categories come from the running Python's Unicode database, so the rule
follows Unicode rather than a list kept by hand.
"""

from __future__ import annotations

import re
import unicodedata

#: Unicode categories never shown raw.
UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
#: Every character that might be unsafe: all but tab, newline and printable ASCII.
_CANDIDATE = re.compile(r"[^\t\n\x20-\x7e]")
#: In JSON text: every non-ASCII character and DEL (JSON itself escapes C0).
_JSON_CANDIDATE = re.compile(r"[^\x00-\x7e]")


def is_unsafe(char: str) -> bool:
    """True for a character that must not reach a terminal as it is."""
    return unicodedata.category(char) in UNSAFE_CATEGORIES


def escape_char(char: str) -> str:
    """A visible escape for one character, as Python writes it."""
    point = ord(char)
    if point <= 0xFF:
        return f"\\x{point:02x}"
    if point <= 0xFFFF:
        return f"\\u{point:04x}"
    return f"\\U{point:08x}"


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    return escape_char(char) if is_unsafe(char) else char


def neutralise(text: str) -> str:
    """``text`` with every control and format character replaced by a visible
    escape (tab and newline kept). Idempotent: an escape is plain ASCII."""
    return _CANDIDATE.sub(_visible, text)


def _json_escape(match: re.Match[str]) -> str:
    char = match.group()
    if not is_unsafe(char):
        return char
    point = ord(char)
    if point <= 0xFFFF:
        return f"\\u{point:04x}"
    point -= 0x10000
    return f"\\u{0xD800 + (point >> 10):04x}\\u{0xDC00 + (point & 0x3FF):04x}"


def json_safe(data: bytes) -> bytes:
    """JSON text with every unsafe character inside its strings written as a
    ``\\uXXXX`` escape: the same data for any JSON reader, nothing invisible or
    screen-changing for a person looking at it. Outside strings JSON has only
    ASCII, so the replacement never touches its syntax."""
    if data.isascii() and b"\x7f" not in data:
        return data
    return _JSON_CANDIDATE.sub(_json_escape, data.decode("utf-8")).encode("utf-8")
