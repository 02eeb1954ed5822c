"""Deterministic category scores from kit records (pmos score collect)."""

from __future__ import annotations

import json

import pytest

from assess_support import write_spec
from pmos.tasks.collect import collect
from runrecords import assess, check, label, metric, register, verdict_with


def test_full_workflow_scores_every_category_from_records(kit, cli):
    register(kit)
    assess(
        kit,
        passed=False,
        checks=[check(0, True), check(1, False)],
        fix_attempts_left=3,
    )
    assess(
        kit,
        trigger="fix",
        attempt=2,
        passed=True,
        checks=[check(0, True), check(1, True), check(2, False)],
        metrics=[metric("coverage", True), metric("latency", True)],
        fix_attempts_left=2,
    )
    verdict_with(kit)
    label(kit)
    result = cli("score", "collect", "--run-id", "run-1", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    cats = data["categories"]
    # latest assessment: 2 of 3 checks + 2 of 2 metrics = 4/5 -> 80
    assert cats["taskOutcomeQuality"]["deterministicScore"] == 80
    # passed (60) + 40 * left 2 / (used 1 + left 2) = 86.67 -> 87
    assert cats["agentPerformance"]["deterministicScore"] == 87
    assert cats["agentPerformance"]["inputs"]["fix_attempts_used"] == 1
    assert cats["processCompliance"]["deterministicScore"] == 100
    assert data["complete"] is True and data["missing"] == []
    assert data["task_id"] == "task-A"
    template = data["template"]
    assert template["categories"]["taskOutcomeQuality"] == {
        "deterministicScore": 80,
        "aiScore": None,
        "rationale": "",
        "evidence": [],
    }
    human = cli("score", "collect", "--run-id", "run-1")
    assert "complete" in human.stdout and "taskOutcomeQuality  80" in human.stdout


def test_template_filled_in_is_accepted_by_score_record(kit, cli):
    register(kit)
    assess(kit)
    data = json.loads(cli("score", "collect", "--run-id", "run-1", "--json").stdout)
    template = data["template"]
    refused = cli("score", "record", "--file", "-", input=json.dumps(template))
    assert refused.exit_code == 2 and "aiScore: null" in refused.stderr
    for entry in template["categories"].values():
        entry.update(aiScore=60, rationale="read the checks", evidence=["workflow:check:0"])
    result = cli("score", "record", "--file", "-", "--json", input=json.dumps(template))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["run_id"] == "run-1"


def test_missing_assessment_is_stated_and_scored_neutral_not_0_or_100(kit):
    register(kit)
    verdict_with(kit)
    data = collect(kit, "run-1")
    for name in ("taskOutcomeQuality", "agentPerformance"):
        cat = data["categories"][name]
        assert cat["deterministicScore"] == 50
        assert cat["missing"] and "no assessment" in cat["missing"][0]
        assert cat["scoredAs"].startswith("neutral 50")
    assert data["complete"] is False
    assert any(m.startswith("taskOutcomeQuality: no assessment") for m in data["missing"])
    # no assessment names a task: the run id stands in, and that is said
    assert data["task_id"] == "run-1" and "no assessment" in data["task_id_source"]


def test_assessment_without_checks_or_metrics_is_stated(kit):
    register(kit)
    assess(kit, checks=[], metrics=[])
    cat = collect(kit, "run-1")["categories"]["taskOutcomeQuality"]
    assert cat["deterministicScore"] == 50
    assert "no checks or metrics" in cat["missing"][0]


def test_each_missing_workflow_step_is_listed_and_costs_its_points(kit):
    register(kit, contract=None)
    assess(kit)
    data = collect(kit, "run-1")
    pc = data["categories"]["processCompliance"]
    assert pc["deterministicScore"] == 25  # only the assessment step
    steps = pc["inputs"]["steps"]
    assert steps["contract_registered"] == {
        "done": False,
        "detail": "the run is registered without a contract",
    }
    assert not steps["verdict_recorded"]["done"] and not steps["pm_label"]["done"]
    assert len(pc["missing"]) == 3
    assert "0 of its 25 points" in pc["scoredAs"]


def test_unregistered_run_and_skipped_verdict_do_not_count(kit, cli):
    assess(kit, run_id="run-9")
    from pmos.gate import writers

    writers.record_short_verdict(
        kit, run_id="run-9", initiative_id="init-1", verdict="SKIPPED", skipped_reason="no time"
    )
    steps = collect(kit, "run-9")["categories"]["processCompliance"]["inputs"]["steps"]
    assert steps["contract_registered"]["detail"] == "the run is not registered"
    assert steps["verdict_recorded"]["done"] is False
    assert "only SKIPPED" in steps["verdict_recorded"]["detail"]
    assert collect(kit, "run-9")["categories"]["processCompliance"]["deterministicScore"] == 25


def test_agent_performance_formula_cases(kit):
    register(kit)
    # failed first attempt, full budget left: 0 + 40 * 3/3 = 40
    assess(kit, passed=False, checks=[check(0, False)], fix_attempts_left=3)
    assert collect(kit, "run-1")["categories"]["agentPerformance"]["deterministicScore"] == 40
    # three fixes used, all failed, budget exhausted: 0 + 40 * 0/3 = 0 (a real 0, not missing)
    for attempt in (2, 3, 4):
        assess(
            kit,
            trigger="fix",
            attempt=attempt,
            passed=False,
            checks=[check(0, False)],
            fix_attempts_left=4 - attempt,
        )
    cat = collect(kit, "run-1")["categories"]["agentPerformance"]
    assert cat["deterministicScore"] == 0 and cat["missing"] == []
    # reassess (not a fix) that passes: 60 + 40 * 0/3 = 60
    assess(kit, trigger="reassess", attempt=5, passed=True, fix_attempts_left=0)
    assert collect(kit, "run-1")["categories"]["agentPerformance"]["deterministicScore"] == 60


def test_first_try_pass_with_no_budget_scores_full(kit):
    register(kit)
    assess(kit, passed=True, fix_attempts_left=0)
    assert collect(kit, "run-1")["categories"]["agentPerformance"]["deterministicScore"] == 100


def test_latest_assessment_is_the_runs_not_another_runs(kit):
    register(kit)
    register(kit, "run-2")
    assess(kit, checks=[check(0, True)])
    assess(kit, run_id="run-2", task_id="task-B", checks=[check(0, False)])
    assert collect(kit, "run-1")["categories"]["taskOutcomeQuality"]["deterministicScore"] == 100


def test_unknown_run_is_bad_input(cli, kit_root):
    result = cli("score", "collect", "--run-id", "ghost")
    assert result.exit_code == 2
    assert "no record of run 'ghost'" in result.stderr


# ---------------------------------------------------------------- fix budget per task


def _real_assess(cli, spec, work, run_id: str, *args: str) -> dict:
    """One real 'pmos assess' of task T1 under ``run_id``."""
    result = cli(
        "assess", str(spec), "--cwd", str(work), "--task-id", "T1", "--run-id", run_id,
        "--json", *args,
    )  # fmt: skip
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


@pytest.fixture
def t1(tmp_path):
    """A passing task spec (maxFixAttempts 2) and a working directory for it."""
    work = tmp_path / "work"
    work.mkdir()
    spec = write_spec(
        tmp_path / "t1.yaml",
        {"expectations": [{"type": "test", "command": "true"}], "maxFixAttempts": 2},
    )
    return spec, work


def test_fixes_spent_under_another_run_of_the_task_count(kit, cli, t1):
    spec, work = t1
    register(kit, "run-A")
    register(kit, "run-B")
    _real_assess(cli, spec, work, "run-A", "--trigger", "fix")
    _real_assess(cli, spec, work, "run-A", "--trigger", "fix")
    latest = _real_assess(cli, spec, work, "run-B")
    assert latest["fix_attempts_left"] == 0
    data = json.loads(cli("score", "collect", "--run-id", "run-B", "--json").stdout)
    cat = data["categories"]["agentPerformance"]
    # the task spent its whole budget (2 of 2) before run B: 60 + 40 * 0/2 = 60
    assert cat["inputs"]["fix_attempts_used"] == 2
    assert cat["inputs"]["fix_attempts_left"] == 0
    assert cat["inputs"]["fix_budget"] == 2
    assert cat["inputs"]["effort_points"] == 0
    assert cat["deterministicScore"] == 60


def test_budget_is_the_stored_max_fix_attempts(kit, cli, t1):
    spec, work = t1
    register(kit, "run-A")
    register(kit, "run-B")
    _real_assess(cli, spec, work, "run-A")
    _real_assess(cli, spec, work, "run-B", "--trigger", "fix")
    cat = collect(kit, "run-B")["categories"]["agentPerformance"]
    # one of two fixes used, one left: 60 + 40 * 1/2 = 80
    assert (cat["inputs"]["fix_attempts_used"], cat["inputs"]["fix_budget"]) == (1, 2)
    assert cat["inputs"]["fix_budget_source"] == "max_fix_attempts of the latest assessment"
    assert cat["deterministicScore"] == 80
    # run A's score is not rewritten by the fix spent later under run B
    assert collect(kit, "run-A")["categories"]["agentPerformance"]["deterministicScore"] == 100


def test_fixes_beyond_a_zero_budget_earn_no_effort_points(kit, cli, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    spec = write_spec(
        tmp_path / "t0.yaml",
        {"expectations": [{"type": "test", "command": "true"}], "maxFixAttempts": 0},
    )
    register(kit, "run-A")
    _real_assess(cli, spec, work, "run-A")
    assert collect(kit, "run-A")["categories"]["agentPerformance"]["deterministicScore"] == 100
    _real_assess(cli, spec, work, "run-A", "--trigger", "fix")
    cat = collect(kit, "run-A")["categories"]["agentPerformance"]
    assert (cat["inputs"]["fix_attempts_used"], cat["inputs"]["fix_budget"]) == (1, 0)
    assert cat["deterministicScore"] == 60


def test_a_record_without_max_fix_attempts_falls_back_and_says_so(kit):
    register(kit)
    assess(kit, trigger="fix", passed=True, fix_attempts_left=1)
    cat = collect(kit, "run-1")["categories"]["agentPerformance"]
    # used 1 + left 1: 60 + 40 * 1/2 = 80
    assert cat["inputs"]["fix_budget"] == 2
    assert "no max_fix_attempts" in cat["inputs"]["fix_budget_source"]
    assert cat["deterministicScore"] == 80
