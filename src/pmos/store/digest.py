"""A record's content digest: its identity wherever it is stored.

A record keeps its digest when it moves from one file to another (a loose
record folded into a pack, a pack merged from two branches, a copy in a
database), because the digest covers only the record's own fields, in a
canonical encoding: keys sorted, no spaces, UTF-8. Two copies of one record
have one digest, so readers and ``pmos sync`` de-duplicate by it, and
``pmos ledger verify --since`` compares history by it.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from pmos.errors import BadInput

DIGEST_TAG = b"pmos-record-v1\n"
#: Fields of the single-file ledgers' hash chain: where a record sat, not what it says.
CHAIN_FIELDS = ("prev_hash", "hash")


def canonical(record: dict[str, Any]) -> bytes:
    """The record's canonical JSON bytes (sorted keys, compact), chain fields left out."""
    body = {k: v for k, v in record.items() if k not in CHAIN_FIELDS}
    try:
        return orjson.dumps(body, option=orjson.OPT_SORT_KEYS)
    except (TypeError, orjson.JSONEncodeError) as exc:
        raise BadInput(f"record cannot be stored as JSON: {exc}") from None


def digest_bytes(canonical_bytes: bytes) -> str:
    """The digest of a record given its canonical bytes."""
    return hashlib.sha256(DIGEST_TAG + canonical_bytes).hexdigest()


def record_digest(record: dict[str, Any]) -> str:
    """The content digest of ``record`` (hex SHA-256 of its tagged canonical bytes)."""
    return digest_bytes(canonical(record))
