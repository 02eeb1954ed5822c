"""Assessment history, fix-attempt accounting, run contracts and verdict drafts."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
import yaml

from assess_support import jury, scores, set_config, write_spec
from conftest import ledger_bytes, write_json
from pmos.errors import BadInput


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


@pytest.fixture
def fixable(tmp_path: Path) -> Path:
    """A task that fails until fixed.txt exists in the working directory."""
    data = {"expectations": [{"type": "test", "command": "test -f fixed.txt"}]}
    return write_spec(tmp_path / "task.yaml", data)


def run_assess(cli, spec: Path, work: Path, *args: str):
    result = cli("assess", str(spec), "--cwd", str(work), "--task-id", "t1", "--json", *args)
    return result, (json.loads(result.stdout) if result.stdout.strip() else None)


def test_history_and_fix_attempt_accounting(cli, fixable, work):
    result, first = run_assess(cli, fixable, work)
    assert result.exit_code == 1
    assert (first["attempt"], first["trigger"], first["fix_attempts_left"]) == (1, "initial", 2)
    _, second = run_assess(cli, fixable, work, "--trigger", "fix")
    assert (second["attempt"], second["trigger"], second["fix_attempts_left"]) == (2, "fix", 1)
    _, third = run_assess(cli, fixable, work, "--trigger", "retry")
    assert (third["attempt"], third["fix_attempts_left"]) == (3, 1)
    _, fourth = run_assess(cli, fixable, work, "--trigger", "fix")
    assert (fourth["attempt"], fourth["fix_attempts_left"]) == (4, 0)
    result, fifth = run_assess(cli, fixable, work, "--trigger", "fix")
    assert fifth["fix_attempts_left"] == 0
    assert any("beyond maxFixAttempts 2" in w for w in fifth["warnings"])
    assert "beyond maxFixAttempts" in result.stderr
    (work / "fixed.txt").write_text("")
    result, sixth = run_assess(cli, fixable, work)
    assert result.exit_code == 0
    assert (sixth["attempt"], sixth["trigger"], sixth["passed"]) == (6, "reassess", True)

    history = cli("assess", "history", "t1", "--json")
    assert history.exit_code == 0
    data = json.loads(history.stdout)
    assert data["task_id"] == "t1"
    assert data["latest"]["record_id"] == sixth["record_id"]
    assert [r["attempt"] for r in data["history"]] == [5, 4, 3, 2, 1]
    assert [r["trigger"] for r in data["history"]] == ["fix", "fix", "retry", "fix", "initial"]
    assert data["history"][-1]["checks"][0]["passed"] is False
    assert set(data["latest"]) == {
        "record_id",
        "recorded_at",
        "task_id",
        "run_id",
        "trigger",
        "attempt",
        "passed",
        "commit",
        "dirty",
        "dirty_paths",
        "duration_s",
        "checks",
        "metrics",
        "warnings",
        "fix_attempts_left",
    }
    assert cli("ledger", "verify", "--schema").exit_code == 0


def test_fix_budget_comes_from_the_spec(cli, tmp_path, work):
    data = {"expectations": [{"type": "test", "command": "false"}], "maxFixAttempts": 1}
    spec = write_spec(tmp_path / "s.yaml", data)
    _, first = run_assess(cli, spec, work)
    assert first["fix_attempts_left"] == 1
    _, fix = run_assess(cli, spec, work, "--trigger", "fix")
    assert fix["fix_attempts_left"] == 0


def test_tasks_have_separate_histories(cli, fixable, work):
    run_assess(cli, fixable, work, "--trigger", "fix")
    result = cli("assess", str(fixable), "--cwd", str(work), "--task-id", "t2", "--json")
    other = json.loads(result.stdout)
    assert (other["attempt"], other["trigger"], other["fix_attempts_left"]) == (1, "initial", 2)


def test_history_human_output(cli, fixable, work):
    run_assess(cli, fixable, work)
    run_assess(cli, fixable, work, "--trigger", "fix")
    result = cli("assess", "history", "t1")
    assert result.exit_code == 0
    assert "latest assessment of task t1" in result.stdout
    assert "attempt 2 (fix)" in result.stdout
    assert "earlier assessments:" in result.stdout and "initial" in result.stdout
    assert "check 0" in result.stdout


@pytest.mark.parametrize("args", [(), ("--json",)])
def test_history_of_an_unknown_task_is_bad_input(cli, args):
    """Issue 16 item 17: an unknown id exits 2, as `score show UNKNOWN` does."""
    result = cli("assess", "history", "nobody", *args)
    assert result.exit_code == 2 and result.stdout == ""
    assert "no assessment recorded for task 'nobody'" in result.stderr


def test_bad_trigger_or_task_id_runs_and_writes_nothing(cli, tmp_path, work, kit_root):
    spec = write_spec(
        tmp_path / "s.yaml", {"expectations": [{"type": "test", "command": "touch ran"}]}
    )
    before = ledger_bytes(kit_root)
    result = cli("assess", str(spec), "--cwd", str(work), "--trigger", "oops")
    assert result.exit_code == 2 and "'oops' is not one of 'initial', 'reassess'" in result.stderr
    result = cli("assess", str(spec), "--cwd", str(work), "--task-id", "bad\x1bid")
    assert result.exit_code == 2 and "task_id" in result.stderr
    assert not (work / "ran").exists() and ledger_bytes(kit_root) == before


def test_concurrent_assessments_of_one_task_get_distinct_attempts(pmos, fixable, work):
    results = []

    def one() -> None:
        results.append(pmos("assess", str(fixable), "--cwd", str(work), "--task-id", "t1"))

    threads = [threading.Thread(target=one) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [r.returncode for r in results] == [1, 1, 1]
    history = json.loads(pmos("assess", "history", "t1", "--json").stdout)
    attempts = [history["latest"]["attempt"]] + [r["attempt"] for r in history["history"]]
    assert sorted(attempts) == [1, 2, 3]
    triggers = [history["latest"]["trigger"]] + [r["trigger"] for r in history["history"]]
    assert sorted(triggers) == ["initial", "reassess", "reassess"]


def test_task_id_defaults(cli, tmp_path, work):
    spec = write_spec(
        tmp_path / "build-api.yaml", {"expectations": [{"type": "test", "command": "true"}]}
    )
    out = json.loads(cli("assess", str(spec), "--cwd", str(work), "--json").stdout)
    assert out["task_id"] == "build-api" and out["run_id"] is None
    out = json.loads(
        cli("assess", str(spec), "--cwd", str(work), "--run-id", "r9", "--json").stdout
    )
    assert out["task_id"] == "r9"


def test_spec_with_an_unregistered_run_is_flagged(cli, tmp_path, work, kit):
    from pmos.assess.assessment import task_records

    spec = write_spec(tmp_path / "s.yaml", {"expectations": [{"type": "test", "command": "true"}]})
    result = cli("assess", str(spec), "--cwd", str(work), "--run-id", "ghost")
    assert result.exit_code == 0
    assert "never registered" in result.stderr
    (record,) = task_records(kit, "ghost")
    assert record["flags"] == ["unregistered-run"] and record["run_id"] == "ghost"


# ---------------------------------------------------------------- run contracts

CONTRACT = {
    "done_criteria": [
        {
            "id": "c1",
            "text": "The suite passes.",
            "test_method": {"type": "test", "command": "true"},
        },
        {
            "id": "c2",
            "text": "The build writes out.txt.",
            "test_method": {"type": "file_exists", "paths": ["out.txt"]},
        },
        {"id": "c3", "text": "README explains the flag.", "test_method": "README has a section"},
    ]
}


def register(cli, tmp_path: Path, contract: dict, run_id: str = "run-1") -> None:
    path = tmp_path / f"{run_id}-contract.yaml"
    path.write_text(yaml.safe_dump(contract))
    result = cli(
        "run",
        "register",
        "--run-id",
        run_id,
        "--initiative-id",
        "init-1",
        "--builder-model",
        "claude-sonnet-4",
        "--contract",
        str(path),
    )
    assert result.exit_code == 0, result.output


def test_assess_runs_the_contract_criteria(cli, tmp_path, work):
    register(cli, tmp_path, CONTRACT)
    result = cli("assess", "--run-id", "run-1", "--cwd", str(work), "--json")
    assert result.exit_code == 1
    out = json.loads(result.stdout)
    assert out["task_id"] == "run-1" and out["run_id"] == "run-1"
    assert [(c["index"], c["criterion_id"], c["passed"]) for c in out["checks"]] == [
        (0, "c1", True),
        (1, "c2", False),
    ]
    (work / "out.txt").write_text("")
    result = cli("assess", "--run-id", "run-1", "--cwd", str(work), "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["attempt"] == 2


def test_assess_needs_a_registered_run_without_a_spec(cli, kit_root):
    before = ledger_bytes(kit_root)
    result = cli("assess", "--run-id", "nope")
    assert result.exit_code == 2 and "'nope' is not registered" in result.stderr
    assert ledger_bytes(kit_root) == before


def test_contract_without_expectation_criteria_is_not_assessed(cli, tmp_path, work):
    register(cli, tmp_path, {"done_criteria": [CONTRACT["done_criteria"][2]]})
    result = cli("assess", "--run-id", "run-1", "--cwd", str(work))
    assert result.exit_code == 2 and "contract:run-1 is not assessed" in result.stderr


def test_malformed_contract_criterion_strict_and_lenient(cli, tmp_path, work):
    contract = {
        "done_criteria": [
            {"id": "c1", "text": "t", "test_method": {"type": "file_exists", "path": "x"}},
            {"id": "c2", "text": "t", "test_method": {"type": "test", "command": "true"}},
        ]
    }
    register(cli, tmp_path, contract)
    strict = cli("assess", "--run-id", "run-1", "--cwd", str(work))
    assert strict.exit_code == 2
    assert "done_criteria[0] (c1) test_method (file_exists): uses 'path'" in strict.stderr
    lenient = cli("assess", "--run-id", "run-1", "--cwd", str(work), "--lenient", "--json")
    assert lenient.exit_code == 0
    out = json.loads(lenient.stdout)
    assert [c["criterion_id"] for c in out["checks"]] == ["c2"]
    assert any(w.startswith("dropped done_criteria[0] (c1)") for w in out["warnings"])


def test_contract_review_without_criteria_judges_the_criterion_text(cli, tmp_path, work, kit_root):
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    set_config(
        kit_root, review=jury(tmp_path, {"a": {"scores": scores(4), "prompt_dir": str(prompts)}})
    )
    contract = {
        "done_criteria": [
            {"id": "c1", "text": "Errors keep stable codes.", "test_method": {"type": "llm_review"}}
        ]
    }
    register(cli, tmp_path, contract)
    result = cli("assess", "--run-id", "run-1", "--cwd", str(work), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["checks"][0]["criterion_id"] == "c1"
    (prompt,) = [p.read_text() for p in prompts.iterdir()]
    assert "## Review criteria\nErrors keep stable codes." in prompt
    assert "(run run-1, built by claude-sonnet-4)" in prompt


# ---------------------------------------------------------------- eval draft


def fill(draft: dict, results: dict[str, str]) -> dict:
    """What an evaluator adds to the skeleton: every judgment field."""
    for criterion in draft["criteria"]:
        if not criterion["result"]:
            criterion["result"] = results[criterion["id"]]
            criterion["evidence"] = "README.md:12 documents the flag"
            criterion["verified"] = True
    for dim in draft["dimensions"].values():
        dim.update(score=0.8, note="met, checked by hand", evidence="src/app.py:10", verified=True)
    spec_fails = any(c["result"] == "fail" for c in draft["criteria"])
    draft["evaluator_model"] = "gpt-5"
    draft["score"] = 0.8
    draft["verdict"] = "FAIL" if spec_fails else "PASS"
    draft["note"] = "Spec and standards judged against the draft's evidence."
    draft["axes"] = {
        "spec": {"verdict": "fail" if spec_fails else "pass", "rationale": "per criteria"},
        "standards": {"verdict": "pass", "rationale": "score 0.8, no blocking defect"},
    }
    return draft


def test_draft_fills_criteria_from_the_latest_assessment(cli, tmp_path, work, monkeypatch):
    monkeypatch.setenv("PMOS_EVALUATOR_MODEL", "gpt-5")
    register(cli, tmp_path, CONTRACT)
    cli("assess", "--run-id", "run-1", "--cwd", str(work))
    latest = json.loads(cli("assess", "history", "run-1", "--json").stdout)["latest"]
    result = cli("eval", "draft", "--run-id", "run-1", "--json")
    assert result.exit_code == 0, result.output
    assert latest["record_id"] in result.stderr
    draft = json.loads(result.stdout)
    assert (draft["run_id"], draft["initiative_id"], draft["builder_model"]) == (
        "run-1",
        "init-1",
        "claude-sonnet-4",
    )
    assert draft["rubric_path"] == "planning/evals/agent-run-eval-rubric.md"
    assert draft["evaluator_model"] == "gpt-5"
    c1, c2, c3 = draft["criteria"]
    assert (c1["id"], c1["result"]) == ("c1", "pass")
    assert c1["evidence"].startswith(f"check:{latest['record_id']}#0 (test)")
    assert (c1["verified"], c2["verified"]) == (True, True)  # the assessment ran both checks
    assert (c2["result"], c3) == (
        "fail",
        {"id": "c3", "result": "", "evidence": "", "verified": None},
    )
    assert f"check:{latest['record_id']}#1 (file_exists): failed, missing" in c2["evidence"]
    assert draft["dimensions"]["contract_fulfilment"] == {
        "score": None,
        "weight": 0.35,
        "note": "",
        "evidence": "",
        "verified": None,
        "axis": "spec",
    }
    assert set(draft["dimensions"]) == {
        "contract_fulfilment",
        "verification",
        "correctness_and_safety",
        "test_quality",
        "maintainability",
    }
    assert (draft["verdict"], draft["score"], draft["defects"]) == ("", None, [])
    assert draft["axes"]["spec"] == {"verdict": "", "rationale": ""}


def test_unfilled_draft_is_refused_and_filled_draft_is_recorded(cli, tmp_path, work, kit_root):
    register(cli, tmp_path, CONTRACT)
    cli("assess", "--run-id", "run-1", "--cwd", str(work))
    draft = json.loads(cli("eval", "draft", "--run-id", "run-1", "--json").stdout)
    before = ledger_bytes(kit_root)
    refused = cli("eval", "record", "--file", str(write_json(tmp_path / "d.json", draft)))
    assert refused.exit_code == 2 and ledger_bytes(kit_root) == before
    filled = fill(draft, {"c3": "pass"})
    assert filled["verdict"] == "FAIL"  # c2 failed in the assessment
    result = cli("eval", "record", "--file", str(write_json(tmp_path / "v.json", filled)), "--json")
    assert result.exit_code == 0, result.output
    stored = json.loads(result.stdout)
    assert stored["criteria"][1]["evidence"].startswith("check:as-")


def test_draft_after_a_passing_reassessment_records_a_pass(cli, tmp_path, work):
    register(cli, tmp_path, CONTRACT)
    cli("assess", "--run-id", "run-1", "--cwd", str(work))
    (work / "out.txt").write_text("")
    assert cli("assess", "--run-id", "run-1", "--cwd", str(work)).exit_code == 0
    draft = json.loads(cli("eval", "draft", "--run-id", "run-1", "--json").stdout)
    assert [c["result"] for c in draft["criteria"]] == ["pass", "pass", ""]
    filled = fill(draft, {"c3": "pass"})
    assert filled["verdict"] == "PASS"
    result = cli("eval", "record", "--file", str(write_json(tmp_path / "v.json", filled)))
    assert result.exit_code == 0, result.output


def test_draft_without_an_assessment_leaves_criteria_to_the_judge(cli, tmp_path):
    register(cli, tmp_path, CONTRACT)
    result = cli("eval", "draft", "--run-id", "run-1", "--json")
    assert result.exit_code == 0 and "has no assessment" in result.stderr
    draft = json.loads(result.stdout)
    assert all(c["result"] == "" and c["evidence"] == "" for c in draft["criteria"])
    human = cli("eval", "draft", "--run-id", "run-1")
    assert "(judge)" in human.stdout and "contract_fulfilment" in human.stdout


def test_draft_of_an_unregistered_run(cli):
    result = cli("eval", "draft", "--run-id", "ghost")
    assert result.exit_code == 2 and "'ghost' is not registered" in result.stderr


# ---------------------------------------------------------------- refusing before anything runs


def test_a_record_value_the_ledger_cannot_store_is_refused_before_anything_runs(
    kit, kit_root, tmp_path, work
):
    from pmos.assess.assessment import assess
    from pmos.assess.spec import parse_spec
    from pmos.errors import BadInput

    # A spec object built in code is not bounded by the spec rules; the probe record
    # still refuses what the ledger could not store (an integer beyond 64 bits).
    spec = parse_spec({"expectations": [{"type": "test", "command": "touch ran"}]}, source="s")
    spec.max_fix_attempts = 10**23
    before = ledger_bytes(kit_root)
    with pytest.raises(BadInput, match="could not be stored, so nothing was run"):
        assess(kit, spec, cwd=work, task_id="t")
    assert not (work / "ran").exists() and ledger_bytes(kit_root) == before
    spec.max_fix_attempts = 100
    assert assess(kit, spec, cwd=work, task_id="t").record["max_fix_attempts"] == 100
    assert (work / "ran").exists()


def test_a_spec_path_that_is_not_valid_unicode_runs_and_writes_nothing(
    pmos, tmp_path, work, kit_root
):
    import os

    data = {"expectations": [{"type": "test", "command": "touch ran"}]}
    spec = write_spec(tmp_path / os.fsdecode(b"spec-\xff.yaml"), data)
    before = ledger_bytes(kit_root)
    result = pmos("assess", str(spec), "--cwd", str(work), "--task-id", "t")
    assert result.returncode == 2, result.stderr
    assert "could not be stored, so nothing was run" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (work / "ran").exists() and ledger_bytes(kit_root) == before
    good = write_spec(tmp_path / "spec-ok.yaml", data)
    assert pmos("assess", str(good), "--cwd", str(work), "--task-id", "t").returncode == 0


@pytest.mark.parametrize("blank", ["", "   ", "\t"])
def test_an_explicitly_blank_task_id_is_refused(cli, tmp_path, work, kit_root, blank):
    spec = write_spec(
        tmp_path / "s.yaml", {"expectations": [{"type": "test", "command": "touch ran"}]}
    )
    before = ledger_bytes(kit_root)
    result = cli("assess", str(spec), "--cwd", str(work), "--task-id", blank)
    assert result.exit_code == 2
    assert f"--task-id {blank!r} is empty" in result.stderr
    assert not (work / "ran").exists() and ledger_bytes(kit_root) == before
    result = cli("assess", str(spec), "--cwd", str(work), "--task-id", "t", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["task_id"] == "t"


def test_an_explicitly_blank_run_id_is_refused(cli, tmp_path, work, kit_root):
    spec = write_spec(
        tmp_path / "s.yaml", {"expectations": [{"type": "test", "command": "touch ran"}]}
    )
    before = ledger_bytes(kit_root)
    for args in (["--run-id", " "], [str(spec), "--run-id", ""]):
        result = cli("assess", *args, "--cwd", str(work))
        assert result.exit_code == 2 and "is empty" in result.stderr
    assert not (work / "ran").exists() and ledger_bytes(kit_root) == before


# ---------------------------------------------------------------- library: what to assess, history


def test_spec_to_assess_chooses_spec_or_run_contract(kit, cli, tmp_path):
    from pmos.assess.assessment import spec_to_assess
    from pmos.errors import BadInput

    spec_path = write_spec(
        tmp_path / "s.yaml", {"expectations": [{"type": "test", "command": "true"}]}
    )
    spec, run = spec_to_assess(kit, spec_path, None)
    assert (spec.source, run) == (str(spec_path), None)
    spec, run = spec_to_assess(kit, spec_path, "ghost")  # a spec needs no registered run
    assert (spec.source, run) == (str(spec_path), None)
    with pytest.raises(BadInput, match="'ghost' is not registered, so it has no contract"):
        spec_to_assess(kit, None, "ghost")
    with pytest.raises(BadInput, match="give a SPEC file, or --run-id"):
        spec_to_assess(kit, None, None)
    register(cli, tmp_path, CONTRACT)
    spec, run = spec_to_assess(kit, None, "run-1")
    assert spec.source == "contract:run-1" and run is not None and run["run_id"] == "run-1"
    assert [e.criterion_id for e in spec.expectations] == ["c1", "c2"]
    spec, run = spec_to_assess(kit, spec_path, "run-1")  # the spec wins, the run is kept
    assert spec.source == str(spec_path) and run is not None


def test_task_history_splits_latest_from_earlier(kit, cli, fixable, work):
    from pmos.assess.assessment import task_history

    with pytest.raises(BadInput, match="no assessment recorded for task 't1'"):
        task_history(kit, "t1")
    for _ in range(3):
        run_assess(cli, fixable, work)
    latest, earlier = task_history(kit, "t1")
    assert latest is not None and latest["attempt"] == 3
    assert [r["attempt"] for r in earlier] == [2, 1]
