"""The exemplar log (parsing, override entries) and `pmos exemplars` anchor selection."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import good_verdict, ledger_bytes, write_json
from pmos.assets import kit_source
from pmos.gate.exemplars import (
    ExemplarLogError,
    parse_entry,
    parse_log,
    read_log,
    render_entry,
    render_markdown,
)
from pmos.kit import open_kit

LOG = "planning/evals/exemplars.yaml"
OVERRIDES = "planning/evals/overrides"


def entry(case_id: str = "case-1", **overrides) -> dict:
    data = {
        "case_id": case_id,
        "run_id": "run-9",
        "gate_verdict": "PASS",
        "pm_label": "fail",
        "override": True,
        "lesson": "The gate trusted a test that asserted nothing.",
        "recorded_at": "2026-11-01T10:00:00Z",
    }
    data.update(overrides)
    return data


def register(cli, run_id: str, builder: str = "claude-sonnet-4") -> None:
    result = cli(
        "run",
        "register",
        "--run-id",
        run_id,
        "--initiative-id",
        "init-1",
        "--builder-model",
        builder,
    )
    assert result.exit_code == 0, result.output


def judge(cli, tmp_path: Path, run_id: str, verdict: str) -> None:
    """Record a verdict of the given kind for run_id (registering the run first)."""
    register(cli, run_id)
    overrides: dict = {"run_id": run_id}
    if verdict == "FAIL":
        overrides.update(
            verdict="FAIL",
            criteria=[
                {
                    "id": "c1",
                    "result": "fail",
                    "evidence": "src/app.py:3 returns None",
                    "verified": True,
                },
                {"id": "c2", "result": "pass", "evidence": "README.md:40", "verified": True},
            ],
            axes={
                "spec": {"verdict": "fail", "rationale": "c1 failed"},
                "standards": {"verdict": "pass", "rationale": "no blocking defect"},
            },
        )
    elif verdict == "SKIPPED":
        result = cli("eval", "log", run_id, "init-1", "SKIPPED", "no time")
        assert result.exit_code == 0, result.output
        return
    path = write_json(tmp_path / f"{run_id}.json", good_verdict(**overrides))
    result = cli("eval", "record", "--file", str(path))
    assert result.exit_code == 0, result.output


def label(cli, run_id: str, value: str, note: str | None = None):
    args = ["accept", run_id, "--label", value, "--by", "pm-ana"]
    if note:
        args += ["--note", note]
    result = cli(*args)
    assert result.exit_code == 0, result.output
    return result


def log_entries(kit_root: Path) -> list[dict]:
    """Every entry of the exemplar log: the log file's and the override files'."""
    return read_log(open_kit(kit_root))


def log_state(kit_root: Path) -> dict[str, bytes]:
    """The log file and every override file, for 'nothing was written' checks."""
    files = [kit_root / LOG, *sorted((kit_root / OVERRIDES).glob("*"))]
    return {str(p): p.read_bytes() for p in files if p.exists()}


def exemplars_json(cli, *args: str) -> dict:
    result = cli("exemplars", "--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


# ---------------------------------------------------------------- the log format


def log_text(*entries: dict) -> str:
    """A log file holding ``entries`` (YAML data, as a PM writes it)."""
    import yaml

    return yaml.safe_dump({"entries": list(entries)}, sort_keys=False, allow_unicode=True)


def test_shipped_log_is_a_valid_log_without_entries():
    text = (kit_source() / LOG).read_text(encoding="utf-8")
    # The example entry sits in a comment and must not count.
    assert "run-42-override" in text
    assert parse_log(text) == []


def test_rendered_entries_round_trip_even_with_markup_in_the_lesson():
    tricky = entry(lesson="line one\n```\n### not a heading\n``````x\u2028y")
    assert parse_entry(render_entry(tricky)) == tricky
    assert parse_log(log_text(tricky, entry("case-2"))) == [tricky, entry("case-2")]


def test_the_log_is_rendered_as_markdown_for_people():
    shown = render_markdown([entry("c1", lesson="Use *care*\n# not a heading")], "log.yaml")
    assert shown.startswith("# Exemplar log (1 case(s))\n")
    assert "\n## c1\n" in shown and "- gate_verdict: PASS" in shown
    assert "> Use \\*care\\*\n> \\# not a heading\n" in shown


def test_unquoted_timestamps_stay_text():
    text = (
        "entries:\n  - case_id: c1\n    run_id: r\n    gate_verdict: FAIL\n    pm_label: fail\n"
        "    override: false\n    lesson: fine\n    recorded_at: 2026-11-30T08:15:00Z\n"
    )
    assert parse_log(text)[0]["recorded_at"] == "2026-11-30T08:15:00Z"


@pytest.mark.parametrize(
    ("text", "expected", "line"),
    [
        ("- a list\n", "is not of type 'object'", 1),
        ("entries:\n  - case_id: [\n", "not valid YAML", 3),
        ("entries: []\nnotes: x\n", "unknown field", 1),
        ("entries:\n  - 3\n", "is not of type 'object'", 2),
        ("entries:\n  - case_id: c1\n    case_id: c2\n", "repeated", 3),
    ],
)
def test_malformed_logs_are_refused_with_their_line(text, expected, line):
    with pytest.raises(ExemplarLogError) as err:
        parse_log(text, "log.yaml")
    assert expected in str(err.value)
    assert f"log.yaml:{line}:" in str(err.value)


def test_an_empty_log_file_holds_no_entry():
    assert parse_log("") == [] and parse_log("# only a comment\n") == []


def test_entry_rules_are_checked_and_every_problem_listed():
    bad_fields = entry("c1", pm_label="maybe")
    wrong_override = entry("c3", override=False)
    unknown = {**entry("c5"), "score": 3}
    with pytest.raises(ExemplarLogError) as err:
        parse_log(log_text(bad_fields, unknown))
    message = str(err.value)
    assert "pm_label" in message
    assert "score" in message and "unknown field" in message
    assert len(err.value.problems) == 2
    with pytest.raises(ExemplarLogError) as err:
        parse_log(log_text(entry("c2"), wrong_override, entry("c4"), entry("c4")))
    message = str(err.value)
    assert "override is false, but gate_verdict PASS and pm_label fail give true" in message
    assert "case_id 'c4' repeats (first used on line 16)" in message
    assert [line for line, _ in err.value.problems] == [9, 23]


def test_an_override_entry_file_holds_one_mapping():
    with pytest.raises(ExemplarLogError, match="one YAML mapping"):
        parse_entry(log_text(entry("c1")).replace("entries:\n", ""), "o.yaml")
    with pytest.raises(ExemplarLogError, match="pm_label"):
        parse_entry(render_entry(entry("c1")).replace("pm_label: fail", "pm_label: maybe"))


def test_exemplars_refuses_a_malformed_log(cli, kit_root):
    (kit_root / LOG).write_text("entries:\n  - case_id: oops\n", encoding="utf-8")
    result = cli("exemplars")
    assert result.exit_code == 2
    assert "planning/evals/exemplars.yaml:2:" in result.stderr
    assert "'gate_verdict' is a required property" in result.stderr


def test_exemplars_log_shows_every_entry_as_markdown_and_as_data(cli, kit_root, tmp_path):
    (kit_root / LOG).write_text(log_text(entry("hand-1", run_id="run-0")), encoding="utf-8")
    judge(cli, tmp_path, "run-1", "PASS")
    label(cli, "run-1", "fail", note="The retry loop swallowed the timeout.")
    shown = cli("exemplars", "--log")
    assert shown.exit_code == 0, shown.output
    assert "# Exemplar log (2 case(s))" in shown.stdout
    assert "## hand\\-1" in shown.stdout and "## run\\-1\\-override\\-" in shown.stdout
    data = json.loads(cli("exemplars", "--log", "--json").stdout)
    assert [e["run_id"] for e in data["entries"]] == ["run-0", "run-1"]
    assert data["log"] == str(kit_root / LOG)


def test_exemplar_log_may_not_leave_the_kit_root(cli, kit_root):
    config = kit_root / "pmos.yaml"
    config.write_text(
        config.read_text(encoding="utf-8").replace(
            "exemplar_log: planning/evals/exemplars.yaml", "exemplar_log: ../elsewhere.yaml"
        ),
        encoding="utf-8",
    )
    result = cli("exemplars")
    assert result.exit_code == 2
    assert "leaves the kit root" in result.stderr


# ---------------------------------------------------------------- overrides from pmos accept


def test_override_is_appended_to_the_log_and_announced(cli, kit_root, tmp_path):
    judge(cli, tmp_path, "run-1", "PASS")
    result = label(cli, "run-1", "fail", note="The retry loop swallowed the timeout.")
    assert "overrides the gate's PASS on run 'run-1'" in result.stderr
    assert "logged to planning/evals/overrides/run-1-override-" in result.stderr
    assert "(part of the exemplar log planning/evals/exemplars.yaml)" in result.stderr
    [logged] = log_entries(kit_root)
    acceptance = json.loads(cli("ledger", "show", "acceptances", "--json").stdout)[-1]
    verdict = json.loads(cli("ledger", "show", "evals", "--json").stdout)[-1]
    assert logged["case_id"].startswith("run-1-override-")
    assert logged["run_id"] == "run-1"
    assert (logged["gate_verdict"], logged["pm_label"], logged["override"]) == (
        "PASS",
        "fail",
        True,
    )
    assert logged["lesson"] == "The retry loop swallowed the timeout."
    assert logged["recorded_at"] == acceptance["recorded_at"]
    assert logged["gate_record_id"] == verdict["record_id"]
    assert logged["acceptance_record_id"] == acceptance["record_id"]
    assert logged["evaluator_model"] == "gpt-5"
    assert logged["by"] == "pm-ana"


def test_passing_a_failed_run_is_an_override_with_a_pending_lesson(cli, kit_root, tmp_path):
    judge(cli, tmp_path, "run-1", "FAIL")
    label(cli, "run-1", "pass")
    [logged] = log_entries(kit_root)
    assert (logged["gate_verdict"], logged["pm_label"]) == ("FAIL", "pass")
    assert logged["lesson"].startswith("Pending: the gate said FAIL")


@pytest.mark.parametrize(("verdict", "value"), [("PASS", "pass"), ("FAIL", "fail")])
def test_agreement_adds_no_entry(cli, kit_root, tmp_path, verdict, value):
    judge(cli, tmp_path, "run-1", verdict)
    before = log_state(kit_root)
    result = label(cli, "run-1", value)
    assert "overrides" not in result.stderr
    assert log_state(kit_root) == before


def test_a_label_without_a_judged_verdict_is_no_override(cli, kit_root, tmp_path):
    register(cli, "run-1")
    before = log_state(kit_root)
    label(cli, "run-1", "fail")
    judge(cli, tmp_path, "run-2", "SKIPPED")
    label(cli, "run-2", "fail")
    assert log_state(kit_root) == before


def test_the_latest_non_skipped_verdict_decides(cli, kit_root, tmp_path):
    judge(cli, tmp_path, "run-1", "PASS")
    assert cli("eval", "log", "run-1", "init-1", "SKIPPED", "rerun later").exit_code == 0
    label(cli, "run-1", "fail")
    [logged] = log_entries(kit_root)
    assert logged["gate_verdict"] == "PASS"


def test_the_same_override_is_logged_once(cli, kit_root, tmp_path):
    judge(cli, tmp_path, "run-1", "PASS")
    label(cli, "run-1", "fail")
    again = label(cli, "run-1", "fail")
    assert "already holds this override" in again.stderr
    assert len(log_entries(kit_root)) == 1


@pytest.mark.parametrize(
    "note",
    ["first\u2028second", "one\x85two", "para\u2029graph", "cr\rand\x0bvt\x1cfs\x0cff", "plain"],
    ids=["line-separator", "nel", "paragraph-separator", "other-breaks", "plain"],
)
def test_an_override_note_with_any_line_break_is_logged_once(cli, kit_root, tmp_path, note):
    """Issue 16 item 13: a note holding U+2028 or U+0085 was never logged, and
    each retry stored another label. It is logged, exactly, the first time."""
    judge(cli, tmp_path, "run-1", "PASS")
    first = label(cli, "run-1", "fail", note=note)
    assert "logged to planning/evals/overrides/" in first.stderr, first.stderr
    [logged] = log_entries(kit_root)
    assert logged["lesson"] == note
    again = label(cli, "run-1", "fail", note=note)
    assert "already holds this override" in again.stderr
    assert len(log_entries(kit_root)) == 1
    [entry_file] = (kit_root / OVERRIDES).iterdir()
    text = entry_file.read_text(encoding="utf-8")
    assert not set("\u2028\u2029\x85\r\x0b\x0c\x1c") & set(text)


def test_a_malformed_log_refuses_the_label_and_writes_nothing(cli, kit_root, tmp_path):
    judge(cli, tmp_path, "run-1", "PASS")
    (kit_root / LOG).write_text("entries: [broken\n", encoding="utf-8")
    before = ledger_bytes(kit_root)
    result = cli("accept", "run-1", "--label", "fail", "--by", "pm-ana")
    assert result.exit_code == 2
    assert "not a valid exemplar log" in result.stderr
    assert ledger_bytes(kit_root) == before
    assert (kit_root / LOG).read_text(encoding="utf-8") == "entries: [broken\n"
    assert not (kit_root / OVERRIDES).exists()


def test_a_malformed_log_does_not_block_a_label_that_agrees(cli, kit_root, tmp_path):
    judge(cli, tmp_path, "run-1", "PASS")
    (kit_root / LOG).write_text("entries: [broken\n", encoding="utf-8")
    assert cli("accept", "run-1", "--label", "pass", "--by", "pm-ana").exit_code == 0


def test_an_override_needs_no_log_file_and_never_changes_it(cli, kit_root, tmp_path):
    """Each override is a file of its own: the log file is not created or appended to,
    so two branches that each log an override never change the same path."""
    (kit_root / LOG).unlink()
    judge(cli, tmp_path, "run-1", "PASS")
    label(cli, "run-1", "fail")
    assert not (kit_root / LOG).exists()
    [entry_file] = (kit_root / OVERRIDES).iterdir()
    text = entry_file.read_text(encoding="utf-8")
    entry = parse_entry(text)
    assert entry_file.name == f"{entry['case_id']}.yaml"
    assert log_entries(kit_root) == [entry]


def test_a_case_logged_twice_is_refused(cli, kit_root, tmp_path):
    judge(cli, tmp_path, "run-1", "PASS")
    label(cli, "run-1", "fail")
    [entry_file] = (kit_root / OVERRIDES).iterdir()
    (kit_root / LOG).write_text(log_text(parse_entry(entry_file.read_text(encoding="utf-8"))))
    result = cli("exemplars")
    assert result.exit_code == 2
    assert "is logged twice" in result.stderr


def test_a_symlinked_override_folder_is_refused(cli, kit_root, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (kit_root / OVERRIDES).symlink_to(outside)
    judge(cli, tmp_path, "run-1", "PASS")
    result = cli("accept", "run-1", "--label", "fail", "--by", "pm-ana")
    assert result.exit_code == 2
    assert "symlink" in result.stderr
    assert list(outside.iterdir()) == []


def test_concurrent_overrides_each_reach_the_log(kit_root, cli, tmp_path):
    runs = [f"run-{i}" for i in range(6)]
    for run_id in runs:
        judge(cli, tmp_path, run_id, "PASS")
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "pmos", "accept", run_id, "--label", "fail", "--by", "pm"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for run_id in runs
    ]
    for proc in procs:
        proc.communicate(timeout=60)
        assert proc.returncode == 0
    assert sorted(e["run_id"] for e in log_entries(kit_root)) == runs


# ---------------------------------------------------------------- anchor selection


def test_no_case_at_all_is_disclosed_in_both_outputs(cli):
    data = exemplars_json(cli)
    assert data["anchors"] == []
    assert data["available"] == {"pass": 0, "fail": 0}
    assert data["balanced"] is False
    assert "No calibration case exists yet" in data["disclosures"][0]
    human = cli("exemplars")
    assert human.exit_code == 0
    assert "disclosure: No calibration case exists yet" in human.stdout


def test_a_one_sided_set_is_disclosed_not_padded(cli, tmp_path):
    for i in range(4):
        judge(cli, tmp_path, f"run-{i}", "PASS")
        label(cli, f"run-{i}", "pass")
    data = exemplars_json(cli, "--n", "4")
    assert [a["side"] for a in data["anchors"]] == ["pass", "pass"]
    assert data["available"] == {"pass": 4, "fail": 0}
    assert data["balanced"] is False
    assert any("No fail-side case exists" in d for d in data["disclosures"])
    human = cli("exemplars", "--n", "4")
    assert "disclosure: No fail-side case exists" in human.stdout
    assert "balanced: no" in human.stdout


def test_a_balanced_set_is_most_recent_first_with_kinds(cli, kit_root, tmp_path):
    judge(cli, tmp_path, "old-pass", "PASS")
    label(cli, "old-pass", "pass")
    judge(cli, tmp_path, "confirmed-fail", "FAIL")
    label(cli, "confirmed-fail", "fail")
    judge(cli, tmp_path, "overridden", "PASS")
    label(cli, "overridden", "fail", note="Missed the swallowed error.")
    judge(cli, tmp_path, "new-pass", "PASS")
    label(cli, "new-pass", "pass")
    judge(cli, tmp_path, "newest-pass", "PASS")
    label(cli, "newest-pass", "pass")
    data = exemplars_json(cli, "--n", "4")
    assert data["balanced"] is True
    assert data["disclosures"] == []
    assert data["available"] == {"pass": 3, "fail": 2}
    runs = [a["run_id"] for a in data["anchors"]]
    assert runs == ["newest-pass", "new-pass", "overridden", "confirmed-fail"]
    kinds = {a["run_id"]: a["kind"] for a in data["anchors"]}
    assert kinds == {
        "newest-pass": "confirmed-pass",
        "new-pass": "confirmed-pass",
        "overridden": "override",
        "confirmed-fail": "confirmed-fail",
    }
    override = next(a for a in data["anchors"] if a["run_id"] == "overridden")
    assert override["lesson"] == "Missed the swallowed error."
    assert override["source"] == "ledgers+log"
    assert override["case_id"].startswith("overridden-override-")


def test_an_odd_count_gives_the_fail_side_the_extra_anchor(cli, tmp_path):
    for i in range(3):
        judge(cli, tmp_path, f"p{i}", "PASS")
        label(cli, f"p{i}", "pass")
        judge(cli, tmp_path, f"f{i}", "FAIL")
        label(cli, f"f{i}", "fail")
    data = exemplars_json(cli, "--n", "3")
    assert sorted(a["side"] for a in data["anchors"]) == ["fail", "fail", "pass"]
    assert data["balanced"] is True


def test_a_short_side_is_disclosed(cli, tmp_path):
    for i in range(3):
        judge(cli, tmp_path, f"p{i}", "PASS")
        label(cli, f"p{i}", "pass")
    judge(cli, tmp_path, "f0", "FAIL")
    label(cli, "f0", "fail")
    data = exemplars_json(cli, "--n", "4")
    assert sorted(a["side"] for a in data["anchors"]) == ["fail", "pass", "pass"]
    assert any("Only 1 fail-side case(s) exist" in d for d in data["disclosures"])


def test_log_only_cases_count_and_a_relabelled_run_uses_its_current_label(cli, kit_root, tmp_path):
    log = kit_root / LOG
    history = entry("imported-case", run_id="run-from-before")
    log.write_text(log_text(history), encoding="utf-8")
    judge(cli, tmp_path, "run-1", "PASS")
    label(cli, "run-1", "fail", note="first thought")
    label(cli, "run-1", "pass")  # the PM changed their mind: agreement, the old lesson is stale
    data = exemplars_json(cli)
    by_run = {a["run_id"]: a for a in data["anchors"]}
    assert by_run["run-from-before"]["source"] == "log"
    assert by_run["run-from-before"]["kind"] == "override"
    assert by_run["run-1"]["pm_label"] == "pass"
    assert by_run["run-1"]["lesson"] is None
    assert by_run["run-1"]["source"] == "ledgers"


def test_skipped_verdicts_unlabelled_runs_and_excluded_runs_are_not_anchors(cli, tmp_path):
    judge(cli, tmp_path, "skipped", "SKIPPED")
    label(cli, "skipped", "fail")
    judge(cli, tmp_path, "unlabelled", "PASS")
    judge(cli, tmp_path, "current", "PASS")
    label(cli, "current", "pass")
    judge(cli, tmp_path, "other", "FAIL")
    label(cli, "other", "fail")
    data = exemplars_json(cli, "--exclude-run", "current")
    assert [a["run_id"] for a in data["anchors"]] == ["other"]


@pytest.mark.parametrize("n", ["1", "5"])
def test_anchor_count_out_of_range_is_a_usage_error(cli, n):
    result = cli("exemplars", "--n", n)
    assert result.exit_code == 2


# ---------------------------------------------------------------- constant-time logging (11.9)


def test_logging_an_override_reads_only_that_runs_entries(cli, kit_root, tmp_path):
    """The cost of an override does not grow with the log: only the entry files of
    the labelled run are read. Shown with another run's entry broken on purpose:
    the override is still logged, while reading the whole log reports the break."""
    for run in ("run-1", "run-2"):
        judge(cli, tmp_path, run, "PASS")
    label(cli, "run-1", "fail")
    [first] = (kit_root / OVERRIDES).iterdir()
    first.write_text("### broken\n", encoding="utf-8")
    assert label(cli, "run-2", "fail").exit_code == 0
    assert len(list((kit_root / OVERRIDES).iterdir())) == 2
    assert cli("exemplars").exit_code == 2


def test_a_lesson_written_by_the_pm_is_kept_and_the_override_logged_once(cli, kit_root, tmp_path):
    judge(cli, tmp_path, "run-1", "PASS")
    label(cli, "run-1", "fail")
    [entry_file] = (kit_root / OVERRIDES).iterdir()
    text = entry_file.read_text(encoding="utf-8")
    assert "Pending: the gate said PASS" in text
    entry_file.write_text(text.replace("Pending: the gate said PASS", "Written by the PM. PASS"))
    again = label(cli, "run-1", "fail")
    assert "already holds this override" in again.stderr
    [logged] = log_entries(kit_root)
    assert logged["lesson"].startswith("Written by the PM.")
