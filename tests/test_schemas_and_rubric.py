"""The bundled schemas, format checking, and rubric loading rules."""

from __future__ import annotations

import json

import msgspec
import orjson
import pytest
from jsonschema import Draft202012Validator

from pmos import schemas
from pmos.gate.rubric import RubricError, load_rubric

RUBRIC_HEAD = """---
threshold: 0.7
dimensions:
{dims}
---
# body
"""


def rubric_text(*dims: tuple[str, float, str]) -> str:
    lines = "\n".join(
        f"  - {{name: {n}, weight: {w}, axis: {a}, description: d}}" for n, w, a in dims
    )
    return RUBRIC_HEAD.format(dims=lines)


@pytest.mark.parametrize("name", schemas.SCHEMA_NAMES)
def test_every_schema_is_valid_2020_12_with_an_id(name):
    schema = schemas.load_schema(name)
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"].endswith(f"/{name}.schema.json")


def test_date_time_format_is_really_checked():
    record = {
        "record_id": "x",
        "recorded_at": "2026-11-30T08:00:00Z",
        "schema_version": 1,
        "run_id": "r",
        "label": "pass",
        "by": "pm",
    }
    assert schemas.validate("acceptance", record) == []
    bad = {**record, "recorded_at": "30/11/2026 08:00"}
    problems = schemas.validate("acceptance", bad)
    assert [(p.rule, p.field) for p in problems] == [("schema:format", "recorded_at")]


def test_non_finite_numbers_are_refused():
    problems = schemas.validate("verdict", {"score": float("nan")})
    assert any(p.rule == "schema:finite" and p.field == "score" for p in problems)


@pytest.mark.parametrize("text", [b"NaN", b"Infinity", b"-Infinity", b"1e400", b"-1e999"])
def test_json_decoders_refuse_what_is_not_finite(text):
    """Why validate(parsed=True) skips the search for NaN and infinities: the
    decoders every reader uses refuse them (a new version that did not would
    fail here)."""
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(b'{"score":' + text + b"}")
    with pytest.raises(msgspec.DecodeError):
        msgspec.json.decode(b'{"score":' + text + b"}")


def test_a_parsed_record_is_validated_as_any_other():
    texts = [
        b'{"score":0.5,"nested":[{"x":1e308}],"big":1000000000000000000000000000000}',
        b'{"score":"high"}',
        b'{"record_id":3}',
    ]
    decoders = (orjson.loads, msgspec.json.decode)
    for decoded in (decode(text) for text in texts for decode in decoders):
        assert schemas.validate("verdict", decoded, parsed=True) == schemas.validate(
            "verdict", decoded
        )


def test_schema_show_prints_the_bundled_schema(cli):
    result = cli("schema", "show", "verdict")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == schemas.load_schema("verdict")
    assert cli("schema", "show", "nonsense").exit_code == 2


def test_default_rubric_loads(kit_root, cli):
    rubric = load_rubric(kit_root, "planning/evals/agent-run-eval-rubric.md")
    assert rubric.threshold == 0.7
    assert {d.axis for d in rubric.dimensions} == {"spec", "standards"}
    assert abs(sum(d.weight for d in rubric.dimensions) - 1) < 1e-9
    shown = json.loads(cli("rubric", "show", "--json").stdout)
    assert shown["path"] == "planning/evals/agent-run-eval-rubric.md"
    assert len(shown["dimensions"]) == 5
    human = cli("rubric", "show").stdout
    assert "threshold: 0.7" in human and "contract_fulfilment" in human


@pytest.mark.parametrize(
    ("dims", "rule"),
    [
        ((("a", 0.5, "spec"), ("b", 0.4, "standards")), "rubric-weights"),
        ((("a", 0.5, "spec"), ("b", 0.5, "spec")), "rubric-axes"),
        ((("a", 0.5, "spec"), ("a", 0.5, "standards")), "rubric-names"),
        ((("a", 0.5, "spec"), ("b", 0.5, "sideways")), "schema:enum"),
        ((("A b", 0.5, "spec"), ("b", 0.5, "standards")), "schema:pattern"),
    ],
)
def test_rubric_rules(kit_root, dims, rule):
    path = kit_root / "planning/evals/r.md"
    path.write_text(rubric_text(("a", 0.5, "spec"), ("b", 0.5, "standards")))
    load_rubric(kit_root, "planning/evals/r.md")  # the valid case
    path.write_text(rubric_text(*dims))
    with pytest.raises(RubricError) as info:
        load_rubric(kit_root, "planning/evals/r.md")
    assert rule in {v.rule for v in info.value.violations}


@pytest.mark.parametrize(
    "text",
    ["no frontmatter\n", "---\nthreshold: 0.7\n", "---\n[unclosed\n---\n"],
)
def test_rubric_without_valid_frontmatter(kit_root, text, cli):
    (kit_root / "planning/evals/r.md").write_text(text)
    with pytest.raises(RubricError):
        load_rubric(kit_root, "planning/evals/r.md")
    assert cli("rubric", "show", "planning/evals/r.md").exit_code == 2


def test_rubric_must_be_inside_the_kit(kit_root, tmp_path, cli):
    outside = tmp_path / "outside.md"
    outside.write_text(rubric_text(("a", 0.5, "spec"), ("b", 0.5, "standards")))
    for path in (str(outside), "../outside.md", "planning/evals/missing.md"):
        result = cli("rubric", "show", path)
        assert result.exit_code == 2, path
    (kit_root / "planning/evals/link.md").symlink_to(outside)
    assert cli("rubric", "show", "planning/evals/link.md").exit_code == 2


def test_empty_rubric_path_is_refused(cli):
    result = cli("rubric", "show", "")
    assert result.exit_code == 2 and "empty path" in result.stderr
