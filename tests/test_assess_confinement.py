"""What `pmos assess` confines, each case an attack that once worked (issue 16, items 1-8).

Real commands, real reviewer processes, real git: the attacks are races,
background processes and repository configuration, which only real processes
reproduce.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from assess_support import alive, calls, jury, reviewer, scores, set_config, write_spec
from conftest import ledger_bytes, pmos_process
from pmos.assess import beneath
from pmos.assess.shepherd import process_table

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "a.txt").write_text("hello\n")
    return folder


@pytest.fixture(autouse=True)
def _no_judge_env(monkeypatch):
    for name in ("PMOS_JUDGE_MODEL", "PMOS_MODEL"):
        monkeypatch.delenv(name, raising=False)


def _assess(cli, tmp_path: Path, cwd: Path, data: dict, *args: str):
    spec = write_spec(tmp_path / "spec.yaml", data)
    result = cli("assess", str(spec), "--cwd", str(cwd), "--task-id", "t", "--json", *args)
    out = json.loads(result.stdout) if result.stdout.strip() else None
    return result, out


def _prompts(folder: Path) -> list[str]:
    return [p.read_text() for p in sorted(folder.iterdir())]


def _wait_dead(pid: int, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not alive(pid)


# ---------------------------------------------------------------- 1: the symlink race


def test_a_check_swapping_a_folder_for_a_link_never_leaks_the_outside_file(cli, tmp_path, work):
    """Item 1: a script keeps swapping sub/ with a link to ../outside while 30
    reviews read sub/secret.txt; no prompt may hold the outside file, and the
    assessment is stored whatever the reads hit."""
    (work / "sub").mkdir()
    (work / "sub" / "secret.txt").write_text("inside text\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("OUTSIDE-SECRET\n")
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    reviews = 30
    # A reviewer answers only once the swapper runs, so every wave of reviews
    # after the first gathers its evidence while the folder is being swapped.
    command = reviewer(tmp_path, "a", scores=scores(4), prompt_dir=str(prompts))
    wait = "while [ ! -e started ]; do sleep 0.01; done; "
    set_config(
        tmp_path / "kit",
        review={"jury": [{"name": "a", "model": "m", "command": wait + command}]},
    )
    # Swap until every review has written its prompt (bounded at 120 s).
    swapper = (
        "n=0; touch started\n"
        f"while [ $(ls {prompts} | wc -l) -lt {reviews} ] && [ $SECONDS -lt 120 ]; do\n"
        "  mv sub sub.real && ln -s ../outside sub && rm sub && mv sub.real sub\n"
        "  n=$((n+1))\n"
        "done\n"
        "echo swaps=$n\n"
    )
    expectations = [{"type": "script", "command": swapper}]
    expectations += [
        {"type": "llm_review", "criteria": "c", "files": ["sub/secret.txt"]} for _ in range(reviews)
    ]
    result, out = _assess(cli, tmp_path, work, {"expectations": expectations})
    assert result.exit_code in (0, 1), result.output
    assert "Traceback" not in result.output
    texts = _prompts(prompts)
    assert len(texts) == reviews
    assert not any("OUTSIDE-SECRET" in t for t in texts)
    swaps = int(out["checks"][0]["output_tail"].split("swaps=")[1])
    assert swaps > 0
    shown = sum("=== file sub/secret.txt ===\ninside text" in t for t in texts)
    refused = sum("(not shown: it is a symbolic link" in t for t in texts)
    missing = sum("(cannot be read: No such file" in t for t in texts)
    assert shown + refused + missing == reviews
    history = json.loads(cli("assess", "history", "t", "--json").stdout)
    assert history["latest"]["record_id"] == out["record_id"]


@pytest.mark.parametrize("opener", ["open_beneath", "walk_beneath"])
def test_reading_beneath_a_folder_being_swapped_never_follows_the_link(tmp_path, opener):
    """Item 1, at the opener: both the openat2 path and the portable walk refuse
    the link every time a thread swaps it in, over thousands of reads."""
    work = tmp_path / "w"
    (work / "sub").mkdir(parents=True)
    (work / "sub" / "f.txt").write_text("inside")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "f.txt").write_text("OUTSIDE")
    stop = threading.Event()

    def swap() -> None:
        while not stop.is_set():
            os.rename(work / "sub", work / "sub.real")
            os.symlink("../out", work / "sub")
            time.sleep(0.0001)  # let reads meet the link...
            os.unlink(work / "sub")
            os.rename(work / "sub.real", work / "sub")
            time.sleep(0.0001)  # ...and the real folder

    thread = threading.Thread(target=swap)
    thread.start()
    fd = beneath.open_dir(work)
    outcomes: dict[str, int] = {}
    try:
        # Read until both outcomes were seen many times (bounded), so the
        # race is really run whatever the machine's load.
        for _ in range(200_000):
            refused = outcomes.get(f"errno {errno.ELOOP}", 0)
            if outcomes.get("inside", 0) >= 50 and refused >= 50:
                break
            try:
                if opener == "open_beneath":
                    data, _ = beneath.read_beneath(fd, "sub/f.txt", 100)
                else:
                    got = beneath.walk_beneath(fd, "sub/f.txt", follow_links=False)
                    data = os.read(got, 100)
                    os.close(got)
                key = data.decode()
            except OSError as exc:
                key = f"errno {exc.errno}"
            outcomes[key] = outcomes.get(key, 0) + 1
    finally:
        stop.set()
        thread.join()
        os.close(fd)
    assert "OUTSIDE" not in outcomes
    assert outcomes.get("inside", 0) >= 50, outcomes
    assert outcomes.get(f"errno {errno.ELOOP}", 0) >= 50, outcomes


def test_an_evidence_error_fails_its_check_and_keeps_the_assessment(
    cli, tmp_path, work, monkeypatch
):
    """Item 1: evidence that cannot be gathered fails that check with the reason;
    the other checks' results are stored."""
    from pmos.assess import jury as jury_lib

    def broken(exp, context):
        raise OSError(40, "Too many levels of symbolic links")

    monkeypatch.setattr(jury_lib, "gather_evidence", broken)
    set_config(tmp_path / "kit", review=jury(tmp_path, {"a": {"scores": scores(4)}}))
    data = {
        "expectations": [
            {"type": "test", "command": "touch ran.txt"},
            {"type": "llm_review", "criteria": "c"},
        ]
    }
    result, out = _assess(cli, tmp_path, work, data)
    assert result.exit_code == 1
    ran, review = out["checks"]
    assert ran["passed"] is True and (work / "ran.txt").exists()
    assert review["passed"] is False
    assert "the evidence could not be gathered, so no reviewer was asked" in review["reason"]
    assert calls(tmp_path, "a") == 0


# ---------------------------------------------------------------- 2 and 3: git evidence


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t", *args],
        check=True,
        capture_output=True,
    )


def _review_prompt(cli, tmp_path: Path, cwd: Path) -> str:
    prompts = tmp_path / "prompts"
    prompts.mkdir(exist_ok=True)
    set_config(
        tmp_path / "kit",
        review=jury(tmp_path, {"a": {"scores": scores(4), "prompt_dir": str(prompts)}}),
    )
    result, _ = _assess(
        cli, tmp_path, cwd, {"expectations": [{"type": "llm_review", "criteria": "c"}]}
    )
    assert result.exit_code == 0, result.output
    (prompt,) = _prompts(prompts)
    return prompt


def test_git_changes_outside_cwd_never_reach_the_reviewers(cli, tmp_path):
    """Item 2: with --cwd repo/app, a change in repo/config stays out of the prompt."""
    repo = tmp_path / "repo"
    (repo / "app").mkdir(parents=True)
    (repo / "config").mkdir()
    (repo / "app" / "main.py").write_text("print('v1')\n")
    (repo / "config" / "secret.env").write_text("API_KEY=old\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base")
    (repo / "app" / "main.py").write_text("print('v2')\n")
    (repo / "app" / "new.py").write_text("x = 1\n")
    (repo / "config" / "secret.env").write_text("API_KEY=sk-live-1234\n")
    (repo / "config" / "other.env").write_text("TOKEN=t\n")
    prompt = _review_prompt(cli, tmp_path, repo / "app")
    assert " M main.py" in prompt and "?? new.py" in prompt
    assert "+print('v2')" in prompt
    assert "secret.env" not in prompt and "API_KEY" not in prompt
    assert "other.env" not in prompt and "sk-live" not in prompt


def test_git_runs_no_filter_textconv_external_diff_or_fsmonitor_of_the_repo(cli, tmp_path):
    """Item 3: what the assessed repository configures never runs while evidence
    is gathered; plain git, in the same repository, runs each of them."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.txt").write_text("one\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base")
    markers = tmp_path / "markers"
    markers.mkdir()
    ext = tmp_path / "ext.sh"
    ext.write_text(f"#!/bin/sh\ntouch {markers}/external-diff\n")
    fsmonitor = tmp_path / "fsmonitor.sh"
    fsmonitor.write_text(f"#!/bin/sh\ntouch {markers}/fsmonitor\nexit 1\n")
    for script in (ext, fsmonitor):
        script.chmod(0o755)
    (repo / ".gitattributes").write_text("*.txt filter=pwn diff=pwn2\n")
    _git(repo, "config", "filter.pwn.clean", f"touch {markers}/clean-filter; cat")
    _git(repo, "config", "filter.pwn.smudge", f"touch {markers}/smudge-filter; cat")
    _git(repo, "config", "diff.pwn2.textconv", f"sh -c 'touch {markers}/textconv; cat \"$0\"'")
    _git(repo, "config", "diff.external", str(ext))
    _git(repo, "config", "core.fsmonitor", str(fsmonitor))
    (repo / "a.txt").write_text("one\ntwo\n")

    # The attack is real: plain git runs every one of them.
    subprocess.run(["git", "-C", str(repo), "status"], capture_output=True, check=False)
    subprocess.run(["git", "-C", str(repo), "diff", "HEAD"], capture_output=True, check=False)
    subprocess.run(
        ["git", "-C", str(repo), "diff", "--no-ext-diff", "HEAD"], capture_output=True, check=False
    )
    ran = {p.name for p in markers.iterdir()}
    assert ran >= {"clean-filter", "textconv", "external-diff", "fsmonitor"}
    for marker in markers.iterdir():
        marker.unlink()

    prompt = _review_prompt(cli, tmp_path, repo)
    assert list(markers.iterdir()) == []
    assert "+two" in prompt and " M a.txt" in prompt


# ---------------------------------------------------------------- 4: the environment


def test_commands_get_a_minimal_environment_and_the_allowed_names(cli, tmp_path, work, monkeypatch):
    """Item 4: a reviewer and a check see PATH but not the assessor's secrets,
    unless assess.env_allow names them."""
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret")
    monkeypatch.setenv("GITHUB_TOKEN", "gh-secret")
    monkeypatch.setenv("MY_TOOL_HOME", "/opt/tool")
    seen = tmp_path / "seen"
    seen.mkdir()
    command = reviewer(tmp_path, "a", scores=scores(4))
    set_config(
        tmp_path / "kit",
        review={
            "jury": [{"name": "a", "model": "m-a", "command": f"env > {seen}/reviewer; {command}"}]
        },
    )
    data = {
        "expectations": [
            {"type": "test", "command": f"env > {seen}/check"},
            {"type": "llm_review", "criteria": "c"},
        ],
        "metrics": [{"name": "m", "command": f"env > {seen}/metric; echo 1", "threshold": 1}],
    }
    result, _ = _assess(cli, tmp_path, work, data)
    assert result.exit_code == 0, result.output
    for who in ("check", "reviewer", "metric"):
        names = {line.split("=", 1)[0] for line in (seen / who).read_text().splitlines()}
        assert "PATH" in names and "HOME" in names, who
        assert not names & {"AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "MY_TOOL_HOME"}, who
    assert "PMOS_JUDGE_MODEL=m-a" in (seen / "reviewer").read_text()

    set_config(
        tmp_path / "kit",
        assess={"env_allow": ["AWS_SECRET_ACCESS_KEY", "MY_*"]},
        review={
            "jury": [{"name": "a", "model": "m-a", "command": f"env > {seen}/reviewer; {command}"}]
        },
    )
    result, _ = _assess(cli, tmp_path, work, data)
    assert result.exit_code == 0, result.output
    for who in ("check", "reviewer", "metric"):
        text = (seen / who).read_text()
        assert "AWS_SECRET_ACCESS_KEY=aws-secret" in text and "MY_TOOL_HOME=/opt/tool" in text
        assert "GITHUB_TOKEN" not in text


@pytest.mark.parametrize("entry", ["A-B", "*", "1ABC", "PATH**", ""])
def test_env_allow_entries_must_be_names_or_prefixes(cli, tmp_path, work, entry):
    set_config(tmp_path / "kit", assess={"env_allow": [entry]})
    result, _ = _assess(
        cli, tmp_path, work, {"expectations": [{"type": "test", "command": "true"}]}
    )
    assert result.exit_code == 2
    assert "assess/env_allow/0" in result.stderr


# ---------------------------------------------------------------- 5: background processes


def test_setsid_and_double_forked_processes_are_stopped_and_reported(tmp_path, work):
    """Item 5: processes that leave the group (setsid) or the tree (double fork)
    do not outlive pmos assess, and the check says what it left behind."""
    command = (
        "setsid bash -c 'echo $$ > s.pid; exec sleep 1005' &\n"
        "( bash -c 'echo $$ > d.pid; exec sleep 1006' & )\n"
        "while [ ! -s s.pid ] || [ ! -s d.pid ]; do sleep 0.01; done\n"
    )
    spec = write_spec(
        tmp_path / "s.yaml", {"expectations": [{"type": "script", "command": command}]}
    )
    done = pmos_process("assess", str(spec), "--cwd", str(work), "--task-id", "t", "--json")
    assert done.returncode == 0, done.stderr
    pids = [int((work / name).read_text()) for name in ("s.pid", "d.pid")]
    assert all(_wait_dead(pid) for pid in pids)
    (check,) = json.loads(done.stdout)["checks"]
    assert check["passed"] is True and check["left_running"] == 2
    assert (
        "it left 2 process(es) running (sleep) after it exited; pmos stopped them"
        in (check["reason"])
    )
    assert "check 0 (script) left 2 process(es) running" in done.stderr


def test_the_process_table_gives_each_process_its_session_and_parent():
    """pmos adopts only processes outside its own session, so the table must
    give the session itself, not the terminal (the field after it in
    /proc/PID/stat): both are 0 for a CI runner's processes, which live in the
    kernel's session 0 with no terminal, and reading the terminal there made
    pmos take its orphans for its own and leave them running."""
    mine = subprocess.Popen(["sleep", "30"])
    apart = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        table = process_table()
        assert table[os.getpid()][1:3] == (os.getppid(), os.getsid(0))
        assert table[mine.pid][1:3] == (os.getpid(), os.getsid(0))
        assert table[apart.pid][1:3] == (os.getpid(), apart.pid)
        assert table[apart.pid][0] == "sleep"
    finally:
        for child in (mine, apart):
            child.kill()
            child.wait()


def _marked(marker: str) -> list[int]:
    """Live processes (zombies excluded) whose command line holds ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline and alive(int(entry)):
                found.append(int(entry))
    return found


def _none_marked(marker: str, seconds: float = 10) -> list[int]:
    """Poll until no process holds ``marker`` (bounded); those still alive."""
    deadline = time.monotonic() + seconds
    while (left := _marked(marker)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return left


#: Starts a setsid grandchild and a double-forked one, both sleeping, and waits
#: until both run before going on (they touch a file before they exec sleep).
_STRAYS = (
    "setsid bash -c 'touch s.ready; exec -a {m}-s sleep 1010' &\n"
    "( bash -c 'touch d.ready; exec -a {m}-d sleep 1011' & )\n"
    "while [ ! -e s.ready ] || [ ! -e d.ready ]; do sleep 0.01; done\n"
)


@pytest.mark.parametrize(
    ("then", "reason"),
    [
        ("", "it left 2 process(es) running"),
        ("kill -9 $PPID\nexec -a {m}-b sleep 1012\n", "the process supervising the command died"),
        ("kill -STOP $PPID\necho stopped it\n", "the process supervising the command was stopped"),
    ],
    ids=["exits", "kills-its-shepherd", "stops-its-shepherd"],
)
def test_nothing_a_check_starts_outlives_pmos_whatever_it_does_to_its_parent(
    tmp_path, work, then, reason
):
    """Issue 29, item 2: the shepherd is the command's parent, so the command
    can kill or stop it; pmos itself adopts and stops what the command started.
    A stopped shepherd is killed at once rather than left to the timeout (the
    default, 600 s, is longer than this test's own timeout)."""
    marker = f"pmos-stray-{os.getpid()}-{time.monotonic_ns()}"
    command = (_STRAYS + then).format(m=marker)
    spec = write_spec(
        tmp_path / "s.yaml", {"expectations": [{"type": "script", "command": command}]}
    )
    done = pmos_process("assess", str(spec), "--cwd", str(work), "--task-id", "t", "--json")
    assert _none_marked(marker) == []
    assert "Traceback" not in done.stderr
    (check,) = json.loads(done.stdout)["checks"]
    assert reason in check["reason"]
    assert done.returncode == (0 if not then else 1), done.stderr
    assert check["passed"] is (not then)


def test_pmos_stops_only_what_the_check_that_killed_its_shepherd_started(tmp_path, work):
    """While check 0 kills its shepherd, check 1 runs on under its own: pmos
    stops what check 0 started (check 1 waits to see it gone) and leaves check 1,
    its shepherd and what it started alone, so check 1's shepherd reports that
    as its own."""
    marker = f"pmos-stray-{os.getpid()}-{time.monotonic_ns()}"
    killer = (
        f"setsid bash -c 'touch a.ready; exec -a {marker}-a sleep 1013' &\n"
        "while [ ! -e a.ready ] || [ ! -e b.ready ]; do sleep 0.01; done\n"
        "kill -9 $PPID\n"
    )
    bystander = (
        f"setsid bash -c 'touch b.ready; exec -a {marker}-b sleep 1014' &\n"
        "while [ ! -e a.ready ] || [ ! -e b.ready ]; do sleep 0.01; done\n"
        # The pattern is assembled, so that no command line holds it but the
        # one of check 0's process (bounded at 30 s, so a regression fails).
        f"m={marker}\n"
        'while pgrep -f "$m-a" > /dev/null && [ $SECONDS -lt 30 ]; do sleep 0.01; done\n'
        'pgrep -f "$m-a" > /dev/null || echo "the other check\'s process is gone"\n'
    )
    checks = [{"type": "script", "command": c} for c in (killer, bystander)]
    spec = write_spec(tmp_path / "s.yaml", {"expectations": checks})
    done = pmos_process("assess", str(spec), "--cwd", str(work), "--task-id", "t", "--json")
    assert _none_marked(marker) == []
    first, second = json.loads(done.stdout)["checks"]
    assert "the process supervising the command died" in first["reason"]
    assert second["passed"] is True, second
    assert "the other check's process is gone" in second["output_tail"]
    assert second["left_running"] == 1
    assert done.returncode == 1, done.stderr


def test_a_timed_out_command_is_stopped_with_what_it_setsid_started(tmp_path, work, kit_root):
    set_config(kit_root, assess={"timeout_s": 1})
    command = "setsid bash -c 'echo $$ > s.pid; exec sleep 1007' &\nsleep 60\n"
    spec = write_spec(
        tmp_path / "s.yaml", {"expectations": [{"type": "script", "command": command}]}
    )
    done = pmos_process("assess", str(spec), "--cwd", str(work), "--json")
    assert done.returncode == 1, done.stderr
    (check,) = json.loads(done.stdout)["checks"]
    assert check["timed_out"] is True and "left_running" not in check
    assert _wait_dead(int((work / "s.pid").read_text()))


def test_processes_are_stopped_when_pmos_itself_is_killed(tmp_path, work):
    """Item 5: even a SIGKILLed pmos leaves nothing behind (the shepherd's
    parent-death signal)."""
    # s.pid appears whole (renamed into place) once the setsid process runs:
    # the readiness signal to kill pmos on.
    command = "setsid bash -c 'echo $$ > s.tmp; mv s.tmp s.pid; exec sleep 1008' &\nsleep 1009\n"
    spec = write_spec(
        tmp_path / "s.yaml", {"expectations": [{"type": "script", "command": command}]}
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "pmos", "assess", str(spec), "--cwd", str(work)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while not (work / "s.pid").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert _wait_dead(int((work / "s.pid").read_text()), 10)


def test_commands_start_with_default_signal_handling(tmp_path, work):
    """A pmos started with SIGINT ignored (as a background job is) must not hand
    that on: a check's own Ctrl-C handling has to work."""
    command = "kill -INT $$; sleep 5; echo survived"
    spec = write_spec(tmp_path / "s.yaml", {"expectations": [{"type": "test", "command": command}]})
    proc = subprocess.run(
        [sys.executable, "-m", "pmos", "assess", str(spec), "--cwd", str(work), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    (check,) = json.loads(proc.stdout)["checks"]
    assert check["exit_code"] == -signal.SIGINT and "survived" not in check["output_tail"]


# ---------------------------------------------------------------- 6: can it be recorded?


def test_nothing_runs_when_the_assessment_could_not_be_stored(tmp_path, work, kit_root):
    """Item 6: with state/ read-only, no command runs and pmos exits 2."""
    spec = write_spec(
        tmp_path / "s.yaml", {"expectations": [{"type": "test", "command": "touch ran.txt"}]}
    )
    before = ledger_bytes(kit_root)
    state = kit_root / "state"
    args = [sys.executable, "-m", "pmos", "assess", str(spec), "--cwd", str(work)]
    if IS_ROOT and shutil.which("unshare"):
        # Root ignores file modes: make state/ a read-only mount, in a private
        # mount namespace that ends with the process.
        script = (
            f'mount --bind "{state}" "{state}" && mount -o remount,bind,ro "{state}" && exec "$@"'
        )
        done = subprocess.run(
            ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", *args],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if "Operation not permitted" in done.stderr and "mount" in done.stderr:
            pytest.skip("this sandbox does not let root mount: " + done.stderr.strip())
        expected = "Read-only file system"
    else:
        modes = {p: p.stat().st_mode for p in [state, *state.iterdir()]}
        for p in modes:
            p.chmod(0o555 if p.is_dir() else 0o444)
        try:
            done = subprocess.run(args, capture_output=True, text=True, timeout=60)
        finally:
            for p, mode in modes.items():
                p.chmod(mode)
        expected = "ermission"
    assert done.returncode == 2, done.stderr
    assert "the assessment could not be stored" in done.stderr
    assert expected in done.stderr and "nothing was run" in done.stderr
    assert not (work / "ran.txt").exists()
    assert ledger_bytes(kit_root) == before


# ---------------------------------------------------------------- 7: bounded threads


@contextlib.contextmanager
def _unused_uid() -> Iterator[int]:
    """A uid no account has and no process runs as, claimed for this test alone.

    The process limit counts every process of the real uid, so two tests given
    the same uid share one limit: the three cases below, run side by side by
    xdist (or by another checkout's suite on the same machine), once all took
    the first free uid, and the case that piles commands up to the limit made
    the default pool fail to start bash (exit 75). A lock on a file named after
    the uid, in the system's temporary folder, held until the test ends, makes
    the claim exclusive across processes."""
    import fcntl
    import pwd

    taken = {p.pw_uid for p in pwd.getpwall()}
    for uid in range(54321, 60000):
        if uid in taken:
            continue
        lock = open(Path(tempfile.gettempdir()) / f"pmos-test-uid-{uid}.lock", "w")  # noqa: SIM115
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            continue
        try:
            running = subprocess.run(["pgrep", "-U", str(uid)], capture_output=True)
            if running.returncode != 0:
                yield uid
                return
        finally:
            lock.close()
    pytest.skip("no unused uid found")


#: A check that holds its slot, forking nothing: bash opens a FIFO read-write
#: (which never blocks) and waits up to 60 s for a line no one writes. Under the
#: limit, these pile up until a thread or process is refused; were the limit
#: never met, each would fail after 60 s and the test with it (exit 1, not 75).
_HOLD = ": > ran-$$; read -t 60 <> gate"


@pytest.mark.skipif(
    not (IS_ROOT and shutil.which("setpriv") and shutil.which("prlimit")),
    reason="needs root, setpriv and prlimit to run pmos under a fresh user's process limit",
)
@pytest.mark.parametrize(
    ("workers", "command", "expected"),
    [(None, "true", 0), (100, _HOLD, 75), (200, _HOLD, 75)],
    ids=["default-pool", "commands-pile-up", "pool-cannot-start"],
)
@pytest.mark.slow
def test_a_process_limit_is_met_with_a_bounded_pool_or_a_clear_exit(
    kit_root, workers, command, expected
):
    """Item 7: 400 checks under 'ulimit -u 150' for a user with no other process.
    The default pool stays under the limit; a pool too large for it stops with
    a clear message (exit 75), no traceback, nothing recorded.

    With 100 workers the pool's threads fit, but each live command adds two
    processes and two threads: the checks hold their slots, so they pile up
    until the system refuses one, however fast the machine. With 200 workers
    the pool itself cannot start, and no check runs at all.

    pmos runs with a fresh real uid (the limit counts that user's processes
    and threads) and without CAP_SYS_RESOURCE and CAP_SYS_ADMIN (which exempt
    from it), keeping root's effective uid so it can read the interpreter."""
    if workers is not None:
        set_config(kit_root, assess={"workers": workers})
    # Option parsing checks paths with access(2), which asks as the real uid,
    # and bash drops its effective uid to the real one: the spec, --cwd and
    # the FIFO are for anyone.
    shared = Path(tempfile.mkdtemp(prefix="pmos-nproc-"))
    shared.chmod(0o777)
    os.mkfifo(shared / "gate")
    (shared / "gate").chmod(0o666)
    checks = [{"type": "test", "command": command} for _ in range(400)]
    spec = write_spec(shared / "spec.yaml", {"expectations": checks})
    before = ledger_bytes(kit_root)
    try:
        with _unused_uid() as uid:
            limited = ["prlimit", "--nproc=150:150", "setpriv", "--ruid", str(uid)]
            limited += ["--bounding-set", "-sys_resource,-sys_admin", "--", sys.executable]
            limited += ["-m", "pmos", "assess", str(spec), "--cwd", str(shared), "--json"]
            done = subprocess.run(
                limited,
                capture_output=True,
                text=True,
                timeout=600,
            )
        ran = len(list(shared.glob("ran-*")))
    finally:
        shutil.rmtree(shared, ignore_errors=True)
    assert done.returncode == expected, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    if expected == 0:
        out = json.loads(done.stdout)
        assert len(out["checks"]) == 400 and out["passed"] is True
    else:
        assert "could not start a" in done.stderr
        assert "could not could not" not in done.stderr
        assert "Lower assess.workers in pmos.yaml or raise the limit" in done.stderr
        assert ledger_bytes(kit_root) == before
    if workers == 200:
        assert "could not start a pool of 200 threads" in done.stderr
        assert "no command was run" in done.stderr
        assert ran == 0


@pytest.mark.parametrize("workers", [0, 257, 1.5])
def test_workers_is_bounded_in_the_config(cli, tmp_path, work, workers):
    set_config(tmp_path / "kit", assess={"workers": workers})
    result, _ = _assess(
        cli, tmp_path, work, {"expectations": [{"type": "test", "command": "true"}]}
    )
    assert result.exit_code == 2 and "assess/workers" in result.stderr


def test_workers_bounds_how_many_commands_run_at_once(cli, tmp_path, work):
    set_config(tmp_path / "kit", assess={"workers": 2})
    # Each check records how many checks are running when it starts.
    command = (
        "mkdir -p running; touch running/$$; ls running | wc -l >> peaks; sleep 0.3; rm running/$$"
    )
    checks = [{"type": "test", "command": command} for _ in range(6)]
    result, _ = _assess(cli, tmp_path, work, {"expectations": checks})
    assert result.exit_code == 0, result.output
    peaks = [int(x) for x in (work / "peaks").read_text().split()]
    assert len(peaks) == 6 and max(peaks) <= 2


# ---------------------------------------------------------------- 8: file_exists


def test_file_exists_refuses_links_out_of_cwd_and_follows_links_inside(cli, tmp_path, work):
    """Item 8: link-out -> ../outside/secret.txt does not pass; links that stay
    inside are followed."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    (work / "dist").mkdir()
    (work / "dist" / "index.js").write_text("x")
    (work / "link-out").symlink_to("../outside/secret.txt")
    (work / "dir-out").symlink_to(outside)
    (work / "abs-out").symlink_to(outside / "secret.txt")
    (work / "link-in").symlink_to("dist/index.js")
    (work / "build").symlink_to("dist")
    (work / "loop").symlink_to("loop")
    data = {
        "expectations": [
            {"type": "file_exists", "paths": ["link-out"]},
            {"type": "file_exists", "paths": ["dir-out/secret.txt", "abs-out"]},
            {"type": "file_exists", "paths": ["link-in", "build/index.js", "dist"]},
            {"type": "file_exists", "paths": ["loop"]},
        ]
    }
    result, out = _assess(cli, tmp_path, work, data)
    assert result.exit_code == 1
    out_link, out_dir, inside, loop = out["checks"]
    assert out_link["passed"] is False and out_link["missing"] == ["link-out"]
    assert "link-out (it leads outside --cwd)" in out_link["reason"]
    assert out_dir["passed"] is False and out_dir["missing"] == ["dir-out/secret.txt", "abs-out"]
    assert inside["passed"] is True, inside["reason"]
    assert loop["passed"] is False and "a loop of symbolic links" in loop["reason"]
