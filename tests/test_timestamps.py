"""One formatter for every timestamp pmos writes or shows (issue 29, item 3)."""

from __future__ import annotations

import ast
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

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


@st.composite
def _stamps(draw):
    """Stamps of the writers' length ending in Z, most in its layout (any digits:
    impossible dates, years 0000-9999), some with another character in a place."""
    parts = [
        draw(st.text(alphabet="0123456789", min_size=n, max_size=n)) for n in (4, 2, 2, 2, 2, 2, 6)
    ]
    stamp = "{}-{}-{}T{}:{}:{}.{}Z".format(*parts)
    if draw(st.booleans()):
        at = draw(st.integers(0, len(stamp) - 2))
        stamp = (
            stamp[:at]
            + draw(st.sampled_from(["t", ",", " ", "+", "W", "9", "/"]))
            + stamp[at + 1 :]
        )
    return stamp


@settings(max_examples=500)
@given(_stamps() | st.text(max_size=30))
@example("1970-01-01T00:00:00.000000Z")
@example("1969-12-31T23:59:59.999999Z")
@example("0000-01-01T00:00:00.000000Z")
@example("9999-12-31T23:59:59.999999Z")
@example("2026-02-30T00:00:00.000000Z")
@example("2026-12-03T10:00:00,000000Z")
def test_a_stamp_in_the_writers_layout_is_judged_as_any_other(stamp):
    """stamp_problem reads a stamp of the writers' length that ends in Z once; what it
    says is what the full reading says (the same problem, word for word)."""
    from pmos.timestamps import _read_problem, stamp_problem

    assert stamp_problem(stamp) == _read_problem(stamp)
