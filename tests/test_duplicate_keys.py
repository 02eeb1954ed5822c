"""A key written twice in one object of an input is refused, naming the key (issue 29).

Parsers keep a repeated key's last value without a word, so an input could say
one thing to whoever reads the file and another to pmos. Every input goes
through pmos.inputs (JSON) or pmos.yamlio (YAML, and JSON read as YAML); each
kind is checked here with a valid twin and a repeated key, in YAML and JSON.
"""

from __future__ import annotations

import json

import pytest

from conftest import good_verdict, ledger_bytes
from pmos.gate.exemplars import ExemplarLogError, parse_entry, parse_log, render_entry
from pmos.inputs import duplicate_json_key
from pmos.yamlio import load_yaml

REGISTER = ("run", "register", "--run-id", "run-1", "--initiative-id", "init-1")
REGISTER += ("--builder-model", "claude-sonnet-4")

CONTRACT_YAML = """\
done_criteria:
  - id: c1
    text: the API answers
    test_method: pytest tests/test_api.py
"""
#: The same contract with the criterion's text written twice (the second one
#: would win silently: "the API answers" on screen, "anything" in the ledger).
CONTRACT_YAML_TWICE = CONTRACT_YAML.replace(
    "    text: the API answers\n", "    text: the API answers\n    text: anything\n"
)
CONTRACT_JSON = '{"done_criteria": [{"id": "c1", "text": "the API answers", "test_method": "x"}]}'
CONTRACT_JSON_TWICE = CONTRACT_JSON.replace('"id": "c1", ', '"id": "c1", "id": "c9", ')

SPEC_YAML = "expectations:\n  - type: test\n    command: touch ran.txt\n"
SPEC_YAML_TWICE = SPEC_YAML + "expectations: []\n"
SPEC_JSON = '{"expectations": [{"type": "test", "command": "touch ran.txt"}]}'
SPEC_JSON_TWICE = SPEC_JSON.replace('"type": "test", ', '"type": "test", "type": "script", ')


def _verdict_text(twice: str | None) -> str:
    text = json.dumps(good_verdict())
    if twice == "top":
        return text.replace('"score": 0.9, ', '"score": 0.9, "score": 0.1, ', 1)
    if twice == "nested":
        return text.replace('"verdict": "pass"', '"verdict": "fail", "verdict": "pass"', 1)
    return text


@pytest.mark.parametrize(("twice", "key"), [(None, None), ("top", "score"), ("nested", "verdict")])
def test_a_verdict_repeating_a_key_is_refused(cli, kit_root, tmp_path, twice, key):
    assert cli(*REGISTER).exit_code == 0
    path = tmp_path / "v.json"
    path.write_text(_verdict_text(twice))
    before = ledger_bytes(kit_root)
    result = cli("eval", "record", "--file", str(path))
    if key is None:
        assert result.exit_code == 0, result.output
        return
    assert result.exit_code == 2, result.output
    assert f"the key {key!r} is repeated in one object" in result.stderr
    assert ledger_bytes(kit_root) == before


@pytest.mark.parametrize(
    ("text", "key"),
    [
        (CONTRACT_YAML, None),
        (CONTRACT_YAML_TWICE, "text"),
        (CONTRACT_JSON, None),
        (CONTRACT_JSON_TWICE, "id"),
    ],
    ids=["yaml", "yaml-twice", "json", "json-twice"],
)
def test_a_contract_repeating_a_key_is_refused(cli, kit_root, tmp_path, text, key):
    path = tmp_path / "contract.yaml"
    path.write_text(text)
    before = ledger_bytes(kit_root)
    result = cli(*REGISTER, "--contract", str(path))
    if key is None:
        assert result.exit_code == 0, result.output
        return
    assert result.exit_code == 2, result.output
    assert f"{key!r} repeated" in result.stderr or f"{key!r} is repeated" in result.stderr
    assert ledger_bytes(kit_root) == before


@pytest.mark.parametrize(
    ("text", "key"),
    [
        (SPEC_YAML, None),
        (SPEC_YAML_TWICE, "expectations"),
        (SPEC_JSON, None),
        (SPEC_JSON_TWICE, "type"),
    ],
    ids=["yaml", "yaml-twice", "json", "json-twice"],
)
def test_a_spec_repeating_a_key_is_refused_and_nothing_runs(cli, tmp_path, kit_root, text, key):
    work = tmp_path / "work"
    work.mkdir()
    spec = tmp_path / "spec.yaml"
    spec.write_text(text)
    before = ledger_bytes(kit_root)
    result = cli("assess", str(spec), "--cwd", str(work))
    if key is None:
        assert result.exit_code == 0, result.output
        assert (work / "ran.txt").exists()
        return
    assert result.exit_code == 2, result.output
    assert "is not valid YAML or JSON" in result.stderr and repr(key) in result.stderr
    assert not (work / "ran.txt").exists()
    assert ledger_bytes(kit_root) == before


@pytest.mark.parametrize("twice", [False, True])
def test_a_config_repeating_a_key_is_refused(cli, kit_root, twice):
    config = kit_root / "pmos.yaml"
    text = config.read_text()
    assert "\nmin_pairs: 20\n" in text
    if twice:
        config.write_text(text + "min_pairs: 5\n")
    result = cli("metrics", "--json")
    if not twice:
        assert result.exit_code == 0, result.output
        return
    assert result.exit_code == 2, result.output
    assert "found the key 'min_pairs' repeated" in result.stderr


@pytest.mark.parametrize(
    ("text", "repeated"),
    [
        ('{"a": 1, "b": {"a": 2}}', None),
        ('[{"k": 1}, {"k": 2}]', None),
        ('{"a": "x\\"y", "b": 1}', None),
        ('{"a": 1, "a": 1}', "a"),
        ('{"a" : 1, "a": 2}', "a"),
        ('{"\\u0061": 1, "a": 2}', "a"),
        ('{"a\\\\": 1, "a\\\\": 2}', "a\\"),
    ],
)
def test_repeated_json_keys_are_found_however_they_are_written(text, repeated):
    """Spaces before the colon and escapes in the key still name one key."""
    found = duplicate_json_key(text)
    assert found == (
        None if repeated is None else f"the key {repeated!r} is repeated in one object"
    )


@pytest.mark.parametrize(
    "text",
    ["a: 1\nb: {a: 2}\n", "base: {x: 1}\nmerged:\n  <<: {x: 1, y: 2}\n  x: 3\n"],
)
def test_yaml_without_a_repeated_key_loads(text):
    """A key of an inner mapping may be that of an outer one; a merge may be overridden."""
    assert isinstance(load_yaml(text), dict)


@pytest.mark.parametrize(
    ("text", "key"),
    [("a: 1\na: 2\n", "'a'"), ("a: {b: 1, b: 2}\n", "'b'"), ("1: x\n0x1: y\n", "1")],
)
def test_yaml_with_a_repeated_key_is_refused(text, key):
    import yaml

    with pytest.raises(yaml.YAMLError, match=f"found the key {key} repeated"):
        load_yaml(text)


@pytest.mark.parametrize("twice", [False, True])
def test_an_exemplar_log_entry_repeating_a_key_is_refused(twice):
    """The exemplar log's entries use a loader of their own; it refuses them too."""
    data = {
        "case_id": "case-1",
        "run_id": "run-9",
        "gate_verdict": "PASS",
        "pm_label": "fail",
        "override": True,
        "lesson": "The gate trusted a test that asserted nothing.",
        "recorded_at": "2026-11-01T10:00:00Z",
    }
    text = render_entry(data)
    if not twice:
        assert parse_entry(text) == data
        return
    text = text.replace("run_id: run-9\n", "run_id: run-9\nrun_id: run-1\n")
    with pytest.raises(ExemplarLogError, match="found the key 'run_id' repeated"):
        parse_entry(text)
    items = text.splitlines()
    listed = "entries:\n  - " + "\n    ".join(items) + "\n"  # the same entry in the log
    with pytest.raises(ExemplarLogError, match="found the key 'run_id' repeated"):
        parse_log(listed)
