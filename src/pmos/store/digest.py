"""A record's content digest: its identity wherever it is stored.

A record keeps its digest when it moves from one file to another (a loose
record folded into a pack, a pack merged from two branches, a copy in a
database), because the digest covers only the record's own fields, in a
canonical encoding. Two copies of one record have one digest, so readers and
``pmos sync`` de-duplicate by it, and ``pmos ledger verify --since`` compares
history by it.

The canonical encoding is RFC 8785, the JSON Canonicalization Scheme (JCS):
keys sorted by their UTF-16 code units, no spaces, strings escaped as JCS
says, numbers written as ECMAScript writes them, UTF-8. It is specified, not
whatever a JSON library happens to print, so a new orjson release cannot change
a record's identity (tests/test_property_canonical.py holds :func:`canonical`
to the ``rfc8785`` reference implementation). orjson's sorted compact output
*is* JCS for a record with no floating-point number and no character beyond
the Basic Multilingual Plane, the common case, so that is the fast path; any
other record is encoded here by the JCS rules. Integers beyond +-(2**53 - 1)
lie outside JCS's domain (it has only IEEE doubles); pmos writes them as their
decimal digits.
"""

from __future__ import annotations

import hashlib
import math
import re
from typing import Any

import orjson

from pmos.errors import BadInput

#: v2: the canonical form is RFC 8785 (v1 was orjson's sorted output, which
#: differs for some floats and for keys beyond the Basic Multilingual Plane).
DIGEST_TAG = b"pmos-record-v2\n"
#: Where orjson's bytes may differ from JCS: a floating-point number that orjson
#: writes with an exponent or as a whole number with ".0" (both shortest
#: round-trip digits, but JCS writes 1.0 as 1 and moves to exponents at other
#: magnitudes), or a character beyond the BMP (a 4-byte UTF-8 sequence: JCS
#: sorts keys by UTF-16 code units). A decimal like 0.86 is written alike by
#: both. A string that merely looks like a number sends its record down the
#: exact path, which is only slower.
_NOT_PLAIN = re.compile(
    rb"[:,\[]-?[0-9]+(?:\.[0-9]+)?[eE][-+]?[0-9]+[,\]}]|[:,\[]-?[0-9]+\.0[,\]}]|[\xf0-\xf4]"
)


def orjson_is_jcs(fast: bytes) -> bool:
    """Whether orjson's sorted output ``fast`` is JCS already (see :data:`_NOT_PLAIN`).

    Plain substring tests first (every reader asks this of every record, and
    the expression costs three times as much): orjson writes an exponent as
    ``e+`` or ``e-`` and a whole float with ``.0``, and a 4-byte UTF-8 sequence
    is not ASCII."""
    if (
        b".0," in fast
        or b".0}" in fast
        or b".0]" in fast
        or b"e+" in fast
        or b"e-" in fast
        or not fast.isascii()
    ):
        return _NOT_PLAIN.search(fast) is None
    return True


def canonical(record: Any) -> bytes:
    """The RFC 8785 canonical JSON bytes of ``record``."""
    try:
        fast = orjson.dumps(record, option=orjson.OPT_SORT_KEYS)
    except (TypeError, orjson.JSONEncodeError) as exc:
        raise BadInput(f"record cannot be stored as JSON: {exc}") from None
    if orjson_is_jcs(fast):
        return fast
    return _jcs(record).encode()


def is_canonical(body: bytes, record: Any) -> bool:
    """Whether ``body`` is the canonical encoding of ``record`` (parsed from it):
    the one test every reader applies to every stored line."""
    try:
        fast = orjson.dumps(record, option=orjson.OPT_SORT_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        return False
    if orjson_is_jcs(fast):
        return fast == body
    try:
        return _jcs(record).encode() == body
    except BadInput:
        return False


def _jcs(value: Any) -> str:
    """RFC 8785 by its rules (the slow path of :func:`canonical`)."""
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: k.encode("utf-16-be", "surrogatepass"))
        return "{" + ",".join(_string(k) + ":" + _jcs(value[k]) for k in keys) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_jcs(item) for item in value) + "]"
    if isinstance(value, float):
        return _number(value)
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return _string(value)
    raise BadInput(f"record cannot be stored as JSON: {type(value).__name__} is not JSON")


def _string(text: str) -> str:
    # orjson escapes strings exactly as JCS does (the property test holds it to that).
    try:
        return orjson.dumps(text).decode()
    except orjson.JSONEncodeError as exc:
        raise BadInput(f"record cannot be stored as JSON: {exc}") from None


def _number(x: float) -> str:
    """A double as ECMAScript's Number.prototype.toString writes it (RFC 8785 3.2.2.3)."""
    if not math.isfinite(x):
        raise BadInput("record cannot be stored as JSON: NaN and infinities are not JSON")
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    mantissa, _, exp = repr(abs(x)).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = whole + frac
    n = len(whole) + (int(exp) if exp else 0)  # x = 0.<digits> * 10**n
    stripped = digits.lstrip("0")
    n -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * -n + digits
    else:
        e = n - 1
        power = ("e+" if e >= 0 else "e-") + str(abs(e))
        text = (digits if k == 1 else digits[0] + "." + digits[1:]) + power
    return sign + text


def digest_bytes(canonical_bytes: bytes) -> str:
    """The digest of a record given its canonical bytes."""
    return hashlib.sha256(DIGEST_TAG + canonical_bytes).hexdigest()


def record_digest(record: dict[str, Any]) -> str:
    """The content digest of ``record`` (hex SHA-256 of its tagged canonical bytes)."""
    return digest_bytes(canonical(record))
