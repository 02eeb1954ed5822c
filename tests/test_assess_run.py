"""Deterministic checks and metrics, with real commands, through `pmos assess`."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from assess_support import alive, set_config, write_spec


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


def assess(cli, tmp_path: Path, work: Path, data: dict, *args: str):
    spec = write_spec(tmp_path / "spec.yaml", data)
    result = cli("assess", str(spec), "--cwd", str(work), "--task-id", "t1", "--json", *args)
    out = json.loads(result.stdout) if result.stdout.strip() else None
    return result, out


def test_passing_and_failing_test_and_script(cli, tmp_path, work):
    data = {
        "expectations": [
            {"type": "test", "command": "echo ok"},
            {"type": "test", "command": "echo broken >&2; exit 3"},
            {"type": "script", "command": "test 1 -eq 1"},
            {"type": "script", "command": "exit 7"},
        ]
    }
    result, out = assess(cli, tmp_path, work, data)
    assert result.exit_code == 1
    assert out["passed"] is False
    by_index = {c["index"]: c for c in out["checks"]}
    assert [by_index[i]["passed"] for i in range(4)] == [True, False, True, False]
    assert by_index[0]["exit_code"] == 0 and by_index[0]["output_tail"] == "ok\n"
    assert by_index[1]["exit_code"] == 3 and by_index[1]["reason"] == "exited 3"
    assert "broken" in by_index[1]["output_tail"]  # stderr is captured with stdout
    assert by_index[3]["exit_code"] == 7
    assert all(c["duration_s"] >= 0 for c in out["checks"])


def test_all_passing_exits_0(cli, tmp_path, work):
    (work / "a.txt").write_text("x")
    data = {
        "expectations": [
            {"type": "test", "command": "true"},
            {"type": "file_exists", "paths": ["a.txt"]},
        ],
        "metrics": [{"name": "m", "command": "echo 5", "threshold": 3}],
    }
    result, out = assess(cli, tmp_path, work, data)
    assert result.exit_code == 0, result.output
    assert out["passed"] is True and out["fix_attempts_left"] == 2


def test_only_exit_code_0_is_success(cli, tmp_path, work):
    # A spec cannot declare another success code, and a command exiting 1 fails.
    data = {"expectations": [{"type": "test", "command": "exit 1"}]}
    result, out = assess(cli, tmp_path, work, data)
    assert result.exit_code == 1 and out["checks"][0]["passed"] is False


def test_multi_line_script_stops_at_its_first_failing_line(cli, tmp_path, work):
    data = {
        "expectations": [
            {"type": "script", "command": "echo one > first.txt\nfalse\necho two > second.txt\n"},
            {"type": "script", "command": "echo a > x.txt\necho b >> x.txt\ngrep -q b x.txt\n"},
        ]
    }
    _result, out = assess(cli, tmp_path, work, data)
    failing, passing = out["checks"]
    assert failing["passed"] is False and failing["exit_code"] == 1
    assert (work / "first.txt").exists() and not (work / "second.txt").exists()
    assert passing["passed"] is True
    assert (work / "x.txt").read_text() == "a\nb\n"


def test_commands_run_in_cwd_with_bash(cli, tmp_path, work):
    data = {"expectations": [{"type": "test", "command": "[[ $(pwd) == */work ]] && pwd"}]}
    result, out = assess(cli, tmp_path, work, data)
    assert result.exit_code == 0, result.output
    assert out["checks"][0]["output_tail"].strip() == str(work.resolve())


def test_missing_files(cli, tmp_path, work):
    (work / "here.txt").write_text("x")
    (work / "dir").mkdir()
    data = {
        "expectations": [
            {"type": "file_exists", "paths": ["here.txt", "dir", "gone.txt", "dir/none"]},
            {"type": "file_exists", "paths": ["here.txt"]},
        ]
    }
    result, out = assess(cli, tmp_path, work, data)
    missing, present = out["checks"]
    assert result.exit_code == 1
    assert missing["passed"] is False
    assert missing["missing"] == ["gone.txt", "dir/none"]
    assert "gone.txt" in missing["reason"]
    assert present["passed"] is True and present["missing"] == []


@pytest.mark.parametrize(
    ("printed", "threshold", "passed"),
    [("0.95", 0.9, True), ("0.3", 0.3, True), ("90", 90, True), ("0.29", 0.3, False)],
    ids=["above", "at", "at-integer", "below"],
)
def test_metric_against_threshold(cli, tmp_path, work, printed, threshold, passed):
    data = {"metrics": [{"name": "coverage", "command": f"echo {printed}", "threshold": threshold}]}
    result, out = assess(cli, tmp_path, work, data)
    metric = out["metrics"][0]
    assert metric["passed"] is passed
    assert metric["value"] == float(printed) and metric["threshold"] == threshold
    assert result.exit_code == (0 if passed else 1)
    assert ("<" in metric["reason"]) is not passed


def test_metric_output_is_trimmed(cli, tmp_path, work):
    data = {"metrics": [{"name": "m", "command": "printf '  42\\n\\n'", "threshold": 42}]}
    _, out = assess(cli, tmp_path, work, data)
    assert out["metrics"][0]["value"] == 42 and out["metrics"][0]["passed"] is True


@pytest.mark.parametrize(
    "printed",
    ["coverage: 80%", "nan", "1 2", "", "inf", "\u0668\u0660", "\uff19\uff10"],
    ids=["text", "nan", "two", "empty", "inf", "arabic-indic-80", "fullwidth-90"],
)
def test_unparseable_metric_output_fails_and_is_shown(cli, tmp_path, work, printed):
    data = {"metrics": [{"name": "m", "command": f"printf %s '{printed}'", "threshold": 0}]}
    result, out = assess(cli, tmp_path, work, data)
    metric = out["metrics"][0]
    assert result.exit_code == 1
    assert metric["passed"] is False and metric["value"] is None
    assert metric["reason"] == f"stdout is not a number: {printed!r}"


def test_metric_whose_command_fails_does_not_pass(cli, tmp_path, work):
    data = {"metrics": [{"name": "m", "command": "echo 99; exit 2", "threshold": 1}]}
    _, out = assess(cli, tmp_path, work, data)
    assert out["metrics"][0]["passed"] is False
    assert out["metrics"][0]["reason"] == "exited 2"


def test_metrics_run_after_the_expectations(cli, tmp_path, work):
    data = {
        "expectations": [{"type": "script", "command": "sleep 0.3; echo 7 > value.txt"}],
        "metrics": [{"name": "v", "command": "cat value.txt", "threshold": 7}],
    }
    result, out = assess(cli, tmp_path, work, data)
    assert result.exit_code == 0, result.output
    assert out["metrics"][0]["value"] == 7


def test_timeout_kills_the_whole_process_group(cli, tmp_path, work, kit_root):
    set_config(kit_root, assess={"timeout_s": 1})
    command = "(sleep 60; touch late.txt) & echo $! > child.pid; sleep 60"
    data = {"expectations": [{"type": "test", "command": command}]}
    result, out = assess(cli, tmp_path, work, data)
    check = out["checks"][0]
    assert result.exit_code == 1
    assert check["passed"] is False and check["timed_out"] is True
    assert check["exit_code"] is None
    assert "timed out after 1 s" in check["reason"]
    assert "process group was killed" in check["reason"]
    child = int((work / "child.pid").read_text())
    deadline = time.monotonic() + 5
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child)


def test_background_processes_are_stopped_when_the_command_exits(cli, tmp_path, work):
    command = "(sleep 60; touch finished) & echo $! > bg.pid"
    data = {"expectations": [{"type": "test", "command": command}]}
    result, _out = assess(cli, tmp_path, work, data)
    assert result.exit_code == 0, result.output
    deadline = time.monotonic() + 5
    while alive(int((work / "bg.pid").read_text())) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(int((work / "bg.pid").read_text()))
    # Stopped, not waited for: the background job never got to finish.
    assert not (work / "finished").exists()


def barrier(i: int, n: int = 4) -> str:
    """A command that passes only once all n commands have started: run one after
    the other, the first would wait for the others until its timeout."""
    return f"touch started.{i}; until [ $(ls started.* | wc -l) -ge {n} ]; do sleep 0.05; done"


def test_checks_run_concurrently(cli, tmp_path, work, kit_root):
    set_config(kit_root, assess={"timeout_s": 30})
    data = {"expectations": [{"type": "test", "command": barrier(i)} for i in range(4)]}
    result, out = assess(cli, tmp_path, work, data)
    assert result.exit_code == 0, result.output
    assert [c["passed"] for c in out["checks"]] == [True] * 4


def test_metrics_run_concurrently(cli, tmp_path, work, kit_root):
    set_config(kit_root, assess={"timeout_s": 30})
    data = {
        "metrics": [
            {"name": f"m{i}", "command": f"{barrier(i)}; echo 1", "threshold": 1} for i in range(4)
        ]
    }
    result, out = assess(cli, tmp_path, work, data)
    assert result.exit_code == 0, result.output
    assert [m["passed"] for m in out["metrics"]] == [True] * 4


def test_output_is_bounded_to_its_last_4_kb(cli, tmp_path, work):
    data = {
        "expectations": [
            {"type": "test", "command": "head -c 100000 /dev/zero | tr '\\0' a; echo; echo END"}
        ]
    }
    _, out = assess(cli, tmp_path, work, data)
    check = out["checks"][0]
    assert check["output_bytes"] == 100005
    assert check["output_tail"].endswith("END\n")
    assert "earlier bytes dropped" in check["output_tail"]
    assert len(check["output_tail"].encode()) < 4096 + 100


def test_cwd_must_exist(cli, tmp_path, kit_root):
    from conftest import ledger_bytes

    before = ledger_bytes(kit_root)
    spec = write_spec(tmp_path / "s.yaml", {"expectations": [{"type": "test", "command": "true"}]})
    result = cli("assess", str(spec), "--cwd", str(tmp_path / "nope"))
    assert result.exit_code == 2
    assert "is not a folder" in result.stderr
    assert ledger_bytes(kit_root) == before


def test_exit_codes_from_a_real_process(pmos, tmp_path, work):
    good = write_spec(
        tmp_path / "good.yaml", {"expectations": [{"type": "test", "command": "true"}]}
    )
    bad = write_spec(
        tmp_path / "bad.yaml", {"expectations": [{"type": "test", "command": "false"}]}
    )
    invalid = write_spec(tmp_path / "invalid.yaml", {"expectations": [{"type": "tset"}]})
    assert pmos("assess", str(good), "--cwd", str(work)).returncode == 0
    assert pmos("assess", str(bad), "--cwd", str(work)).returncode == 1
    assert pmos("assess", str(invalid), "--cwd", str(work)).returncode == 2


@pytest.mark.parametrize("parent_ignores_sigint", [False, True])
def test_ctrl_c_kills_running_commands_and_writes_nothing(
    tmp_path, work, kit_root, parent_ignores_sigint
):
    """Also when pmos starts with SIGINT ignored, as a non-interactive shell's job does:
    pmos restores the default handling, for itself and for the commands it runs."""
    import os
    import signal
    import subprocess
    import sys

    from conftest import ledger_bytes

    def ignore_sigint() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    before = ledger_bytes(kit_root)
    command = (
        "awk '/^SigIgn/ {print $2}' /proc/$$/status > sigign.txt; "
        "sleep 60 & echo $! > sleep.tmp; mv sleep.tmp sleep.pid; wait"
    )
    spec = write_spec(tmp_path / "s.yaml", {"expectations": [{"type": "test", "command": command}]})
    proc = subprocess.Popen(
        [sys.executable, "-m", "pmos", "assess", str(spec), "--cwd", str(work)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
        preexec_fn=ignore_sigint if parent_ignores_sigint else None,
    )
    deadline = time.monotonic() + 20
    while not (work / "sleep.pid").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    # sleep.pid appears whole (renamed into place) once the sleep runs.
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=20)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr
    sleeper = int((work / "sleep.pid").read_text())
    deadline = time.monotonic() + 5
    while alive(sleeper) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(sleeper)
    assert ledger_bytes(kit_root) == before
    # The command itself started with SIGINT not ignored (bit 2 of the mask).
    ignored = int((work / "sigign.txt").read_text(), 16)
    assert not ignored & (1 << (signal.SIGINT - 1))


def test_human_output_is_a_table(cli, tmp_path, work):
    spec = write_spec(
        tmp_path / "s.yaml",
        {
            "expectations": [{"type": "test", "command": "printf 'boom\\033[2J\\n'; exit 1"}],
            "metrics": [{"name": "m", "command": "echo 1", "threshold": 2}],
        },
    )
    result = cli("assess", str(spec), "--cwd", str(work))
    assert result.exit_code == 1
    assert "FAILED" in result.stdout and "exited 1" in result.stdout
    assert "1 < threshold 2" in result.stdout
    assert "boom\\x1b[2J" in result.stdout and "\x1b" not in result.stdout
    assert "fix attempts left: 2" in result.stdout


def test_file_paths_are_relative_to_cwd_not_to_the_process(cli, tmp_path, work, kit_root):
    # The process runs in the kit root; --cwd is another folder.
    (kit_root / "only-in-kit.txt").write_text("x")
    (work / "sub").mkdir()
    (work / "sub" / "here.txt").write_text("x")
    data = {
        "expectations": [
            {"type": "file_exists", "paths": ["sub/here.txt", "./sub/../sub/here.txt"]},
            {"type": "file_exists", "paths": ["only-in-kit.txt"]},
        ]
    }
    result, out = assess(cli, tmp_path, work, data)
    assert result.exit_code == 1
    inside, kit_only = out["checks"]
    assert inside["passed"] is True
    assert kit_only["passed"] is False and kit_only["missing"] == ["only-in-kit.txt"]


def test_a_path_too_long_to_look_up_fails_its_check_with_the_reason(cli, tmp_path, work):
    (work / "a.txt").write_text("x")
    long_path = "a" * 5000
    data = {"expectations": [{"type": "file_exists", "paths": ["a.txt", long_path]}]}
    result, out = assess(cli, tmp_path, work, data)
    assert result.exit_code == 1, result.output
    (check,) = out["checks"]
    assert check["passed"] is False and check["missing"] == [long_path]
    assert "cannot be checked: File name too long" in check["reason"]
    assert "Traceback" not in result.output
    assert cli("ledger", "verify", "--schema").exit_code == 0


@pytest.mark.parametrize("timeout", [99999999999, 86401])
def test_assess_timeout_above_a_day_is_refused_before_anything_runs(
    cli, tmp_path, work, kit_root, timeout
):
    from conftest import ledger_bytes

    set_config(kit_root, assess={"timeout_s": timeout})
    before = ledger_bytes(kit_root)
    result, _ = assess(
        cli, tmp_path, work, {"expectations": [{"type": "test", "command": "touch ran"}]}
    )
    assert result.exit_code == 2
    assert "not a valid pmos config" in result.stderr and "assess/timeout_s" in result.stderr
    assert not (work / "ran").exists() and ledger_bytes(kit_root) == before


def test_assess_timeout_of_a_day_is_accepted(cli, tmp_path, work, kit_root):
    set_config(kit_root, assess={"timeout_s": 86400})
    result, out = assess(
        cli, tmp_path, work, {"expectations": [{"type": "test", "command": "true"}]}
    )
    assert result.exit_code == 0, result.output
    assert out["passed"] is True
