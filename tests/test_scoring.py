"""Score math (exact half-up rounding, bands, input rules) and score record/show."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import ledger_bytes, write_json
from pmos.errors import BadInput, RecordRejected
from pmos.tasks import scoring

CATS = ("agentPerformance", "taskOutcomeQuality", "processCompliance")


def score_input(**per_category):
    categories = {
        name: {
            "deterministicScore": 80,
            "aiScore": 70,
            "rationale": f"{name}: checked the evidence",
            "evidence": ["workflow:check:0"],
        }
        for name in CATS
    }
    for name, override in per_category.items():
        categories[name].update(override)
    return {"task_id": "task-A", "run_id": "run-1", "categories": categories}


# ---------------------------------------------------------------- math


@pytest.mark.parametrize(
    ("det", "ai", "expected"),
    [
        (1, 36, 12),  # 11.5 exactly; binary floats give 11.4999... -> 11
        (3, 18, 8),  # 7.5; floats give 7.4999...
        (6, 1, 5),  # 4.5; floats give 4.4999...
        (0, 15, 5),  # 4.5; Python's round() gives 4 (banker's rounding)
        (5, 0, 4),  # 3.5
        (100, 100, 100),
        (0, 0, 0),
        (50, 51, 50),  # 50.3
    ],
)
def test_final_score_rounds_half_up_exactly(det, ai, expected):
    assert scoring.final_score(det, ai) == expected


def test_the_half_up_cases_really_break_binary_floating_point():
    # Guard that the cases above are meaningful: the naive float computation differs.
    assert math.floor(0.7 * 1 + 0.3 * 36 + 0.5) == 11
    assert round(0.7 * 0 + 0.3 * 15) == 4
    assert math.floor(31 * 0.30 + 1 * 0.45 + 3 * 0.25 + 0.5) == 10


@pytest.mark.parametrize(
    ("finals", "expected"),
    [
        ((31, 1, 3), 11),  # 10.5 exactly; floats give 10.4999...
        ((36, 1, 1), 12),  # 11.5
        ((57, 2, 50), 31),  # 30.5
        ((100, 100, 100), 100),
        ((0, 0, 0), 0),
        ((90, 80, 70), 81),  # 27 + 36 + 17.5 = 80.5
    ],
)
def test_overall_score_rounds_half_up_exactly(finals, expected):
    assert scoring.overall_score(dict(zip(CATS, finals, strict=True))) == expected


@given(st.integers(0, 100), st.integers(0, 100))
def test_final_score_matches_integer_arithmetic(det, ai):
    # round_half_up((7d + 3a) / 10) == floor((7d + 3a + 5) / 10) for non-negative values
    assert scoring.final_score(det, ai) == (7 * det + 3 * ai + 5) // 10


@given(st.integers(0, 100), st.integers(0, 100), st.integers(0, 100))
def test_overall_score_matches_integer_arithmetic(a, b, c):
    expected = (30 * a + 45 * b + 25 * c + 50) // 100
    assert scoring.overall_score(dict(zip(CATS, (a, b, c), strict=True))) == expected


@pytest.mark.parametrize(
    ("score", "band"),
    [
        (0, "failing"),
        (39, "failing"),
        (40, "weak"),
        (59, "weak"),
        (60, "acceptable"),
        (74, "acceptable"),
        (75, "strong"),
        (89, "strong"),
        (90, "excellent"),
        (100, "excellent"),
    ],
)
def test_band_boundaries(score, band):
    assert scoring.band(score) == band


@pytest.mark.parametrize("bad", [-1, 101, 50.0, 49.5, True, False, "50", None, [50]])
def test_non_integer_and_out_of_range_scores_are_refused(bad):
    with pytest.raises(BadInput):
        scoring.final_score(bad, 50)
    with pytest.raises(BadInput):
        scoring.final_score(50, bad)
    with pytest.raises(BadInput):
        scoring.band(bad)


def test_overall_needs_exactly_the_three_categories():
    with pytest.raises(BadInput, match="missing processCompliance"):
        scoring.overall_score({"agentPerformance": 50, "taskOutcomeQuality": 50})
    with pytest.raises(BadInput, match="unknown speed"):
        scoring.overall_score(dict.fromkeys((*CATS, "speed"), 50))


def test_weights_sum_to_one_and_match_the_contract():
    assert sum(scoring.WEIGHTS.values()) == 1
    assert [scoring.weight_as_number(c) for c in CATS] == [0.3, 0.45, 0.25]


# ---------------------------------------------------------------- input rules


def test_score_input_computes_every_derived_number():
    scored = scoring.score_input(
        score_input(
            agentPerformance={"deterministicScore": 1, "aiScore": 36},
            taskOutcomeQuality={"deterministicScore": 100, "aiScore": 100},
            processCompliance={"deterministicScore": 0, "aiScore": 15},
        )
    )
    cats = scored.fields["categoryScores"]
    assert [c["category"] for c in cats] == list(CATS)
    assert [c["finalScore"] for c in cats] == [12, 100, 5]
    assert [c["band"] for c in cats] == ["failing", "excellent", "failing"]
    # 0.30*12 + 0.45*100 + 0.25*5 = 49.85 -> 50
    assert scored.fields["overallScore"] == 50
    assert scored.fields["band"] == "weak"
    assert scored.warnings == []


def _violations(data):
    with pytest.raises(RecordRejected) as info:
        scoring.score_input(data)
    return {v.field: v for v in info.value.violations}


@pytest.mark.parametrize(
    ("value", "rule"),
    [
        (50.0, "score-integer"),
        (True, "score-integer"),
        (101, "score-integer"),
        (-3, "score-integer"),
        ("80", "score-integer"),
        (None, "score-integer"),
    ],
)
def test_each_bad_score_is_named_by_field(value, rule):
    problems = _violations(score_input(taskOutcomeQuality={"aiScore": value}))
    assert problems["categories/taskOutcomeQuality/aiScore"].rule == rule
    assert len(problems) == 1


def test_missing_or_blank_rationale_is_refused():
    data = score_input(agentPerformance={"rationale": "   "})
    del data["categories"]["processCompliance"]["rationale"]
    problems = _violations(data)
    assert problems["categories/agentPerformance/rationale"].rule == "rationale-required"
    assert "missing" in problems["categories/processCompliance/rationale"].message
    assert "categories/taskOutcomeQuality/rationale" not in problems


def test_unknown_and_missing_categories_are_refused():
    data = score_input()
    data["categories"]["speed"] = data["categories"].pop("processCompliance")
    problems = _violations(data)
    assert problems["categories/speed"].rule == "unknown-category"
    assert problems["categories/processCompliance"].rule == "required"


def test_missing_score_and_unknown_field_are_refused():
    data = score_input(agentPerformance={"confidence": 0.9})
    del data["categories"]["taskOutcomeQuality"]["deterministicScore"]
    data["extra"] = 1
    problems = _violations(data)
    assert problems["categories/taskOutcomeQuality/deterministicScore"].rule == "required"
    assert problems["categories/agentPerformance/confidence"].rule == "unknown-field"
    assert problems["extra"].rule == "unknown-field"


def test_evidence_must_be_a_list_of_references():
    problems = _violations(score_input(agentPerformance={"evidence": "commits:abc"}))
    assert "categories/agentPerformance/evidence" in problems
    problems = _violations(score_input(agentPerformance={"evidence": ["ok", " "]}))
    assert "categories/agentPerformance/evidence" in problems


def test_supplied_computed_values_are_ignored_with_a_warning():
    data = score_input(
        agentPerformance={"finalScore": 100, "weight": 0.9, "band": "excellent"},
    )
    data["overallScore"] = 100
    data["band"] = "excellent"
    scored = scoring.score_input(data)
    ap = scored.fields["categoryScores"][0]
    assert (ap["finalScore"], ap["weight"], ap["band"]) == (77, 0.3, "strong")
    assert scored.fields["overallScore"] == 77
    assert len(scored.warnings) == 5
    assert any("overallScore" in w for w in scored.warnings)
    assert any("agentPerformance/finalScore" in w for w in scored.warnings)


# ---------------------------------------------------------------- CLI: the calculator


def test_score_compute_prints_what_record_would_and_records_nothing(cli, kit_root, tmp_path):
    before = ledger_bytes(kit_root)
    path = write_json(
        tmp_path / "eval.json",
        score_input(agentPerformance={"deterministicScore": 1, "aiScore": 36, "finalScore": 99}),
    )
    result = cli("score", "compute", "--file", str(path), "--json")
    assert result.exit_code == 0, result.output
    computed = json.loads(result.stdout)
    assert set(computed) == SHOW_KEYS
    assert (computed["record_id"], computed["recorded_at"], computed["flags"]) == (None,) * 3
    assert computed["categoryScores"][0] == {
        "category": "agentPerformance",
        "deterministicScore": 1,
        "aiScore": 36,
        "finalScore": 12,
        "weight": 0.3,
        "band": "failing",
        "rationale": "agentPerformance: checked the evidence",
        "evidence": ["workflow:check:0"],
    }
    # 0.3*12 + 0.45*77 + 0.25*77 = 57.5 -> 58
    assert computed["overallScore"] == 58 and computed["band"] == "weak"
    assert "ignored the supplied categories/agentPerformance/finalScore" in result.stderr
    assert ledger_bytes(kit_root) == before
    human = cli("score", "compute", "--file", "-", input=json.dumps(score_input()))
    assert human.exit_code == 0 and "overall 77 (strong)" in human.stdout
    bad = cli(
        "score",
        "compute",
        "--file",
        "-",
        input=json.dumps(score_input(agentPerformance={"aiScore": 50.0})),
    )
    assert bad.exit_code == 2 and "write 50, not 50.0" in bad.stderr
    assert ledger_bytes(kit_root) == before


# ---------------------------------------------------------------- CLI: score record


def record_input(**per_category):
    """What an evaluator submits: AI scores and reasons; pmos computes the rest."""
    data = score_input(**per_category)
    for entry in data["categories"].values():
        entry.pop("deterministicScore", None)
    return data


@pytest.fixture
def scored_run(kit):
    """run-1 of task-A: registered with a contract, assessed (one of three checks
    failed), judged FAIL and labelled fail."""
    from runrecords import assess, check, label, register, verdict_with

    register(kit)
    assess(kit, passed=False, checks=[check(0, True), check(1, True), check(2, False)])
    verdict_with(
        kit, defects=[{"severity": "must-fix", "where": "a.py:1", "problem": "p", "fix": "f"}]
    )
    label(kit, value="fail")
    return "run-1"


def computed(cli) -> dict[str, int]:
    data = json.loads(cli("score", "collect", "--run-id", "run-1", "--json").stdout)
    return {n: c["deterministicScore"] for n, c in data["categories"].items()}


def test_score_record_refuses_invented_deterministic_scores(cli, kit_root, scored_run):
    # The reproduction: 100/100/100 for a run whose assessment failed a check.
    before = ledger_bytes(kit_root)
    invented = score_input(**{n: {"deterministicScore": 100} for n in CATS})
    result = cli("score", "record", "--file", "-", input=json.dumps(invented))
    assert result.exit_code == 2
    want = computed(cli)
    assert want["taskOutcomeQuality"] == 67  # 2 of 3 checks
    assert want["processCompliance"] == 100  # every workflow step is recorded
    for name in ("agentPerformance", "taskOutcomeQuality"):
        assert (
            f"categories/{name}/deterministicScore: submitted 100, but pmos computes "
            f"{want[name]} from the kit's records of run 'run-1'"
        ) in result.stderr
    assert "processCompliance" not in result.stderr
    assert ledger_bytes(kit_root) == before


def test_score_record_computes_the_deterministic_scores(cli, scored_run):
    want = computed(cli)
    result = cli("score", "record", "--file", "-", "--json", input=json.dumps(record_input()))
    assert result.exit_code == 0, result.output
    stored = json.loads(result.stdout)
    assert {c["category"]: c["deterministicScore"] for c in stored["categoryScores"]} == want
    assert stored["flags"] is None  # every input was there
    same = score_input(**{n: {"deterministicScore": v} for n, v in want.items()})
    assert cli("score", "record", "--file", "-", input=json.dumps(same)).exit_code == 0
    shown = cli("score", "show", "task-A", "--json")
    assert shown.exit_code == 0
    human = cli("score", "show", "task-A")
    assert "agentPerformance" in human.stdout
    assert cli("ledger", "verify").exit_code == 0


def test_score_record_takes_score_collect_output(cli, scored_run):
    data = json.loads(cli("score", "collect", "--run-id", "run-1", "--json").stdout)
    for entry in data["categories"].values():  # filled in beside the computed scores
        entry.update(aiScore=60, rationale="read the checks", evidence=["workflow:check:0"])
    result = cli("score", "record", "--file", "-", "--json", input=json.dumps(data))
    assert result.exit_code == 0, result.output
    stored = json.loads(result.stdout)
    assert [c["aiScore"] for c in stored["categoryScores"]] == [60, 60, 60]
    template = json.loads(cli("score", "collect", "--run-id", "run-1", "--template").stdout)
    assert set(template) == {"task_id", "run_id", "categories"}
    refused = cli("score", "record", "--file", "-", input=json.dumps(template))
    assert refused.exit_code == 2 and "aiScore: null" in refused.stderr
    for entry in template["categories"].values():
        entry.update(aiScore=70, rationale="read the checks", evidence=[])
    assert cli("score", "record", "--file", "-", input=json.dumps(template)).exit_code == 0
    edited = json.loads(cli("score", "collect", "--run-id", "run-1", "--json").stdout)
    edited["template"]["categories"]["taskOutcomeQuality"]["deterministicScore"] = 100
    for entry in edited["template"]["categories"].values():
        entry.update(aiScore=70, rationale="r", evidence=[])
    result = cli("score", "record", "--file", "-", input=json.dumps(edited))
    assert result.exit_code == 2 and "[deterministic-computed]" in result.stderr


def test_score_record_needs_a_known_run(cli, kit_root):
    before = ledger_bytes(kit_root)
    bare = record_input()
    del bare["run_id"]
    result = cli("score", "record", "--file", "-", input=json.dumps(bare))
    assert result.exit_code == 2 and "pmos score compute" in result.stderr
    result = cli("score", "record", "--file", "-", input=json.dumps(record_input()))
    assert result.exit_code == 2  # run-1 is unknown to the kit
    assert ledger_bytes(kit_root) == before


def test_incomplete_inputs_are_flagged(cli, kit):
    from runrecords import register

    register(kit)  # no assessment, verdict or label yet
    result = cli("score", "record", "--file", "-", "--json", input=json.dumps(record_input()))
    assert result.exit_code == 0, result.output
    stored = json.loads(result.stdout)
    assert stored["flags"] == ["incomplete-inputs"]
    assert "no assessment of the run" in result.stderr


def test_score_record_from_stdin_and_latest_wins(cli, scored_run):
    first = record_input()
    second = record_input(taskOutcomeQuality={"aiScore": 10})
    assert cli("score", "record", "--file", "-", input=json.dumps(first)).exit_code == 0
    assert cli("score", "record", "--file", "-", input=json.dumps(second)).exit_code == 0
    shown = json.loads(cli("score", "show", "task-A", "--json").stdout)
    assert shown["categoryScores"][1]["aiScore"] == 10


def test_rejected_score_writes_nothing(cli, kit_root, tmp_path, scored_run):
    before = ledger_bytes(kit_root)
    path = write_json(tmp_path / "e.json", record_input(agentPerformance={"aiScore": 50.0}))
    result = cli("score", "record", "--file", str(path))
    assert result.exit_code == 2
    assert "categories/agentPerformance/aiScore" in result.stderr
    assert "write 50, not 50.0" in result.stderr
    assert ledger_bytes(kit_root) == before


def test_bad_json_and_unknown_task(cli, kit_root, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert cli("score", "record", "--file", str(bad)).exit_code == 2
    result = cli("score", "show", "nope")
    assert result.exit_code == 2 and "no evaluation recorded for task 'nope'" in result.stderr


def test_bad_task_id_is_refused_by_the_schema(cli, tmp_path, scored_run):
    data = record_input()
    data["task_id"] = "  "
    path = write_json(tmp_path / "e.json", data)
    result = cli("score", "record", "--file", str(path))
    assert result.exit_code == 2 and "task_id" in result.stderr


SHOW_KEYS = {
    "record_id",
    "recorded_at",
    "task_id",
    "run_id",
    "categoryScores",
    "overallScore",
    "band",
    "flags",
    "warnings",
}


def test_score_show_json_has_a_fixed_key_set(cli, scored_run):
    assert cli("score", "record", "--file", "-", input=json.dumps(record_input())).exit_code == 0
    shown = json.loads(cli("score", "show", "task-A", "--json").stdout)
    assert set(shown) == SHOW_KEYS
    assert (shown["run_id"], shown["flags"], shown["warnings"]) == ("run-1", None, None)
    full = record_input(agentPerformance={"finalScore": 99})
    assert cli("score", "record", "--file", "-", input=json.dumps(full)).exit_code == 0
    shown = json.loads(cli("score", "show", "task-A", "--json").stdout)
    assert set(shown) == SHOW_KEYS
    assert shown["warnings"] and "finalScore" in shown["warnings"][0]


def test_score_record_json_prints_what_show_prints(cli, scored_run):
    recorded = cli("score", "record", "--file", "-", "--json", input=json.dumps(record_input()))
    assert recorded.exit_code == 0, recorded.output
    shown = cli("score", "show", "task-A", "--json")
    assert json.loads(recorded.stdout) == json.loads(shown.stdout)
    assert set(json.loads(recorded.stdout)) == SHOW_KEYS
