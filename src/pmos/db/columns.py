"""The typed columns of each record table, and the COPY rows that fill them.

Every record table holds a record's kit, its digest, its full JSON (jsonb)
and the fields that queries filter, join and order by, typed. pmos types
them here, from each record's JSON as it reads it, and ``pmos sync`` COPYs
the finished rows straight into the table: the server parses each record's
JSON once (into ``record``) and extracts nothing from it. (Until schema
version 4 the server typed the columns from the jsonb it had just parsed,
through a staging table: that re-parse and re-insert was most of a sync's
server time.)

The typing rule, the one place it is stated:

* a text column holds the field's value when it is a JSON string, else NULL
  (the schemas make every such field a string; a record that breaks its
  schema is stored whole in ``record`` with NULL here, never refused);
* ``recorded_at`` is the timestamp string as stored, parsed by the server
  as a ``timestamptz`` (sync sessions run in UTC, for a stamp without an
  offset), and kept verbatim in ``recorded_at_text``: the readers order by
  that text, exactly as file mode orders by it. A stamp is first checked by
  :func:`pmos.timestamps.stamp_problem`, the check ``pmos ledger verify``
  makes: one it refuses raises :class:`UnstorableStamp` (the sync is then
  refused with verify's report), never a server error halfway through;
* a double column holds a JSON number, a boolean column a JSON boolean;
  any other value is NULL;
* PostgreSQL's text and jsonb cannot hold the character U+0000: a record
  with one is stored with U+FFFD in its place, in ``record`` and in its
  columns alike (its digest still names the record as the kit has it).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from operator import attrgetter
from typing import Any, NamedTuple

import msgspec
import orjson

from pmos.timestamps import stamp_problem


class UnstorableStamp(ValueError):
    """A record's timestamp is outside the range every pmos record keeps to."""


class Column(NamedTuple):
    """A typed column: its name in the table, the record field it holds, its type."""

    name: str
    field: str
    type: str  # "text", "timestamptz", "double" or "boolean"


def _text(*fields: str) -> tuple[Column, ...]:
    return tuple(Column(field, field, "text") for field in fields)


#: Every record table starts with these.
_COMMON = (
    Column("record_id", "record_id", "text"),
    Column("recorded_at", "recorded_at", "timestamptz"),
    Column("recorded_at_text", "recorded_at", "text"),
)

#: Per ledger kind, its table's typed columns, in the order COPY sends them
#: (the tables themselves are created by the migrations).
COLUMNS: dict[str, tuple[Column, ...]] = {
    "runs": _COMMON + _text("run_id", "initiative_id", "builder_model"),
    "evals": _COMMON
    + _text("run_id", "initiative_id", "evaluator_model", "verdict")
    + (Column("score", "score", "double"),)
    + _text("form", "skipped_reason"),
    "acceptances": _COMMON
    + _text("run_id", "initiative_id", "label")
    + (Column("labelled_by", "by", "text"),)
    + _text("gate_verdict", "gate_record_id")
    + (Column("blind", "blind", "boolean"), Column("plan_weight", "plan_weight", "double")),
    "assessments": _COMMON
    + _text("task_id", "run_id", "trigger")
    + (Column("attempt", "attempt", "double"), Column("passed", "passed", "boolean")),
    "task-evals": _COMMON
    + _text("task_id", "run_id")
    + (Column("overall_score", "overallScore", "double"),)
    + _text("band"),
    "followups": _COMMON + _text("run_id", "task_id", "severity", "state", "title"),
    "tasks": _COMMON + _text("task_id", "event", "state", "title", "parent_run_id"),
    "policy": (*_COMMON, Column("approved_by", "by", "text")),
}


_SQL_TYPES = {
    "text": "text",
    "timestamptz": "timestamptz",
    "double": "double precision",
    "boolean": "boolean",
}


def column_of(kind: str, field: str) -> str | None:
    """The typed column holding ``field`` of ``kind``'s records as the readers want
    it (a timestamp as its stored text), or None when no column holds it."""
    for column in COLUMNS[kind]:
        if column.field == field and column.type in ("text", "double", "boolean"):
            return column.name
    return None


#: COPY's text format escapes these with a backslash.
_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
_NUL = b"\\u0000"
_NULL = "\\N"


def _as_text(value: Any) -> str | None:
    return value if type(value) is str else None


def _as_double(value: Any) -> str | None:
    kind = type(value)
    if kind is float or kind is int:
        try:
            return repr(float(value))
        except OverflowError:  # an integer beyond a double's range
            return None
    return None


def _as_boolean(value: Any) -> str | None:
    return repr(value) if type(value) is bool else None  # as the fast path writes it


#: How any JSON value becomes a column's text (None: NULL), by the column's type.
_CONVERT: dict[str, Callable[[Any], str | None]] = {
    "text": _as_text,
    "timestamptz": _as_text,
    "double": _as_double,
    "boolean": _as_boolean,
}
#: The Python type the fast decoder asks for, by the column's type.
_STRICT: dict[str, Any] = {"text": str, "timestamptz": str, "double": float, "boolean": bool}


class RowEncoder:
    """Turns a kind's stored records into rows of COPY's text format for its table.

    ``columns`` lists the table's columns in the order the rows give them:
    ``kit``, ``digest``, ``record``, then the typed ones. A record is decoded
    once, into just the fields the typed columns need (msgspec skips the
    rest without building it); its JSON text goes to ``record`` as stored.
    """

    def __init__(self, kind: str) -> None:
        typed = COLUMNS[kind]
        fields = {column.field: _STRICT[column.type] for column in typed}
        name = "Typed" + kind.title().replace("-", "")
        # The fast decoder types each field as its column does (a double takes an
        # integer too); a record it refuses is decoded again, every field as Any.
        self._strict = msgspec.json.Decoder(
            msgspec.defstruct(name, [(f, t | None, None) for f, t in fields.items()], gc=False)
        ).decode
        self._loose = msgspec.json.Decoder(
            msgspec.defstruct(name, [(f, Any, None) for f in fields], gc=False)
        ).decode
        # One value per column, in the columns' order (a field may fill two).
        self._values = attrgetter(*(column.field for column in typed))
        self._convert = [(i, _CONVERT.get(column.type, _as_text)) for i, column in enumerate(typed)]
        self.columns = ("kit", "digest", "record", *(column.name for column in typed))

    def row(self, kit: int, digest: str, body: bytes) -> bytes:
        """One record's row (a line of COPY text, newline included).

        This runs once per record of a million-record sync, so its common case
        keeps to a handful of C-level operations: one decode, one pass over the
        values (a float or boolean value's ``repr`` is valid PostgreSQL input).
        A record with a JSON escape somewhere (a signed label's signature holds
        newlines, a note may hold a quote) takes that case too, its backslashes
        doubled, unless a typed value holds a character COPY escapes.
        """
        escaped = b"\\" in body
        if escaped and _NUL in body:
            return self._escaped_row(kit, digest, body)
        try:
            values = self._values(self._strict(body))
        except msgspec.ValidationError:
            return self._escaped_row(kit, digest, body)
        _check_stamp(values[_STAMP])
        cells = "\t".join(
            [v if type(v) is str else _NULL if v is None else repr(v) for v in values]
        )
        if escaped:
            # Each NULL's "\N" is the only backslash, the separators the only tabs.
            if (
                cells.count("\\") != values.count(None)
                or cells.count("\t") != len(values) - 1
                or "\n" in cells
                or "\r" in cells
            ):
                return self._escaped_row(kit, digest, body)
            body = body.replace(b"\\", b"\\\\")
        return b"%d\t\\\\x%s\t%s\t%s\n" % (kit, digest.encode(), body, cells.encode())

    def _escaped_row(self, kit: int, digest: str, body: bytes) -> bytes:
        """The row of a record that holds a backslash (a JSON escape) or a field
        of an unexpected type: every value typed by the rule, every text escaped."""
        if _NUL in body:
            body = _without_nul(body)
        values = self._values(self._loose(body))
        _check_stamp(values[_STAMP])
        cells = "\t".join(
            [
                _NULL if text is None else text.translate(_ESCAPES)
                for text in (convert(values[i]) for i, convert in self._convert)
            ]
        )
        body = body.replace(b"\\", b"\\\\")
        return b"%d\t\\\\x%s\t%s\t%s\n" % (kit, digest.encode(), body, cells.encode())


#: Where a row's values hold ``recorded_at`` (the typed columns start with _COMMON).
_STAMP = 1


def _check_stamp(stamp: Any) -> None:
    if type(stamp) is str:
        problem = stamp_problem(stamp)
        if problem is not None:
            raise UnstorableStamp(problem)


@cache
def encoder(kind: str) -> RowEncoder:
    return RowEncoder(kind)


def _without_nul(body: bytes) -> bytes:
    """The record with every U+0000 replaced by U+FFFD (in keys and values alike)."""
    return orjson.dumps(_replaced(orjson.loads(body)), option=orjson.OPT_SORT_KEYS)


def storable_json(value: Any) -> str:
    """A JSON value as JSON text PostgreSQL's jsonb can hold: every U+0000 replaced by
    U+FFFD (the rule above, for what pmos computes from records, too). orjson
    writes that character only as the escape ``\\u0000``: JSON text without one
    holds none, and the value is not walked (a 1M + 1M kit's queue is 32 MB of
    JSON). Text that merely looks like the escape (an escaped backslash before
    ``u0000``) is walked and comes out unchanged."""
    dumped = orjson.dumps(value)
    if _NUL in dumped:
        dumped = orjson.dumps(_replaced(value))
    return dumped.decode()


def _replaced(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {_replaced(k): _replaced(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_replaced(v) for v in value]
    return value
