"""The single-file ledgers of kits from before the folder layout: read, verify, migrate.

Until ``pmos ledger pack`` folds it into a pack, a kit made by an earlier pmos
keeps each ledger in one hash-chained JSONL file (``state/evals.jsonl``). No
writer appends to such a file any more; the readers here let every command keep
working during the change, and ``pmos ledger verify`` checks its chain.

Layout of one line (UTF-8, newline-terminated)::

    {...record fields...,"prev_hash":"<hex>","hash":"<hex>"}

``hash`` is SHA-256 over a tag and the exact bytes of the line up to (not
including) ``,"hash":...``, closed with ``}``. Because the hash covers the bytes
as written, verifying a line never re-serialises it: slice, hash, compare. The
``prev_hash`` of the first line is a per-kind genesis value, so a line copied
from another kind's ledger breaks the chain too.

Readers ignore an unterminated tail (a crash remnant of an old writer);
``pmos ledger pack`` moves it to ``<ledger>.quarantine`` when it converts the file.

What the chain detects: an edited, deleted, reordered, inserted or
hand-appended line. What it cannot detect on its own: someone who recomputes
every later hash, or cuts lines off the end: ``pmos ledger verify --since``
compares against history instead.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from pmos.errors import BadInput, LedgerCorrupt, Violation
from pmos.store import lines
from pmos.store.files import lines_from_end
from pmos.store.lines import LineError

_HASH_TAG = b"pmos-ledger-v1\n"
_TAGGED = hashlib.sha256(_HASH_TAG)
_BLOCK = 1 << 16
#: Forward readers read this much per system call: with the default 8 KiB, a
#: large ledger costs tens of thousands of reads (about 0.1 s per 400 MB).
_READ_BUFFER = 1 << 20
#: Fields the ledger itself owns; a record may not bring its own.
CHAIN_FIELDS = ("prev_hash", "hash")

# Every line a writer makes ends with the same fixed-size tail, because
# encode_line puts prev_hash last in the body and appends hash after it:
#     ...,"prev_hash":"<64 hex>","hash":"<64 hex>"}
_PREV_KEY = ',"prev_hash":"'
_HASH_KEY = '","hash":"'
_CLOSE = '"}'
_HEX = 64
_TAIL_LEN = len(_PREV_KEY) + _HEX + len(_HASH_KEY) + _HEX + len(_CLOSE)
#: Bytes at the end of a line that the line's own hash does not cover: ,"hash":"<hex>"}
_UNHASHED = len(_HASH_KEY) - 1 + _HEX + len(_CLOSE)
_SUFFIX = re.compile(rb',"hash":"([0-9a-f]{64})"\}\Z')
_TAIL = re.compile(rb',"prev_hash":"[0-9a-f]{64}","hash":"[0-9a-f]{64}"\}\Z')
_NO_HASH = "carries no chain hash as its last field: not written by a pmos writer"
_NO_PREV = "carries no prev_hash just before its hash: not written by a pmos writer"
_EDITED = "hash does not match the line's content: the line was edited"


def genesis_hash(kind: str) -> str:
    """The ``prev_hash`` of a ledger's first line; distinct per ledger kind."""
    return hashlib.sha256(b"pmos-ledger-genesis:" + kind.encode()).hexdigest()


def _digest(body: bytes) -> str:
    return hashlib.sha256(_HASH_TAG + body).hexdigest()


def parse_line(raw: bytes) -> dict[str, Any]:
    """Parse one line (without its newline) and check its own hash.

    Returns the record, chain fields included. Does not check the link to the
    previous line: that needs context the caller has.
    """
    _chain_fields(raw, len(raw))
    return _parse_plain(raw)


def _chain_fields(raw: bytes, end: int) -> tuple[bytes, bytes]:
    """``(prev_hash, hash)`` of the line ``raw[:end]``, once its own hash is checked.

    This is every reader's hot path, so it works on the bytes alone: the
    tail has a fixed size and layout, the hash covers the bytes as written,
    and the tagged hash state is copied rather than rebuilt. Parsing is left
    to the caller, who picks the decoder. Any failure is explained by
    :func:`_diagnose`, which may take its time.
    """
    own_at = end - len(_CLOSE) - _HEX
    own = raw[own_at : end - len(_CLOSE)]
    digest = _TAGGED.copy()
    digest.update(raw[: end - _UNHASHED] + b"}")
    start = end - _TAIL_LEN
    prev_at = start + len(_PREV_KEY)
    if (
        digest.hexdigest().encode() != own
        or start < 1
        or raw[start:prev_at] != _PREV_KEY.encode()
        or raw[own_at - len(_HASH_KEY) : own_at] != _HASH_KEY.encode()
        or raw[end - len(_CLOSE) : end] != _CLOSE.encode()
    ):
        raise LineError(_diagnose(raw[:end]))
    return raw[prev_at : prev_at + _HEX], own


def _diagnose(line: bytes) -> str:
    """Why :func:`_chain_fields` refused ``line``, in the terms a person can act on."""
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        return f"not valid JSON ({exc})"
    if type(record) is not dict:
        return "not a JSON object"
    suffix = _SUFFIX.search(line)
    if suffix is None or suffix.start() < 1:
        return _NO_HASH
    if _digest(line[: suffix.start()] + b"}") != suffix.group(1).decode():
        return _EDITED
    if _TAIL.search(line) is None:
        return _NO_PREV
    return "malformed chain fields"  # unreachable while the checks above mirror _chain_fields


def _parse_plain(raw: bytes) -> Any:
    """Parse a line whose chain fields were checked; a parse failure is a LineError."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise LineError(f"not valid JSON ({exc})") from None


def _line_decoder(
    kind: str, row: type | None, plain: bool
) -> tuple[Callable[[bytes], Any], tuple[type[Exception], ...]]:
    """The decoder a reader asked for (see :func:`pmos.store.lines.decoder`); plain
    records of this format keep their chain fields, for display."""
    if plain:
        return orjson.loads, (orjson.JSONDecodeError,)
    return lines.decoder(kind, row, False)


def encode_line(record: dict[str, Any], prev_hash: str) -> tuple[bytes, str]:
    """Serialise ``record`` chained to ``prev_hash``; returns the line and its hash."""
    clash = [f for f in CHAIN_FIELDS if f in record]
    if clash:
        raise BadInput(f"record may not set the ledger's own field(s): {', '.join(clash)}")
    try:
        body = orjson.dumps({**record, "prev_hash": prev_hash})
    except (TypeError, orjson.JSONEncodeError) as exc:
        raise BadInput(f"record cannot be stored as JSON: {exc}") from None
    digest = _digest(body)
    return body[:-1] + b',"hash":"' + digest.encode() + b'"}\n', digest


# ---------------------------------------------------------------- reading


def iter_records(
    path: Path, kind: str, *, row: type | None = None, plain: bool = False
) -> Iterator[Any]:
    """Stream a ledger's records in order, checking each line and the chain.

    A missing ledger reads as empty. An unterminated last line is skipped (a
    write in flight, or a crash remnant). A line that does not parse or breaks
    the chain raises :class:`LedgerCorrupt`: numbers computed from a tampered
    ledger must not be reported. Records are dicts checked against their
    schema's types, rows, or plain dicts (see :func:`_line_decoder`).
    """
    decode, errors = _line_decoder(kind, row, plain)
    try:
        handle = open(path, "rb", buffering=_READ_BUFFER)  # noqa: SIM115 - closed in finally
    except FileNotFoundError:
        return
    # The hot loop of every reader. It does what _chain_fields does, with the
    # link folded in: the line's tail must read exactly as the writer would
    # have made it after the previous line; anything else goes to the slow path.
    tagged, prev_key, hash_key, close = _TAGGED, _PREV_KEY, _HASH_KEY, _CLOSE + "\n"
    unhashed, tail_len = _UNHASHED, _TAIL_LEN
    with handle:
        prev = genesis_hash(kind)
        for number, raw in enumerate(handle, start=1):
            end = len(raw) - 1
            if raw[end:] != b"\n":
                return
            try:
                digest = tagged.copy()
                digest.update(raw[: end - unhashed] + b"}")
                own = digest.hexdigest()
                try:
                    tail = raw[end - tail_len :].decode()
                except UnicodeDecodeError:
                    tail = ""
                if (
                    tail != f"{prev_key}{prev}{hash_key}{own}{close}"
                    and _chain_fields(raw, end)[0] != prev.encode()
                ):
                    raise LedgerCorrupt(str(path), number, _LINK_BROKEN)
                prev = own
                yield decode(raw)
            except LineError as exc:
                raise LedgerCorrupt(str(path), number, str(exc)) from None
            except errors as exc:
                raise LedgerCorrupt(str(path), number, lines.decode_problem(exc)) from None


_LINK_BROKEN = "prev_hash does not match the previous line: a line was deleted, moved or inserted"


def iter_records_reversed(
    path: Path, kind: str, *, plain: bool = False
) -> Iterator[dict[str, Any]]:
    """Stream a ledger's records newest first, checking each line and its link.

    Lets a writer look at recent history (the last N verdicts, the latest
    record of a run) without reading a large ledger from the start. Records
    are decoded as by :func:`iter_records`.
    """
    decode, errors = _line_decoder(kind, None, plain)
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        end = os.fstat(fd).st_size
        # Skip an unterminated tail, as the forward reader does.
        if end and os.pread(fd, 1, end - 1) != b"\n":
            end = _rfind_newline(fd, end) + 1
        later_prev: str | None = None
        # Line numbers are unknown when reading backwards: say where from the end
        # instead. An empty line is refused below, as the forward reader refuses it.
        for from_end, raw in enumerate(lines_from_end(fd, 0, end), start=1):
            try:
                prev, own = _chain_fields(raw, len(raw))
                record = decode(raw)
            except LineError as exc:
                raise _corrupt_from_end(path, from_end, str(exc)) from None
            except errors as exc:
                raise _corrupt_from_end(path, from_end, lines.decode_problem(exc)) from None
            if later_prev is not None and own != later_prev:
                raise _corrupt_from_end(path, from_end, _LINK_BROKEN)
            later_prev = prev
            yield record
        if later_prev is not None and later_prev != genesis_hash(kind).encode():
            raise LedgerCorrupt(str(path), 1, "first line does not start the chain")
    finally:
        os.close(fd)


def _rfind_newline(fd: int, end: int) -> int:
    """Offset of the last ``\\n`` strictly before ``end``, or -1."""
    pos = end
    while pos > 0:
        start = max(0, pos - _BLOCK)
        chunk = os.pread(fd, pos - start, start)
        idx = chunk.rfind(b"\n")
        if idx >= 0:
            return start + idx
        pos = start
    return -1


def _corrupt_from_end(path: Path, from_end: int, problem: str) -> LedgerCorrupt:
    return LedgerCorrupt(str(path), None, f"line {from_end} from the end: {problem}")


# ---------------------------------------------------------------- verifying


class Problem(NamedTuple):
    line: int
    problem: str

    def as_dict(self) -> dict[str, Any]:
        return {"line": self.line, "problem": self.problem}


class VerifyReport:
    """The outcome of verifying one ledger."""

    __slots__ = ("head", "kind", "lines", "path", "problems")

    def __init__(self, kind: str, path: str) -> None:
        self.kind = kind
        self.path = path
        self.lines = 0
        self.head: str | None = None
        self.problems: list[Problem] = []

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "path": self.path,
            "ok": self.ok,
            "lines": self.lines,
            "head": self.head,
            "problems": [p.as_dict() for p in self.problems],
        }


def verify(
    path: Path,
    kind: str,
    *,
    validate: Callable[[dict[str, Any]], list[Violation]] | None = None,
) -> VerifyReport:
    """Check every line of a ledger and report each problem with its line number.

    After a bad line the check resynchronises on that line's own claimed hash,
    so one edited line is reported once rather than poisoning the rest.
    Holds a shared lock, so a torn tail seen here is not a write in flight.
    """
    report = VerifyReport(kind, str(path))
    try:
        handle = open(path, "rb", buffering=_READ_BUFFER)  # noqa: SIM115 - closed below
    except FileNotFoundError:
        report.problems.append(
            Problem(0, "ledger file is missing; 'pmos init' on the kit root recreates it empty")
        )
        return report
    with handle:
        expected = genesis_hash(kind).encode()
        for number, raw in enumerate(handle, start=1):
            report.lines = number
            if not raw.endswith(b"\n"):
                report.problems.append(
                    Problem(
                        number,
                        "unterminated last line (torn write); the next append "
                        "moves it to the quarantine file",
                    )
                )
                break
            try:
                prev, own = _chain_fields(raw, len(raw) - 1)
                record = _parse_plain(raw)
            except LineError as exc:
                report.problems.append(Problem(number, str(exc)))
                claimed = _SUFFIX.search(raw[:-1])
                expected = claimed.group(1) if claimed else expected
                continue
            if prev != expected:
                report.problems.append(Problem(number, _LINK_BROKEN))
            expected = own
            if validate is not None:
                for violation in validate(record):
                    report.problems.append(Problem(number, f"schema: {violation}"))
        report.head = expected.decode() if report.lines else None
    return report
