"""Follow-up suggestions: dedupe keys, suppression, policy modes, tasks and their states."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import ledgerfiles
from conftest import ledger_bytes
from pmos.gate import writers
from pmos.tasks import followups
from pmos.tasks.followups import dedupe_key, normalise_location, normalise_title, suggestion_id
from runrecords import assess, check, defect, legacy_skip, register, verdict_with

PMOS = (sys.executable, "-m", "pmos")
SQL = defect("must-fix", "src/db.py:10", "SQL is built by string concatenation.", "Use params.")
SWALLOW = defect("should-fix", "src/api.py:42", "The handler swallows errors. It returns 200.")


def suggest(cli, run_id: str = "run-1", *policy: str) -> dict:
    args = ["followups", "suggest", "--run-id", run_id, "--json"]
    if policy:
        args += ["--policy", *policy]
    result = cli(*args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def by_title(report: dict) -> dict[str, dict]:
    return {s["title"]: s for s in report["suggestions"]}


def tasks(cli, *flags: str) -> list[dict]:
    result = cli("tasks", "list", "--json", *flags)
    assert result.exit_code == 0
    return json.loads(result.stdout)


def lines(root: Path, kind: str) -> list[dict]:
    """The records of ``kind`` as stored, oldest first."""
    return ledgerfiles.stored(root, kind)


@pytest.fixture
def run1(kit):
    register(kit)
    verdict_with(kit, defects=[SQL, SWALLOW])
    return "run-1"


# ---------------------------------------------------------------- keys


def test_normalisation_drops_case_space_punctuation_and_line_numbers():
    assert normalise_title("  SQL is built   by string-concatenation! ") == (
        "sql is built by string concatenation"
    )
    assert normalise_title("parse_date() returns 500") == "parse_date returns 500"
    for where in ("src/db.py:10", "SRC/db.py:99:7", "src\\db.py line 12", "src/db.py#L3-L9"):
        assert normalise_location(where) == "src/db.py", where
    assert normalise_location("src/db.py:10 in connect()") == "src/db.py in connect"


def test_dedupe_key_is_stable_across_runs_and_suggestion_id_is_per_run(kit, cli, run1):
    register(kit, "run-2")
    moved = defect("must-fix", "SRC/db.py:57", "SQL is built by  string concatenation!", "x")
    verdict_with(kit, "run-2", defects=[moved])
    first = by_title(suggest(cli, "run-1"))["SQL is built by string concatenation."]
    second = by_title(suggest(cli, "run-2"))["SQL is built by string concatenation!"]
    assert first["dedupeKey"] == second["dedupeKey"]
    assert first["dedupeBasis"] == "sql is built by string concatenation @ src/db.py"
    assert first["suggestionId"] != second["suggestionId"]
    assert first["suggestionId"] == suggestion_id("run-1", first["dedupeKey"])
    other = by_title(suggest(cli, "run-1", "suggest"))  # a different problem differs
    keys = {s["dedupeKey"] for s in other.values()}
    assert len(keys) == 2


def test_failed_check_keys_ignore_the_varying_reason(kit, cli):
    for run_id, reason in (("run-1", "3 tests failed in 1.2s"), ("run-2", "1 test failed")):
        register(kit, run_id)
        assess(
            kit,
            run_id,
            passed=False,
            checks=[check(0, True), check(1, False, reason=reason, criterion_id="c1")],
        )
    a, b = suggest(cli, "run-1")["suggestions"], suggest(cli, "run-2")["suggestions"]
    assert len(a) == len(b) == 1
    assert a[0]["dedupeKey"] == b[0]["dedupeKey"]
    assert a[0]["title"] == "Failing test check for criterion c1"
    assert a[0]["severity"] == "must-fix" and a[0]["evidenceRefs"] == ["workflow:check:1"]
    assert reason in b[0]["description"]


def test_dedupe_key_function_is_pure():
    assert dedupe_key("A b", "x.py:1") == dedupe_key("a   B", "X.py:2")
    assert dedupe_key("A b", "x.py") != dedupe_key("A c", "x.py")
    assert dedupe_key("returns 500", "api") != dedupe_key("returns 404", "api")


# ---------------------------------------------------------------- suppression


def test_suggestions_have_the_full_structure(kit, cli, run1, kit_root):
    report = suggest(cli)
    assert report["policy"] == "suggest" and report["policyMode"] == "persist_only"
    sql = by_title(report)["SQL is built by string concatenation."]
    assert sql["state"] == "suggested" and sql["suppressedReason"] is None
    assert sql["priority"] == "high" and sql["severity"] == "must-fix"
    assert sql["location"] == "src/db.py:10"
    assert sql["description"].endswith("Suggested fix: Use params.")
    assert sql["evidenceRefs"][0].endswith(":defect:0")
    assert sql["recommendation"]["policyQualified"] is True
    assert sql["recommendation"]["shouldCreate"] is False
    assert sql["source"]["type"] == "verdict_defect"
    for key in ("matchedTaskId", "matchedSuggestionId", "createdTaskId"):
        assert sql[key] is None
    assert len(lines(kit_root, "followups")) == 2
    assert cli("ledger", "verify", "--schema").exit_code == 0


def test_empty_or_generic_is_suppressed_but_specific_is_not(kit, cli):
    register(kit)
    verdict_with(
        kit,
        defects=[
            defect("must-fix", "general", "Improve code quality."),
            defect("must-fix", "n/a", "Add more tests"),
            defect("must-fix", "src/parser.py:3", "Add more tests"),  # names a place
            defect("must-fix", "general", "Null check missing in parse_date"),  # names a thing
        ],
    )
    report = suggest(cli, "run-1", "create")
    states = [(s["title"], s["state"], s["suppressedReason"]) for s in report["suggestions"]]
    assert states[0] == ("Improve code quality.", "suppressed", "empty_or_generic")
    assert states[1] == ("Add more tests", "suppressed", "empty_or_generic")
    assert states[2][1] == "created" and states[3][1] == "created"
    assert report["suggestions"][0]["recommendation"]["shouldCreate"] is False


def test_low_and_nit_are_insufficient_signal(kit, cli):
    register(kit)
    verdict_with(
        kit,
        defects=[
            defect("nit", "src/a.py", "Variable name tmp is unclear"),
            defect("low", "src/b.py", "Docstring of load_config is outdated"),
            defect("should-fix", "src/c.py", "Retry loop has no backoff"),
        ],
    )
    report = suggest(cli, "run-1", "create_all_non_duplicates")
    reasons = [s["suppressedReason"] for s in report["suggestions"]]
    assert reasons == ["insufficient_signal", "insufficient_signal", None]
    assert report["suggestions"][2]["state"] == "created"
    assert [s["priority"] for s in report["suggestions"]] == ["low", "low", "medium"]


def test_duplicate_prior_suggestion_for_the_same_run(kit, cli, run1):
    first = by_title(suggest(cli))
    second = by_title(suggest(cli))
    for title, earlier in first.items():
        again = second[title]
        assert again["state"] == "suppressed"
        assert again["suppressedReason"] == "duplicate_prior_suggestion"
        assert again["matchedSuggestionId"] == earlier["suggestionId"] == again["suggestionId"]


def test_same_problem_twice_in_one_verdict_is_a_prior_duplicate(kit, cli):
    register(kit)
    verdict_with(kit, defects=[SQL, defect("must-fix", "src/db.py:88", SQL["problem"], "x")])
    report = suggest(cli, "run-1", "create")
    first, second = report["suggestions"]
    assert first["state"] == "created"
    assert second["suppressedReason"] == "duplicate_prior_suggestion"
    assert second["matchedSuggestionId"] == first["suggestionId"]
    assert second["matchedTaskId"] == first["createdTaskId"]
    assert report["counts"] == {"suggested": 0, "suppressed": 1, "created": 1}


def test_duplicate_open_task_until_the_task_is_closed(kit, cli, run1):
    created = suggest(cli, "run-1", "create")
    task_id = created["createdTaskIds"][0]
    register(kit, "run-2")
    verdict_with(kit, "run-2", defects=[defect("must-fix", "src/db.py:12", SQL["problem"])])
    dup = suggest(cli, "run-2", "create")["suggestions"][0]
    assert dup["state"] == "suppressed" and dup["suppressedReason"] == "duplicate_open_task"
    assert dup["matchedTaskId"] == task_id and dup["createdTaskId"] is None
    assert cli("tasks", "close", task_id, "--note", "fixed").exit_code == 0
    register(kit, "run-3")
    verdict_with(kit, "run-3", defects=[defect("must-fix", "src/db.py:14", SQL["problem"])])
    fresh = suggest(cli, "run-3", "create")["suggestions"][0]
    assert fresh["state"] == "created" and fresh["createdTaskId"] != task_id


# ---------------------------------------------------------------- policy


@pytest.mark.parametrize("policy", ["off", "suggest", "persist_only"])
def test_persist_only_creates_nothing(kit, cli, run1, kit_root, policy):
    report = suggest(cli, "run-1", policy)
    assert report["policyMode"] == "persist_only"
    assert report["createdTaskIds"] == []
    assert all(s["state"] == "suggested" for s in report["suggestions"])
    assert all("persist_only" in s["recommendation"]["reason"] for s in report["suggestions"])
    assert lines(kit_root, "tasks") == []
    assert ledgerfiles.record_files(kit_root, "tasks") == []


@pytest.mark.parametrize("policy", ["create", "auto_create_qualified"])
def test_auto_create_qualified_creates_only_blocking_ones(kit, cli, run1, kit_root, policy):
    report = suggest(cli, "run-1", policy)
    assert report["policyMode"] == "auto_create_qualified"
    sql = by_title(report)["SQL is built by string concatenation."]
    swallow = by_title(report)["The handler swallows errors."]
    assert sql["state"] == "created" and sql["recommendation"]["shouldCreate"] is True
    assert swallow["state"] == "suggested"
    assert swallow["recommendation"] == {
        "shouldCreate": False,
        "policyQualified": False,
        "reason": "policy auto_create_qualified: below must-fix, so kept for review, not created",
    }
    stored = lines(kit_root, "tasks")
    assert len(stored) == 1
    task = stored[0]
    assert task["task_id"] == sql["createdTaskId"] == report["createdTaskIds"][0]
    assert task["event"] == "created" and task["state"] == "triage"
    assert task["parent_run_id"] == "run-1"
    assert task["provenance"] == {
        "type": "eval_follow_up",
        "run_id": "run-1",
        "suggestionId": sql["suggestionId"],
        "policyMode": "auto_create_qualified",
        "dedupeKey": sql["dedupeKey"],
    }
    assert task["context"]["expectedOutcome"] == "Use params."
    assert task["context"]["severity"] == "must-fix"
    assert task["context"]["evidenceRefs"] == sql["evidenceRefs"]
    assert task["context"]["overallScore"] is None


def test_create_all_non_duplicates_creates_below_must_fix_too(kit, cli, run1):
    report = suggest(cli, "run-1", "create_all_non_duplicates")
    assert {s["state"] for s in report["suggestions"]} == {"created"}
    assert len(tasks(cli)) == 2


def test_configured_policy_is_the_default(kit_root, cli, kit):
    config = kit_root / "pmos.yaml"
    text = config.read_text().replace("followup_policy: suggest", "followup_policy: create")
    config.write_text(text)
    register(kit)
    verdict_with(kit, defects=[SQL])
    report = suggest(cli)
    assert report["policy"] == "create" and report["counts"]["created"] == 1


def test_bad_policy_is_refused_and_nothing_written(cli, run1, kit_root):
    before = ledger_bytes(kit_root)
    result = cli("followups", "suggest", "--run-id", "run-1", "--policy", "always")
    assert result.exit_code == 2 and "'always' is not one of 'off', 'suggest'" in result.stderr
    assert ledger_bytes(kit_root) == before
    config = kit_root / "pmos.yaml"
    config.write_text(config.read_text().replace("followup_policy: suggest", "followup_policy: x"))
    result = cli("followups", "suggest", "--run-id", "run-1")
    assert result.exit_code == 2 and "followup_policy" in result.stderr


def test_overall_score_of_the_run_goes_into_the_task_context(kit, cli, run1, kit_root):
    evaluation = {
        "task_id": "task-A",
        "run_id": "run-1",
        "categories": {
            c: {"aiScore": 40, "rationale": "weak"}
            for c in ("agentPerformance", "taskOutcomeQuality", "processCompliance")
        },
    }
    recorded = cli("score", "record", "--file", "-", "--json", input=json.dumps(evaluation))
    assert recorded.exit_code == 0, recorded.output
    overall = json.loads(recorded.stdout)["overallScore"]
    suggest(cli, "run-1", "create")
    assert lines(kit_root, "tasks")[0]["context"]["overallScore"] == overall


# ---------------------------------------------------------------- never twice


def test_a_created_task_is_not_created_again(kit, cli, run1, kit_root):
    first = suggest(cli, "run-1", "create")
    assert len(first["createdTaskIds"]) == 1
    for policy in ("create", "create_all_non_duplicates"):
        again = suggest(cli, "run-1", policy)
        assert again["createdTaskIds"] == []
        sql = by_title(again)["SQL is built by string concatenation."]
        assert sql["matchedTaskId"] == first["createdTaskIds"][0]
    assert len(lines(kit_root, "tasks")) == 1


def test_a_task_left_by_an_interrupted_call_is_not_created_again(kit, cli, run1, kit_root):
    # The task of this very suggestion exists (and is closed) but no suggestion record does.
    key, _ = dedupe_key("SQL is built by string concatenation.", "src/db.py:10")
    sid = suggestion_id("run-1", key)
    task_id = followups.task_id_for(sid)
    from pmos.tasks.task_list import append_created, close_task, created_record

    fields = {
        "task_id": task_id,
        "title": "SQL is built by string concatenation.",
        "description": "d",
        "priority": "high",
        "severity": "must-fix",
        "dedupeKey": key,
        "parent_run_id": "run-1",
        "provenance": {
            "type": "eval_follow_up",
            "run_id": "run-1",
            "suggestionId": sid,
            "policyMode": "auto_create_qualified",
            "dedupeKey": key,
        },
        "context": {
            "problem": "p",
            "expectedOutcome": "o",
            "severity": "must-fix",
            "overallScore": None,
            "rationale": "r",
            "evidenceRefs": [],
        },
    }
    append_created(kit, lambda: [created_record(fields)])
    close_task(kit, task_id)
    report = suggest(cli, "run-1", "create")
    sql = by_title(report)["SQL is built by string concatenation."]
    assert sql["suppressedReason"] == "duplicate_prior_suggestion"
    assert sql["matchedTaskId"] == task_id
    assert report["createdTaskIds"] == []


def test_concurrent_suggest_processes_create_one_task(kit, kit_root, run1):
    procs = [
        subprocess.Popen(
            [*PMOS, "followups", "suggest", "--run-id", "run-1", "--policy", "create", "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    outputs = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs), outputs
    created = [json.loads(out)["createdTaskIds"] for out, _ in outputs]
    assert sorted(len(c) for c in created) == [0, 0, 0, 1]
    assert len(lines(kit_root, "tasks")) == 1
    assert len(lines(kit_root, "followups")) == 8


# ---------------------------------------------------------------- tasks


def test_tasks_list_and_close_append_only(kit, cli, run1, kit_root):
    task_id = suggest(cli, "run-1", "create")["createdTaskIds"][0]
    listed = tasks(cli, "--open")
    assert [t["task_id"] for t in listed] == [task_id]
    assert listed[0]["state"] == "triage" and listed[0]["open"] is True
    assert listed[0]["parent_run_id"] == "run-1"
    before = {p: p.read_bytes() for p in ledgerfiles.record_files(kit_root, "tasks")}
    result = cli("tasks", "close", task_id, "--note", "done in #12", "--by", "pm")
    assert result.exit_code == 0 and task_id in result.stdout
    after = {p: p.read_bytes() for p in ledgerfiles.record_files(kit_root, "tasks")}
    assert {p: after[p] for p in before} == before  # the created record is untouched
    assert len(after) == len(before) + 1  # the change is a record of its own
    change = lines(kit_root, "tasks")[-1]
    assert change["event"] == "state-change" and change["state"] == "closed"
    assert change["task_id"] == task_id and change["note"] == "done in #12"
    assert tasks(cli, "--open") == []
    closed = tasks(cli)
    assert closed[0]["state"] == "closed" and closed[0]["note"] == "done in #12"
    human = cli("tasks", "list")
    assert task_id in human.stdout and "closed" in human.stdout
    assert cli("ledger", "verify", "--schema").exit_code == 0


def test_closing_unknown_or_closed_task_is_bad_input(kit, cli, run1, kit_root):
    before = ledger_bytes(kit_root)
    result = cli("tasks", "close", "task-nope")
    assert result.exit_code == 2 and "no task 'task-nope'" in result.stderr
    assert ledger_bytes(kit_root) == before
    task_id = suggest(cli, "run-1", "create")["createdTaskIds"][0]
    assert cli("tasks", "close", task_id).exit_code == 0
    result = cli("tasks", "close", task_id)
    assert result.exit_code == 2 and "already closed" in result.stderr


def test_close_exit_code_in_a_real_process(pmos):
    proc = pmos("tasks", "close", "task-ghost")
    assert proc.returncode == 2 and "task-ghost" in proc.stderr


def test_task_schema_refuses_a_state_change_carrying_created_fields():
    from pmos import schemas

    record = {
        "record_id": "tk-1",
        "recorded_at": "2026-01-01T00:00:00Z",
        "schema_version": 1,
        "task_id": "task-1",
        "event": "state-change",
        "state": "closed",
        "title": "sneaky retitle",
    }
    assert schemas.validate("task", record)
    del record["title"]
    assert schemas.validate("task", record) == []


def test_run_without_findings_and_unknown_run(kit, cli):
    register(kit)
    verdict_with(kit)
    report = suggest(cli)
    assert report["suggestions"] == []
    assert any("lists no defects" in n for n in report["notes"])
    assert any("no assessment" in n for n in report["notes"])
    human = cli("followups", "suggest", "--run-id", "run-1")
    assert "0 suggested, 0 suppressed, 0 created" in human.stdout
    result = cli("followups", "suggest", "--run-id", "ghost")
    assert result.exit_code == 2


# ---------------------------------------------------------------- SKIPPED verdicts


def test_a_later_skip_does_not_hide_the_judged_verdicts_defects(kit, cli, run1):
    judged = json.loads(cli("ledger", "show", "evals", "--json").stdout)[-1]
    writers.record_short_verdict(
        kit, run_id="run-1", initiative_id="init-1", verdict="SKIPPED", skipped_reason="later"
    )
    report = suggest(cli)
    assert set(by_title(report)) == {
        "SQL is built by string concatenation.",
        "The handler swallows errors.",
    }
    assert {s["source"]["record_id"] for s in report["suggestions"]} == {judged["record_id"]}
    # every reference a suggestion cites is in the run's evidence bundle
    bundle = json.loads(cli("evidence", "--run-id", "run-1", "--json").stdout)
    ids = {e["id"] for g in bundle["groups"] for e in g["entries"]}
    for s in report["suggestions"]:
        assert set(s["evidenceRefs"]) <= ids, s["evidenceRefs"]


def test_a_skipped_verdicts_contents_never_become_suggestions(kit, cli):
    register(kit)
    legacy_skip(kit, defects=[SQL])
    report = suggest(cli)
    assert report["suggestions"] == []
    assert any("no judged verdict" in n and "SKIPPED" in n for n in report["notes"])
    # and a judged verdict before the skip still counts, the skip's defects do not
    verdict_with(kit, defects=[SWALLOW])
    legacy_skip(kit, defects=[SQL])
    report = suggest(cli)
    assert set(by_title(report)) == {"The handler swallows errors."}


def test_a_created_task_without_its_title_is_left_out_not_a_crash(kit, cli, run1, kit_root):
    suggest(cli, "run-1", "create_all_non_duplicates")
    assert len(tasks(cli)) == 2
    forged = ledgerfiles.rewrite(kit_root, "tasks", lambda records: records[1].pop("title"))
    result = cli("tasks", "list", "--json")
    assert result.exit_code == 0
    assert len(json.loads(result.stdout)) == 1  # the forged task does not count
    verify = cli("ledger", "verify")
    assert verify.exit_code == 1
    assert f"{forged[1]}: " in verify.stdout and "title" in verify.stdout


def test_a_suppressed_suggestion_without_its_reason_is_left_out(kit, cli, run1, kit_root):
    suggest(cli, "run-1")
    stored = lines(kit_root, "followups")
    index = len(stored) - 1
    assert stored[index]["suppressedReason"] is None

    def unexplain(records: list[dict]) -> None:
        records[index]["state"] = "suppressed"  # but no reason given

    forged = ledgerfiles.rewrite(kit_root, "followups", unexplain)
    result = cli("followups", "suggest", "--run-id", "run-1", "--json")
    assert result.exit_code == 0  # the forged record is left out
    verify = cli("ledger", "verify")
    assert verify.exit_code == 1
    assert f"{forged[index]}: " in verify.stdout and "suppressedReason" in verify.stdout


# ---------------------------------------------------------------- promote


def promote(cli, suggestion: str, *args: str):
    return cli("followups", "promote", suggestion, *args, "--json")


def test_promote_turns_a_reviewed_suggestion_into_a_task(cli, run1, kit_root):
    report = suggest(cli, "run-1", "suggest")
    swallow = by_title(report)["The handler swallows errors."]
    assert swallow["state"] == "suggested" and not tasks(cli)
    result = promote(cli, swallow["suggestionId"], "--by", "pm-ana", "--note", "users lose data")
    assert result.exit_code == 0, result.output
    task = json.loads(result.stdout)
    assert task["task_id"] == followups.task_id_for(swallow["suggestionId"])
    assert task["title"] == swallow["title"] and task["state"] == "triage"
    assert task["provenance"]["suggestionId"] == swallow["suggestionId"]
    assert task["by"] == "pm-ana" and task["note"] == "users lose data"
    # Built as suggest would have built it: the defect's fix is the expected outcome.
    assert task["context"]["expectedOutcome"] == SWALLOW["fix"]
    [listed] = tasks(cli)
    assert listed["task_id"] == task["task_id"] and listed["open"]


def test_promote_refuses_twice_unknown_ids_and_duplicates_writing_nothing(cli, run1, kit_root):
    report = suggest(cli, "run-1", "create")
    sql = by_title(report)["SQL is built by string concatenation."]
    swallow = by_title(report)["The handler swallows errors."]
    assert sql["state"] == "created"
    before = ledger_bytes(kit_root)
    for suggestion, message in (
        (sql["suggestionId"], "is already task"),
        ("sg-0000000000000000", "is not in the followups ledger"),
    ):
        result = promote(cli, suggestion)
        assert result.exit_code == 2 and message in result.stderr, result.stderr
    assert ledger_bytes(kit_root) == before
    assert promote(cli, swallow["suggestionId"]).exit_code == 0
    again = promote(cli, swallow["suggestionId"])
    assert again.exit_code == 2 and "is already task" in again.stderr


def test_promote_refuses_a_problem_an_open_task_already_tracks(kit, cli, run1):
    sql_task = suggest(cli, "run-1", "create")["createdTaskIds"][0]
    register(kit, "run-2")
    verdict_with(kit, "run-2", defects=[SQL])
    [dup] = suggest(cli, "run-2")["suggestions"]
    assert dup["suppressedReason"] == "duplicate_open_task"
    result = promote(cli, dup["suggestionId"])
    assert result.exit_code == 2 and sql_task in result.stderr
    assert cli("tasks", "close", sql_task).exit_code == 0
    assert promote(cli, dup["suggestionId"]).exit_code == 0


def test_a_suggestion_the_run_no_longer_yields_is_promoted_from_its_record(kit, cli, run1):
    swallow = by_title(suggest(cli, "run-1"))["The handler swallows errors."]
    verdict_with(kit, defects=[SQL])  # a newer verdict no longer reports it
    result = promote(cli, swallow["suggestionId"])
    assert result.exit_code == 0, result.output
    task = json.loads(result.stdout)
    assert task["context"]["expectedOutcome"] == swallow["expectedOutcome"]
