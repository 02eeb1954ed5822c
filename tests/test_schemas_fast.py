"""The fast schema check (jsonschema-rs) and the explaining one (jsonschema) agree.

``pmos.schemas.validate`` asks jsonschema-rs first and trusts its "valid"; only
a record it refuses goes to jsonschema, which words the violations. So for
every record the two must give the same verdict: a record the fast one passes
but the Python one refuses would slip into a ledger. Checked here on records
the writers store and on each of them broken every way a hand could break it:
a field dropped, a field of the wrong type, a malformed time or identifier,
an unknown field.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import good_verdict
from pmos import schemas
from pmos.gate import writers

WRONG = [None, 7, 0.5, True, "x", "", [], {}, [1], {"a": 1}, -1, 2**70]


def _agree(name: str, record: Any) -> bool:
    fast = schemas._fast_validator(name).is_valid(record)
    slow = not list(schemas._validator(name).iter_errors(record))
    assert fast == slow, (name, record)
    return fast


def _mutations(record: dict[str, Any]):
    for key in list(record):
        dropped = {k: v for k, v in record.items() if k != key}
        yield dropped
        for value in WRONG:
            yield {**record, key: value}
    for key in ("recorded_at", "record_id", "run_id"):
        for text in (
            "2026-02-30T00:00:00Z",
            "2026-01-01 00:00:00",
            "2026-01-01T25:00:00Z",
            "id with space",
            "\u202eevil",
            "a" * 300,
        ):
            yield {**record, key: text}
    yield {**record, "unknown_field": 1}


@pytest.fixture
def stored(kit) -> dict[str, list[dict[str, Any]]]:
    contract = {
        "done_criteria": [
            {"id": "c1", "text": "works", "test_method": "pytest"},
            {"id": "c2", "text": "documented", "test_method": "read"},
        ]
    }
    run = writers.register_run(
        kit, run_id="run-1", initiative_id="init-1", builder_model="m", contract=contract
    ).record
    plain = writers.register_run(kit, run_id="run-2", initiative_id="i", builder_model="m")
    full = writers.record_verdict(kit, good_verdict()).record
    skip = writers.record_short_verdict(
        kit, run_id="run-3", initiative_id="i", verdict="SKIPPED", skipped_reason="no time"
    ).record
    label = writers.record_acceptance(kit, run_id="run-1", label="pass", by="pm").record
    return {"run": [run, plain.record], "verdict": [full, skip], "acceptance": [label]}


def test_the_two_validators_agree_on_stored_and_broken_records(stored):
    checked = 0
    for name, found in stored.items():
        for record in found:
            assert _agree(name, record)
            for broken in _mutations(record):
                _agree(name, broken)
                checked += 1
            for part in ("dimensions", "axes", "criteria", "contract"):
                if part in record:
                    nested = copy.deepcopy(record)
                    inner = nested[part]
                    items = inner.values() if isinstance(inner, dict) else inner
                    if part == "contract":
                        items = inner["done_criteria"]
                    for item in items:
                        for key in list(item):
                            for value in (None, 3, "", []):
                                old = item[key]
                                item[key] = value
                                _agree(name, nested)
                                item[key] = old
                                checked += 1
    assert checked > 500


@settings(max_examples=300, deadline=None)
@given(stamp=st.text(alphabet="0123456789-:TZtz.+ ", min_size=0, max_size=32))
def test_the_two_validators_agree_on_timestamps(stamp):
    record = {
        "record_id": "run-20260101T000000000000Z-0a1b2c3d",
        "recorded_at": stamp,
        "schema_version": 1,
        "run_id": "run-1",
        "initiative_id": "i",
        "builder_model": "m",
    }
    _agree("run", record)
