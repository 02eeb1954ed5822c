"""The canonical form of a record is RFC 8785 (JCS), held to its reference implementation.

A record's digest is computed over :func:`pmos.store.digest.canonical`; if that
encoding followed whatever orjson prints, a new orjson release could change
every record's identity. So it is specified as JCS, and this property test
compares it with the ``rfc8785`` package over the values records can hold:
keys and strings over all of Unicode (no lone surrogates: they are not text),
integers within JCS's domain, finite floats, nested objects and arrays.
"""

from __future__ import annotations

import orjson
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from pmos.store.digest import canonical, is_canonical

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
SAFE_INT = st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
FLOAT = st.floats(allow_nan=False, allow_infinity=False)
SCALAR = st.none() | st.booleans() | SAFE_INT | FLOAT | TEXT
VALUE = st.recursive(
    SCALAR,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)
RECORD = st.dictionaries(TEXT, VALUE, max_size=6)


@settings(max_examples=600, deadline=None)
@given(RECORD)
def test_canonical_is_rfc8785(record):
    assert canonical(record) == rfc8785.dumps(record)


@settings(max_examples=300, deadline=None)
@given(RECORD)
def test_a_canonical_body_is_recognised_and_orjson_output_is_not_when_they_differ(record):
    body = rfc8785.dumps(record)
    assert is_canonical(body, orjson.loads(body))
    other = orjson.dumps(record, option=orjson.OPT_SORT_KEYS)
    if other != body:
        assert not is_canonical(other, orjson.loads(other))


def test_the_cases_where_orjson_differs_from_jcs():
    for record in (
        {"x": 1.0},
        {"x": -0.0},
        {"x": 1e20},
        {"x": 1e21},
        {"x": 1e-7},
        {"x": 123456789012345680000.0},
        {"x": [1e16, 1e15 + 0.5, 1e-5, 1e-6, 1.5e-7, 0.0001, 0.1 + 0.2, -123.0, 2.5e300]},
        {"\U0001f600": 1, "\uff01": 2},  # sorted by UTF-16 code units, not code points
    ):
        assert canonical(record) == rfc8785.dumps(record)
    assert canonical({"x": 1.0}) == b'{"x":1}'
