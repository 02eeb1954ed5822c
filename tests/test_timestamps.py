"""One formatter for every timestamp pmos writes or shows (issue 29, item 3)."""

from __future__ import annotations

import ast
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path

import pytest

from pmos.timestamps import compact, midnight, now_rfc3339, parse_instant, rfc3339, seconds_rfc3339

SRC = Path(__file__).resolve().parents[1] / "src" / "pmos"
PARIS = timezone(timedelta(hours=1))


@pytest.mark.parametrize(
    ("moment", "micro", "second"),
    [
        (
            datetime(2026, 11, 30, 8, 15, 0, 123456, UTC),
            "2026-11-30T08:15:00.123456Z",
            "2026-11-30T08:15:00Z",
        ),
        (
            datetime(2026, 11, 30, 9, 15, 0, 5, PARIS),
            "2026-11-30T08:15:00.000005Z",
            "2026-11-30T08:15:00Z",
        ),
        # A naive datetime is UTC, as readers take a stored one: never local time.
        (datetime(2026, 11, 30, 8, 15), "2026-11-30T08:15:00.000000Z", "2026-11-30T08:15:00Z"),
    ],
    ids=["utc", "offset", "naive"],
)
def test_an_instant_is_written_in_utc_with_z(moment, micro, second):
    assert rfc3339(moment) == micro
    assert seconds_rfc3339(moment) == second
    assert parse_instant(micro) == moment.replace(tzinfo=moment.tzinfo or UTC)


def test_compact_forms_and_midnight_are_utc():
    moment = datetime(2026, 11, 30, 9, 15, 0, 123456, PARIS)
    assert compact(moment) == "20261130T081500Z"
    assert compact(moment, microseconds=True) == "20261130T081500123456Z"
    assert midnight(date(2026, 11, 30)) == "2026-11-30T00:00:00Z"
    assert now_rfc3339().endswith("Z") and len(now_rfc3339()) == len("2026-11-30T08:15:00.123456Z")


def test_no_other_module_formats_a_timestamp():
    """strftime and isoformat are called in pmos.timestamps alone (parsing is free)."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if path.name == "timestamps.py" and path.parent == SRC:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in ("strftime", "isoformat"):
                found.append(f"{path.relative_to(SRC)}:{node.lineno} .{node.attr}")
    assert found == []
