"""The typing rule of the record tables' columns (pmos.db.columns), on rows in memory."""

from __future__ import annotations

import orjson
import pytest

from pmos.db.columns import COLUMNS, UnstorableStamp, encoder

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
