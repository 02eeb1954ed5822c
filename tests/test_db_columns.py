"""The typing rule of the record tables' columns (pmos.db.columns), on rows in memory."""

from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pmos.db.columns import COLUMNS, UnstorableStamp, encoder, storable_json

T = "2026-01-01T00:00:00.000000Z"


def cells(kind: str, record: dict) -> dict[str, str]:
    """The typed columns of one COPY row, by name (COPY's text format, unescaped)."""
    body = orjson.dumps(record, option=orjson.OPT_SORT_KEYS)
    row = encoder(kind).row(7, "ab" * 32, body)
    assert row.endswith(b"\n")
    values = row[:-1].decode().split("\t")
    kit, digest, stored = values[:3]
    assert (kit, digest) == ("7", "\\\\x" + "ab" * 32)
    assert orjson.loads(stored.replace("\\\\", "\\")) == record
    return dict(zip((c.name for c in COLUMNS[kind]), values[3:], strict=True))


def test_each_column_takes_only_a_value_of_its_json_type():
    good = cells(
        "assessments",
        {"record_id": "a1", "recorded_at": "2026-01-01T00:00:00.000000Z", "task_id": "t",
         "run_id": "r", "trigger": "initial", "attempt": 2, "passed": True},
    )  # fmt: skip
    assert good == {
        "record_id": "a1",
        "recorded_at": "2026-01-01T00:00:00.000000Z",
        "recorded_at_text": "2026-01-01T00:00:00.000000Z",
        "task_id": "t",
        "run_id": "r",
        "trigger": "initial",
        "attempt": "2.0",
        "passed": "True",
    }
    wrong = cells(
        "assessments",
        {"record_id": "a2", "recorded_at": "2026-01-01T00:00:00.000000Z", "task_id": 5,
         "run_id": None, "trigger": ["x"], "attempt": "2", "passed": 1},
    )  # fmt: skip
    assert [wrong[name] for name in ("task_id", "run_id", "trigger", "attempt", "passed")] == [
        "\\N"
    ] * 5


def test_a_missing_field_is_null_and_a_renamed_one_is_found():
    row = cells("acceptances", {"record_id": "x", "recorded_at": T, "by": "pm", "label": "pass"})
    assert row["labelled_by"] == "pm" and row["label"] == "pass"
    assert row["gate_record_id"] == row["run_id"] == "\\N"


def test_a_score_keeps_every_digit_a_double_can():
    row = cells("evals", {"record_id": "e", "recorded_at": T, "score": 0.1 + 0.2})
    assert float(row["score"]) == 0.1 + 0.2
    huge = b'{"record_id":"e","recorded_at":"%s","score":1' % T.encode() + b"0" * 400 + b"}"
    row = encoder("evals").row(1, "ab" * 32, huge).decode()
    assert row.split("\t")[3 + [c.name for c in COLUMNS["evals"]].index("score")] == "\\N"


@pytest.mark.parametrize(
    "stamp", ["0000-01-01T00:00:00Z", "1969-12-31T23:59:59Z", "2026-02-30T00:00:00Z", "t"]
)
def test_a_timestamp_outside_the_stored_range_is_refused_before_the_server_sees_it(stamp):
    body = orjson.dumps({"record_id": "e", "recorded_at": stamp})
    with pytest.raises(UnstorableStamp):
        encoder("evals").row(1, "ab" * 32, body)
    with pytest.raises(UnstorableStamp):  # a record with a backslash takes the other path
        encoder("evals").row(1, "ab" * 32, orjson.dumps({"recorded_at": stamp, "n": "\\"}))
    assert cells("evals", {"record_id": "e", "recorded_at": "1970-01-01T00:00:00Z"})


def _copy_fields(line: bytes) -> list[str | None]:
    """One line of COPY's text format read as the server reads it: fields split at
    tabs, ``\\N`` a NULL, backslash escapes undone."""
    escapes = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}
    assert b"\n" not in line and b"\r" not in line, "a raw line end would end the row"
    fields: list[str | None] = []
    for raw in line.decode().split("\t"):
        if raw == "\\N":
            fields.append(None)
            continue
        out, chars = [], iter(raw)
        for char in chars:
            out.append(escapes[next(chars)] if char == "\\" else char)
        fields.append("".join(out))
    return fields


def _typed(column_type: str, value: object) -> object:
    """The typing rule of the module docstring, as the test states it."""
    if column_type in ("text", "timestamptz"):
        return value if isinstance(value, str) else None
    if column_type == "double":
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        try:
            return float(value)
        except OverflowError:
            return None
    return value if isinstance(value, bool) else None


_TEXTS = st.text(alphabet=st.sampled_from(list('ab\\\t\n\r"\x00é\x1f/N')), max_size=6)
#: Integers as a record can hold them (its digest is computed by orjson: 64 bits).
_INTS = st.integers(-(2**63), 2**63 - 1)
_VALUES = st.one_of(
    st.none(), st.booleans(), _INTS, st.floats(allow_nan=False, allow_infinity=False),
    _TEXTS, st.lists(_INTS, max_size=2),
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@example("acceptances", {"label": "pass", "blind": True, "plan_weight": 2}, "sig\nnature")
@example("acceptances", {"note": 'a "quote"'}, "")
@example("evals", {"run_id": "a\rb"}, "\n")
@example("evals", {"run_id": "a\nb"}, "")
@example("evals", {"run_id": "a\tb"}, "")
@example("evals", {"verdict": "\\N"}, "")
@example("evals", {"form": "c\\d"}, "\n")
@example("evals", {"run_id": "a\x00b", "score": 0.5}, "\n")
@given(
    st.sampled_from(["evals", "acceptances", "assessments"]),
    st.dictionaries(st.sampled_from([c.field for c in COLUMNS["acceptances"]]
                                    + [c.field for c in COLUMNS["evals"]]
                                    + ["signature", "note", "passed", "attempt"]), _VALUES),
    _TEXTS,
)  # fmt: skip
def test_every_row_reads_back_as_the_typing_rule_says(kind, fields, signature):
    """Whatever a record holds (JSON escapes anywhere, in a typed field or only in
    one no column holds, such as a signature's newlines; NULs; values of every
    JSON type), its COPY row reads back, as the server reads COPY's text format,
    as its kit, digest, JSON text and each column typed by the rule. A NUL is
    stored as U+FFFD."""
    record = {**fields, "recorded_at": T, "signature": signature}
    text = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    line = encoder(kind).row(7, "ab" * 32, text.encode())
    assert line.endswith(b"\n")
    kit, digest, stored, *typed = _copy_fields(line[:-1])
    assert (kit, digest) == ("7", "\\x" + "ab" * 32)
    clean = json.loads(text.replace("\\u0000", "\ufffd"))
    assert json.loads(stored) == clean
    expected = [_typed(c.type, clean.get(c.field)) for c in COLUMNS[kind]]
    found = [
        None if text is None
        else float(text) if c.type == "double"
        else {"True": True, "False": False}[text] if c.type == "boolean"
        else text
        for c, text in zip(COLUMNS[kind], typed, strict=True)
    ]  # fmt: skip
    assert found == expected


def _stored_as(original, stored) -> bool:
    """Whether ``stored`` is ``original`` with every U+0000 (in a string or a key, at
    any depth) as U+FFFD and nothing else changed: compared character by character."""
    if isinstance(original, str):
        return (
            isinstance(stored, str)
            and len(stored) == len(original)
            and all(
                b == a if a != "\0" else b == "\ufffd"
                for a, b in zip(original, stored, strict=True)
            )
        )
    if isinstance(original, list):
        return (
            isinstance(stored, list)
            and len(stored) == len(original)
            and all(map(_stored_as, original, stored))
        )
    if isinstance(original, dict):
        keys = list(stored) if isinstance(stored, dict) else []
        return len(keys) == len(original) and all(
            _stored_as(k, key) and _stored_as(v, stored[key])
            for (k, v), key in zip(original.items(), keys, strict=True)
        )
    return type(stored) is type(original) and stored == original


_TEXT = st.text(alphabet=st.sampled_from(["a", "\0", "\\", "u", "0", "\u00e9", '"']))
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300)
@given(_JSON)
@example({"run\0": ["a\0b", "\\u0000 is text", {"k": "\0"}]})
@example({"note": "\\u0000 looks like the escape, holds no U+0000"})
def test_what_the_database_stores_of_a_report_holds_no_nul_and_nothing_else_changes(value):
    """storable_json: the JSON text of a report or queue, with every U+0000 (in keys
    and values, at any depth) replaced by U+FFFD and nothing else changed; a value
    with none is orjson's text as it is (no walk), text that only looks like the
    escape included."""
    stored = storable_json(value)
    assert "\\u0000" not in stored.replace("\\\\", "")
    assert _stored_as(value, json.loads(stored))
    if "\\u0000" not in orjson.dumps(value).decode().replace("\\\\", ""):  # no U+0000
        assert stored == orjson.dumps(value).decode()
