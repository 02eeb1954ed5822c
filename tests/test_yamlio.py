"""Documents written as JSON read exactly as the YAML loader reads them (pmos.yamlio)."""

from __future__ import annotations

import json

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from pmos.yamlio import _NOT_JSON, _as_json, load_yaml

_YAML_ONLY = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

#: Keys short and long: YAML refuses a key of more than 1,024 characters.
keys = st.text() | st.text(min_size=490, max_size=1100)
#: JSON values of every kind, floats and any text included.
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=12,
)


def yaml_reads(text: str):
    """What the YAML loader alone makes of ``text``: a value, or that it refuses it."""
    try:
        return yaml.load(text, Loader=_YAML_ONLY)
    except (yaml.YAMLError, ValueError, RecursionError):
        return "refused"


def pmos_reads(text: str):
    """What :func:`load_yaml` makes of ``text``: a value, or that it refuses it."""
    try:
        return load_yaml(text)
    except yaml.YAMLError:
        return "refused"


@given(
    st.one_of(st.lists(json_values), st.dictionaries(keys, json_values)),
    st.booleans(),
    st.sampled_from([None, 2]),
    st.sampled_from([(", ", ": "), (",", ":")]),
)
def test_json_text_reads_as_yaml_reads_it(value, ascii_only, indent, separators):
    text = json.dumps(value, ensure_ascii=ascii_only, indent=indent, separators=separators)
    assert pmos_reads(text) == yaml_reads(text)


@pytest.mark.parametrize(
    ("text", "read_as_json"),
    [
        ('{"done_criteria": [{"id": "c1", "text": "t", "n": 3, "ok": true, "x": null}]}', True),
        ("[1, 2, 3]", True),
        ('{"score": 1e5}', False),  # YAML 1.1 reads 1e5 as a string
        ('{"score": 0.5}', False),
        ('{"emoji": "\\ud83d\\ude00"}', False),  # YAML keeps the two halves apart
        ('{"bell": "\x7f"}', False),  # JSON allows it in a string; YAML refuses it
        ('{"nel": "a\x85b"}', False),  # a line break to YAML, folded to a space
        ('{"' + "k" * 1100 + '": 1}', False),  # YAML refuses a key this long
        ('{"' + "k" * 500 + '": 1}', True),
        ('{"a": 1,}', False),  # not strict JSON
        ('{"big": 123456789012345678901234567890}', False),  # past 64 bits
        ("done_criteria: []", False),
    ],
)
def test_only_json_that_yaml_reads_the_same_takes_the_fast_path(text, read_as_json):
    assert (_as_json(text) is not _NOT_JSON) == read_as_json
    assert pmos_reads(text) == yaml_reads(text)


def test_a_large_json_contract_reads_as_yaml_reads_it():
    contract = {
        "done_criteria": [{"id": f"c{i}", "text": "t", "test_method": "m"} for i in range(500)]
    }
    text = json.dumps(contract)
    assert _as_json(text) is not _NOT_JSON
    assert load_yaml(text) == yaml_reads(text) == contract
