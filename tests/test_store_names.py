"""A loose record file's name: its record's time as a stamp, then its digest."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pmos.store.layout import loose_name, stamp_of


def _by_regex(text: str) -> str:
    """The stamp as the regular expression alone makes it: all but 0-9, T, Z dropped."""
    return re.sub(r"[^0-9TZ]", "", text)[:32] or "0"


@given(st.text() | st.text(alphabet="0123456789TZ-:.+ tz"))
def test_a_stamp_keeps_what_the_regular_expression_keeps(text):
    assert stamp_of(text) == _by_regex(text)


@pytest.mark.parametrize(
    "at",
    [
        "2026-12-01T10:15:00.123456Z",
        "2026-12-01T10:15:00+01:00",
        "2026-12-01 10:15",
        "",
        "-:.",
        "9" * 40,
        "２０２６-01-01",
        "T\u0660Z",
    ],
)
def test_names_of_known_times(at):
    assert stamp_of(at) == _by_regex(at)
    assert loose_name({"recorded_at": at}, "d" * 64) == f"{_by_regex(at)}-{'d' * 64}.json"
