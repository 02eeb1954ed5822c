"""One record, one line: the format of every record pmos writes.

A record line is the record's canonical JSON (RFC 8785; see
:mod:`pmos.store.digest`) with its content digest spliced in as the last field::

    {"label":"pass",...,"run_id":"r1","digest":"<64 hex>"}

The digest covers the canonical bytes before it, so a line is checked without
parsing it: slice off the fixed-size tail, hash, compare. The same line is the
whole content of a loose record file and one line of a pack, so a record reads
the same wherever it sits.

Decoders turn a line into what a reader asked for: a dict typed by the kind's
schema (the default), a row of just the fields a hot reader uses, or a plain
dict for display. The digest field is dropped from what plain and typed readers
see: it is the record's identity, not part of what the record says.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from functools import cache
from typing import Any

import orjson

from pmos.errors import BadInput
from pmos.store.digest import DIGEST_TAG, canonical, digest_bytes, is_canonical
from pmos.store.registry import LEDGER_KINDS

DIGEST_FIELD = "digest"
_KEY = b',"digest":"'
_HEX = 64
#: Bytes after the canonical body's closing brace is removed: ,"digest":"<hex>"}
TAIL_LEN = len(_KEY) + _HEX + 2
#: The digest's hash state after its tag: each line's digest continues a copy of it.
_TAGGED = hashlib.sha256(DIGEST_TAG)
#: A line's tail, its newline included, after at least two bytes of its line (see
#: :func:`stated_digests`; the look behind comes after the key, which the
#: engine finds by a fast scan for a fixed prefix).
_TAILS = re.compile(
    re.escape(_KEY) + rb"(?<=[^\n][^\n]" + re.escape(_KEY) + rb')([^\n]{%d})"}\n' % _HEX
)
#: Fields a record may not bring: the store sets or owns them.
RESERVED = (DIGEST_FIELD,)


class LineError(ValueError):
    """A single ledger line is malformed; the message says how."""


def encode(record: dict[str, Any]) -> tuple[bytes, str]:
    """The stored line of ``record`` (newline-terminated) and its digest."""
    clash = [name for name in RESERVED if name in record]
    if clash:
        raise BadInput(f"record may not set the ledger's own field(s): {', '.join(clash)}")
    if not record:
        raise BadInput("an empty record cannot be stored")
    body = canonical(record)
    digest = digest_bytes(body)
    return body[:-1] + _KEY + digest.encode() + b'"}\n', digest


def split(raw: bytes) -> tuple[bytes, str]:
    """``(canonical body, claimed digest)`` of a line given without its newline."""
    end = len(raw)
    start = end - TAIL_LEN
    if start < 2 or raw[start : start + len(_KEY)] != _KEY or raw[end - 2 :] != b'"}':
        raise LineError("carries no digest as its last field: not written by a pmos writer")
    claimed = raw[end - 2 - _HEX : end - 2]
    try:
        text = claimed.decode("ascii")
    except UnicodeDecodeError:
        raise LineError("its digest is not hexadecimal") from None
    return raw[:start] + b"}", text


def stated_digests(content: bytes, start: int = 0) -> list[str] | None:
    """The digest each line of ``content[start:]`` claims (:func:`split`'s second
    half), for lines read in bulk without their bodies and without splitting them
    apart: one pass of the regular-expression engine finds every tail. None when
    a line carries none, or the last one is cut (split that one alone to be told
    what is wrong).

    Exactly :func:`split`'s test of each line: a tail match is the last
    ``TAIL_LEN`` bytes of one line (it ends at a newline, holds none before it,
    and follows two bytes of the same line), so a match for every newline is a
    tail on every line."""
    found = _TAILS.findall(content, start)
    if not found or len(found) != content.count(b"\n", start) or not content.endswith(b"\n"):
        return None
    if not b"".join(found).isascii():
        return None
    return list(map(bytes.decode, found))


def check(raw: bytes) -> tuple[bytes, str]:
    """Like :func:`split`, and the digest must match the content.

    A sound line is checked in one pass (hash the body, compare the tail),
    verification's hot path; only a bad one goes through :func:`split` to be
    told what is wrong with it.
    """
    cut = len(raw) - TAIL_LEN
    body = raw[:cut] + b"}"
    digest = _TAGGED.copy()
    digest.update(body)
    text = digest.hexdigest()
    if (
        cut >= 2
        and raw[cut : cut + len(_KEY)] == _KEY
        and raw[cut + len(_KEY) :] == (text.encode() + b'"}')
    ):
        return body, text
    split(raw)
    raise LineError("its content does not match its digest: the record was edited")


def check_canonical(body: bytes) -> dict[str, Any]:
    """Parse a checked body and require it to be canonical, as a writer makes it.

    A hand-made line can carry a digest of its own non-canonical bytes; its
    record would then have two identities. Every reader refuses it.
    """
    try:
        record = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise LineError(f"is not valid JSON ({exc})") from None
    if type(record) is not dict:
        raise LineError("is not a JSON object")
    if DIGEST_FIELD in record:
        raise LineError("sets the field the ledger owns (digest) twice")
    if not is_canonical(body, record):
        raise LineError("is not in canonical form (RFC 8785): not written by pmos")
    return record


# ---------------------------------------------------------------- decoding


def decoder(
    kind: str, row: type | None = None, plain: bool = False
) -> tuple[Callable[[bytes], Any], tuple[type[Exception], ...]]:
    """The decoder a reader asked for, and the errors it raises on a bad line.

    By default a line decodes to a dict typed by the kind's schema (see
    :mod:`pmos.store.rows`): a record whose fields do not fit their types is
    refused, with its place, instead of crashing or misleading the code that
    uses it. ``row`` decodes just the fields a hot reader needs. ``plain``
    parses without a type check, for code that only displays records.
    """
    if plain:
        return _plain_decoder(kind), (orjson.JSONDecodeError, LineError)
    return _typed_decoder(kind, row), _typed_errors()


def _check_kind(kind: str, record: Any) -> None:
    """A record's id names its ledger: a record copied from another ledger is refused
    (its digest alone cannot say where it belongs)."""
    prefix = LEDGER_KINDS[kind].id_prefix + "-"
    record_id = record.get("record_id") if isinstance(record, dict) else None
    if not (isinstance(record_id, str) and record_id.startswith(prefix)):
        raise LineError(
            f"the record id {record_id!r} is not one of the {kind} ledger ({prefix}...): "
            "it was copied from another ledger or made by hand"
        )

    # The plain reader, whose check this is, accepts every line (msgspec is stricter
    # about some JSON the writers never make): so does this.


@cache
def _plain_decoder(kind: str) -> Callable[[bytes], Any]:
    def decode_plain(raw: bytes) -> Any:
        record = orjson.loads(split(raw)[0])
        _check_kind(kind, record)
        return record

    return decode_plain


@cache
def _typed_decoder(kind: str, row: type | None) -> Callable[[bytes], Any]:
    import msgspec  # imported on the first typed read, not by every command

    # Deferred: pmos.store.rows imports msgspec (about 30 ms).
    from pmos.store.rows import record_rules, record_type

    if row is not None:
        return msgspec.json.Decoder(row).decode
    decode = msgspec.json.Decoder(record_type(kind)).decode
    rules = record_rules(kind)

    def decode_typed(raw: bytes) -> Any:
        record = decode(raw)
        record.pop(DIGEST_FIELD, None)
        _check_kind(kind, record)
        if rules is not None:
            problem = rules(record)
            if problem is not None:
                raise LineError(f"the record breaks a rule of its schema: {problem}")
        return record

    return decode_typed


def lines_decoder(row: type | None) -> Callable[[bytes | memoryview], list[Any]] | None:
    """For a ``row`` reader, the decoder of many lines at once (newline-delimited, as a
    pack holds them): the hot readers' way to read a month whose lines were all
    checked (:class:`pmos.store.integrity.WholePack`). None for other readers,
    whose decoders check each record on its own."""
    if row is None:
        return None
    return _lines_decoder(row)


@cache
def _lines_decoder(row: type) -> Callable[[bytes | memoryview], list[Any]]:
    # Deferred: msgspec (about 30 ms), on the first typed read only.
    import msgspec

    return msgspec.json.Decoder(row).decode_lines


@cache
def _typed_errors() -> tuple[type[Exception], ...]:
    # Deferred: msgspec (about 30 ms), on the first typed read only.
    import msgspec

    return (msgspec.DecodeError, LineError)


def decode_problem(exc: Exception) -> str:
    """A decoder's error as a line problem (a ValidationError names the field)."""
    # Deferred: msgspec (about 30 ms), on the first typed read only.
    import msgspec

    if isinstance(exc, LineError):
        return str(exc)
    if isinstance(exc, msgspec.ValidationError):
        return f"a field does not fit the ledger's schema: {exc}"
    return f"not valid JSON ({exc})"
