"""Malformed specs: strict by default (nothing runs), lenient on request (dropped, warned)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assess_support import write_spec
from conftest import ledger_bytes
from pmos.assess import spec as assess_spec

#: A valid entry that leaves a trace, so "nothing ran" can be checked.
MARKER = {"type": "test", "command": "touch ran.txt"}

MALFORMED = {
    "path-not-paths": (
        {"type": "file_exists", "path": "dist/index.js"},
        "uses 'path'; fix: use 'paths'",
    ),
    "prompt-not-criteria": (
        {"type": "llm_review", "prompt": "Is it good?"},
        "uses 'prompt'; fix: put the review question in 'criteria'",
    ),
    "expect-exit-code": (
        {"type": "script", "command": "exit 1", "expectExitCode": 1},
        "has expectExitCode; exit code 0 is the only success",
    ),
    "unknown-type": (
        {"type": "lint", "command": "ruff check"},
        "type is 'lint'; fix: use one of test, script, file_exists, llm_review",
    ),
    "missing-type": ({"command": "true"}, "type is missing"),
    "empty-paths": (
        {"type": "file_exists", "paths": []},
        "'paths' must be a non-empty list",
    ),
    "dimension-without-name": (
        {
            "type": "llm_review",
            "criteria": "c",
            "dimensions": [{"description": "d", "weight": 0.5}],
        },
        "dimensions[0] needs a 'name'",
    ),
    "dimension-without-description": (
        {"type": "llm_review", "criteria": "c", "dimensions": [{"name": "api", "weight": 0.5}]},
        "dimensions[0] needs a 'description'",
    ),
    "dimension-weight-above-1": (
        {
            "type": "llm_review",
            "criteria": "c",
            "dimensions": [{"name": "api", "description": "d", "weight": 1.5}],
        },
        "weight 1.5; fix: give a number from 0 to 1",
    ),
    "dimension-weight-negative": (
        {
            "type": "llm_review",
            "criteria": "c",
            "dimensions": [{"name": "api", "description": "d", "weight": -0.1}],
        },
        "weight -0.1; fix: give a number from 0 to 1",
    ),
    "dimension-without-weight": (
        {
            "type": "llm_review",
            "criteria": "c",
            "dimensions": [{"name": "api", "description": "d"}],
        },
        "weight None; fix: give a number from 0 to 1",
    ),
    "test-without-command": ({"type": "test"}, "needs 'command'"),
    "review-without-criteria": (
        {"type": "llm_review", "threshold": 3},
        "needs 'criteria' (what the reviewers judge) and/or 'dimensions'",
    ),
    "review-threshold-out-of-range": (
        {"type": "llm_review", "criteria": "c", "threshold": 0},
        "threshold 0; fix: give a number from 1 to 5",
    ),
    "unknown-field": (
        {"type": "test", "command": "true", "timeout": 5},
        "unknown field(s) timeout; fix: remove them",
    ),
    "not-an-object": ("pytest -q", "must be an object"),
    "review-threshold-huge-integer": (
        {"type": "llm_review", "criteria": "c", "threshold": 10**400},
        "threshold 1000000000000000000000000000000000000000...; fix",
    ),
    "dimension-weight-huge-integer": (
        {
            "type": "llm_review",
            "criteria": "c",
            "dimensions": [{"name": "api", "description": "d", "weight": 10**400}],
        },
        "weight 1000000000000000000000000000000000000000...; fix",
    ),
    # Control characters: NUL cannot reach a process at all, ESC hides in a terminal.
    "nul-in-command": (
        {"type": "test", "command": "echo a\0b"},
        "'command' contains the control character '\\x00' at position 6; fix: remove it",
    ),
    "escape-in-script": (
        {"type": "script", "command": "echo ok\n\x1b[2Jtrue"},
        "'command' contains the control character '\\x1b' at position 8",
    ),
    "nul-in-path": (
        {"type": "file_exists", "paths": ["ok.txt", "a\0b"]},
        "paths[1] 'a\\x00b' contains the control character '\\x00' at position 1",
    ),
    "nul-in-review-file": (
        {"type": "llm_review", "criteria": "c", "files": ["a\0b"]},
        "files[0] 'a\\x00b' contains the control character '\\x00' at position 1",
    ),
    # Paths name something inside --cwd.
    "absolute-path": (
        {"type": "file_exists", "paths": ["/etc/hostname"]},
        "paths[0] '/etc/hostname' is absolute; fix: give it relative to --cwd",
    ),
    "path-climbing-out": (
        {"type": "file_exists", "paths": ["sub/../../elsewhere.txt"]},
        "paths[0] 'sub/../../elsewhere.txt' climbs out of --cwd with '..'",
    ),
    "absolute-review-file": (
        {"type": "llm_review", "criteria": "c", "files": ["/etc/hostname"]},
        "files[0] '/etc/hostname' is absolute; fix: give it relative to --cwd",
    ),
    "review-file-climbing-out": (
        {"type": "llm_review", "criteria": "c", "files": ["../secret.txt"]},
        "files[0] '../secret.txt' climbs out of --cwd with '..'",
    ),
}


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_strict_reports_index_and_fix_and_runs_nothing(cli, tmp_path, work, kit_root, case):
    entry, message = MALFORMED[case]
    spec = write_spec(tmp_path / "spec.yaml", {"expectations": [MARKER, entry]})
    before = ledger_bytes(kit_root)
    result = cli("assess", str(spec), "--cwd", str(work))
    assert result.exit_code == 2
    assert "expectations[1]" in result.stderr
    assert message in result.stderr
    assert "nothing was run" in result.stderr and "--lenient" in result.stderr
    assert not (work / "ran.txt").exists()
    assert ledger_bytes(kit_root) == before


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_lenient_drops_the_entry_with_a_warning_and_runs_the_rest(cli, tmp_path, work, case):
    entry, message = MALFORMED[case]
    spec = write_spec(tmp_path / "spec.yaml", {"expectations": [MARKER, entry]})
    result = cli("assess", str(spec), "--cwd", str(work), "--lenient", "--json")
    assert result.exit_code == 0, result.output
    assert (work / "ran.txt").exists()
    out = json.loads(result.stdout)
    assert [c["index"] for c in out["checks"]] == [0]
    assert any("dropped expectations[1]" in w and message in w for w in out["warnings"])
    assert "dropped expectations[1]" in result.stderr


def test_the_valid_counterparts_are_accepted(tmp_path):
    spec = assess_spec.parse_spec(
        {
            "expectations": [
                {"type": "file_exists", "paths": ["dist/index.js"]},
                {"type": "llm_review", "criteria": "Is it good?", "confidence": "firm"},
                {"type": "script", "command": "exit 0"},
                {"type": "script", "command": "printf 'a\\tb'\n\ttrue"},
                {"type": "file_exists", "paths": ["./a", "sub/../b", "c/.."]},
                {"type": "llm_review", "criteria": "c", "files": ["src/x.py", "s/../y"]},
                {
                    "type": "llm_review",
                    "threshold": 3.5,
                    "dimensions": [
                        {"name": "api", "description": "d", "weight": 0.6},
                        {"name": "errors", "description": "e", "weight": 0, "rubric": {1: "x"}},
                    ],
                },
            ],
            "metrics": [{"name": "m", "command": "echo 1", "threshold": 1}],
            "maxFixAttempts": 0,
            "maxAssessmentRetries": 3,
            "title": "A task's other fields are left alone",
            "assignTo": "agent-1",
        },
        source="s",
    )
    assert [e.type for e in spec.expectations] == [
        "file_exists",
        "llm_review",
        "script",
        "script",
        "file_exists",
        "llm_review",
        "llm_review",
    ]
    assert spec.expectations[1].dimensions == assess_spec.DEFAULT_DIMENSIONS
    assert spec.expectations[1].threshold == 3.0
    assert spec.expectations[3].command == "printf 'a\\tb'\n\ttrue"
    assert spec.expectations[4].paths == ("./a", "sub/../b", "c/..")
    assert spec.expectations[5].files == ("src/x.py", "s/../y")
    assert [d.name for d in spec.expectations[6].dimensions] == ["api", "errors"]
    assert spec.expectations[6].dimensions[1].rubric == ((1, "x"),)
    assert (spec.max_fix_attempts, spec.max_assessment_retries) == (0, 3)
    assert spec.warnings == []


def test_default_dimensions_and_weights():
    dims = {d.name: d.weight for d in assess_spec.DEFAULT_DIMENSIONS}
    assert dims == {
        "correctness": 0.35,
        "completeness": 0.30,
        "code_quality": 0.20,
        "edge_cases": 0.15,
    }
    for dim in assess_spec.DEFAULT_DIMENSIONS:
        assert [score for score, _ in dim.rubric] == [1, 2, 3, 4, 5]


@pytest.mark.parametrize(
    ("metric", "message"),
    [
        ({"command": "echo 1", "threshold": 1}, "needs a 'name'"),
        ({"name": "m", "threshold": 1}, "needs 'command'"),
        ({"name": "m", "command": "echo 1", "threshold": "high"}, "threshold 'high'"),
        ({"name": "m", "command": "echo 1"}, "threshold None"),
        ({"name": "m", "command": "echo 1", "threshold": 10**400}, "threshold 100000"),
        (
            {"name": "m", "command": "echo \0 1", "threshold": 1},
            "metrics[1] (m): 'command' contains the control character '\\x00' at position 5",
        ),
    ],
)
def test_malformed_metric_strict_and_lenient(cli, tmp_path, work, metric, message):
    good = {"name": "ok", "command": "echo 1", "threshold": 1}
    spec = write_spec(tmp_path / "spec.yaml", {"metrics": [good, metric]})
    strict = cli("assess", str(spec), "--cwd", str(work))
    assert strict.exit_code == 2 and "metrics[1]" in strict.stderr and message in strict.stderr
    lenient = cli("assess", str(spec), "--cwd", str(work), "--lenient", "--json")
    assert lenient.exit_code == 0, lenient.output
    assert [m["name"] for m in json.loads(lenient.stdout)["metrics"]] == ["ok"]


def test_repeated_metric_names_are_refused(cli, tmp_path, work):
    metric = {"name": "m", "command": "echo 1", "threshold": 1}
    spec = write_spec(tmp_path / "spec.yaml", {"metrics": [metric, metric]})
    result = cli("assess", str(spec), "--cwd", str(work))
    assert result.exit_code == 2 and "metrics[1] (m): name 'm' repeats" in result.stderr


def test_bad_retry_settings(cli, tmp_path, work):
    data = {"expectations": [MARKER], "maxFixAttempts": -1, "maxAssessmentRetries": "2"}
    spec = write_spec(tmp_path / "spec.yaml", data)
    strict = cli("assess", str(spec), "--cwd", str(work))
    assert strict.exit_code == 2
    assert "maxFixAttempts: -1" in strict.stderr and "maxAssessmentRetries: '2'" in strict.stderr
    lenient = cli("assess", str(spec), "--cwd", str(work), "--lenient")
    assert lenient.exit_code == 0 and "using 2" in lenient.stderr


@pytest.mark.parametrize("key", ["maxFixAttempts", "maxAssessmentRetries"])
@pytest.mark.parametrize("value", [10**23, 101, -1])
def test_retry_settings_beyond_0_to_100_run_and_write_nothing(
    cli, tmp_path, work, kit_root, key, value
):
    # 10**23 once ran the commands and only then failed to store the record.
    spec = write_spec(tmp_path / "spec.yaml", {"expectations": [MARKER], key: value})
    before = ledger_bytes(kit_root)
    result = cli("assess", str(spec), "--cwd", str(work))
    assert result.exit_code == 2
    assert f"{key}: {str(value)[:40]}" in result.stderr
    assert "is not a whole number from 0 to 100" in result.stderr
    assert not (work / "ran.txt").exists() and ledger_bytes(kit_root) == before


@pytest.mark.parametrize("key", ["maxFixAttempts", "maxAssessmentRetries"])
def test_retry_settings_up_to_100_are_accepted_and_stored(cli, tmp_path, work, kit, key):
    from pmos.assess.assessment import task_records

    spec = write_spec(tmp_path / "spec.yaml", {"expectations": [MARKER], key: 100})
    result = cli("assess", str(spec), "--cwd", str(work), "--task-id", "t")
    assert result.exit_code == 0, result.output
    (record,) = task_records(kit, "t")
    stored = {
        "maxFixAttempts": "max_fix_attempts",
        "maxAssessmentRetries": "max_assessment_retries",
    }
    assert record[stored[key]] == 100


def test_every_problem_is_reported_at_once(cli, tmp_path, work):
    data = {"expectations": [{"type": "file_exists", "path": "a"}, {"type": "unit"}]}
    result = cli("assess", str(write_spec(tmp_path / "s.yaml", data)), "--cwd", str(work))
    assert "expectations[0]" in result.stderr and "expectations[1]" in result.stderr
    assert "2 problem(s)" in result.stderr


def test_empty_spec_is_not_assessed(cli, tmp_path, work, kit_root):
    before = ledger_bytes(kit_root)
    for data in ({}, {"expectations": [], "metrics": []}, {"title": "no checks"}):
        result = cli("assess", str(write_spec(tmp_path / "s.yaml", data)), "--cwd", str(work))
        assert result.exit_code == 2
        assert "is not assessed: it has no expectation and no metric" in result.stderr
    assert ledger_bytes(kit_root) == before


def test_lenient_spec_left_empty_is_not_assessed(cli, tmp_path, work, kit_root):
    data = {"expectations": [{"type": "file_exists", "path": "a"}]}
    spec = write_spec(tmp_path / "s.yaml", data)
    result = cli("assess", str(spec), "--cwd", str(work), "--lenient")
    assert result.exit_code == 2
    assert "not assessed" in result.stderr and "dropping its malformed entries" in result.stderr
    assert "expectations[0]" in result.stderr


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("expectations: [", "is not valid YAML or JSON"),
        ("- type: test", "must be a mapping"),
        ("expectations: {type: test}", "expectations: must be a list"),
    ],
)
def test_unusable_spec_files(cli, tmp_path, work, text, message):
    spec = tmp_path / "spec.yaml"
    spec.write_text(text)
    for extra in ([], ["--lenient"]):
        result = cli("assess", str(spec), "--cwd", str(work), *extra)
        assert result.exit_code == 2 and message in result.stderr


def test_json_spec_works_unchanged(cli, tmp_path, work):
    spec = tmp_path / "task.json"
    spec.write_text(
        json.dumps(
            {
                "id": "task-42",
                "title": "Build it",
                "expectations": [{"type": "test", "command": "true"}],
                "metrics": [],
                "maxFixAttempts": 1,
            }
        )
    )
    result = cli("assess", str(spec), "--cwd", str(work), "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["task_id"] == "task-42" and out["fix_attempts_left"] == 1


def test_missing_spec_file(cli, tmp_path):
    result = cli("assess", str(tmp_path / "nope.yaml"))
    assert result.exit_code == 2 and "cannot read spec" in result.stderr


def test_spec_or_run_id_is_required(cli):
    result = cli("assess", "--cwd", ".")
    assert result.exit_code == 2 and "give a SPEC file, or --run-id" in result.stderr
