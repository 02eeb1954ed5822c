"""Readers stream; writers stay light; the fast read path keeps every chain check."""

from __future__ import annotations

import json
import subprocess
import sys
import tracemalloc

import pytest

from pmos.calibration.metrics import compute_metrics
from pmos.errors import LedgerCorrupt
from pmos.store.chain import LedgerWriter, iter_records, parse_line, verify

RUBRIC = "planning/evals/agent-run-eval-rubric.md"


def _verdict(i: int, run: str) -> dict:
    passing = i % 3 != 0
    axis = "pass" if passing else "fail"
    return {
        "record_id": f"ev-{i:07d}",
        "recorded_at": f"2026-01-01T00:00:00.{i:06d}Z",
        "schema_version": 1,
        "form": "short",
        "run_id": run,
        "initiative_id": "init-1",
        "verdict": "PASS" if passing else "FAIL",
        "score": 0.9 if passing else 0.3,
        "rubric_path": RUBRIC,
        "evaluator_model": "gpt-5",
        "axes": {"spec": {"verdict": axis}, "standards": {"verdict": axis}},
        "pass_fraction": 0.5,
    }


def _label(i: int, run: str) -> dict:
    return {
        "record_id": f"acc-{i:07d}",
        "recorded_at": f"2026-01-01T00:00:01.{i:06d}Z",
        "schema_version": 1,
        "run_id": run,
        "label": "pass" if i % 4 else "fail",
        "by": "pm",
    }


def _fill(kit, runs: int, per_run: int) -> None:
    evals = LedgerWriter(kit.store.path("evals"), "evals")
    accepts = LedgerWriter(kit.store.path("acceptances"), "acceptances")
    total = runs * per_run
    evals.append_many(_verdict(i, f"run-{i % runs}") for i in range(total))
    accepts.append_many(_label(i, f"run-{i % runs}") for i in range(total))


def _peak(kit) -> int:
    tracemalloc.start()
    try:
        compute_metrics(kit)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_grows_with_runs_not_records(kit):
    pytest.importorskip("sklearn.metrics")  # imported before measuring: a one-off cost
    compute_metrics(kit)
    _fill(kit, runs=50, per_run=4)
    few_records = _peak(kit)
    _fill(kit, runs=50, per_run=60)  # the same 50 runs, 16x the records
    many_records = _peak(kit)
    assert many_records < few_records * 1.5, (few_records, many_records)


def test_writers_and_queue_never_import_scikit_learn(kit_root):
    script = f"""
import sys
from pmos.cli import app
def run(*args):
    try:
        app(list(args), prog_name="pmos")
    except SystemExit as exc:
        assert exc.code in (0, 1, None), (args, exc.code)
run("run", "register", "--run-id", "r1", "--initiative-id", "i1", "--builder-model", "gpt-5")
run("eval", "log", "r1", "i1", "0.9", "PASS", "{RUBRIC}", "claude-x", "--spec", "pass",
    "--standards", "pass")
run("accept", "r1", "--label", "pass", "--by", "pm")
run("queue")
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("sklearn", "numpy", "scipy"))
print(heavy)
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=kit_root, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_fast_read_path_keeps_every_check(kit, kit_root):
    _fill(kit, runs=3, per_run=2)
    path = kit.store.path("evals")
    original = path.read_bytes()
    lines = original.splitlines(keepends=True)
    assert len(list(iter_records(path, "evals"))) == 6

    cases = {
        "edited": (lines[2].replace(b'"init-1"', b'"init-2"'), "line 3", "was edited"),
        "no hash": (lines[2][: -(75 + 1)] + b"}\n", "line 3", "no chain hash"),
        "upper-case hash": (
            lines[2][:-67] + lines[2][-67:-3].upper() + b'"}\n',
            "line 3",
            "no chain hash",
        ),
        "not json": (b"{not json\n", "line 3", "not valid JSON"),
    }
    for name, (replacement, where, message) in cases.items():
        path.write_bytes(b"".join([*lines[:2], replacement, *lines[3:]]))
        with pytest.raises(LedgerCorrupt) as caught:
            list(iter_records(path, "evals"))
        assert f":{where.split()[1]}:" in str(caught.value) and message in str(caught.value), name
        report = verify(path, "evals")
        assert report.problems[0].line == 3 and message in report.problems[0].problem, name
    # A deleted line breaks the link of the next one.
    path.write_bytes(b"".join([*lines[:2], *lines[3:]]))
    with pytest.raises(LedgerCorrupt, match=":3: prev_hash does not match"):
        list(iter_records(path, "evals"))
    # A line moved in from another ledger kind fails at the genesis link.
    path.write_bytes(original)
    with pytest.raises(LedgerCorrupt, match=":1: prev_hash"):
        list(iter_records(path, "acceptances"))
    # parse_line (no newline) agrees with the stream reader.
    assert parse_line(lines[0][:-1]) == json.loads(lines[0])


def test_parallel_read_gives_the_same_report(kit, monkeypatch):
    from pmos.calibration import metrics as calibration

    _fill(kit, runs=40, per_run=3)
    serial = [compute_metrics(kit), compute_metrics(kit, model="gpt-5", window=5)]
    from pmos.store import forked

    started = []

    class Spy(forked.ForkedCall):
        def __init__(self, *args, **options):
            started.append(args[0].__name__)
            super().__init__(*args, **options)

    monkeypatch.setattr(forked, "ForkedCall", Spy)
    monkeypatch.setattr(calibration, "PARALLEL_MIN_BYTES", 0)
    parallel = [compute_metrics(kit), compute_metrics(kit, model="gpt-5", window=5)]
    assert started == ["_read_verdicts_and_pair", "_read_verdicts_and_pair"]
    assert parallel == serial


@pytest.mark.parametrize("kind", ["evals", "acceptances"])
def test_parallel_read_reports_a_corrupt_ledger_and_leaves_no_process(kit, monkeypatch, kind):
    import os

    from pmos.calibration import metrics as calibration

    _fill(kit, runs=5, per_run=2)
    path = kit.store.path(kind)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[3] = lines[3].replace(b'"run-3"', b'"run-4"')
    path.write_bytes(b"".join(lines))
    monkeypatch.setattr(calibration, "PARALLEL_MIN_BYTES", 0)
    with pytest.raises(LedgerCorrupt) as caught:
        compute_metrics(kit)
    assert caught.value.line == 4 and caught.value.path == str(path)
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # the reader process was reaped


def test_forked_call_carries_results_and_errors():
    from pmos.store.forked import ForkedCall

    assert ForkedCall(sorted, [3, 1, 2]).result() == [1, 2, 3]
    with pytest.raises(ZeroDivisionError):
        ForkedCall(divmod, 1, 0).result()

    class Local(Exception):  # cannot be unpickled in the parent
        pass

    def boom():
        raise Local("no way back")

    with pytest.raises(RuntimeError, match="no way back"):
        ForkedCall(boom).result()


def _sum_with(receive, base):
    return base + sum(receive())


def _sum_when_told(receive, base, gate):
    import os
    import time

    while not os.path.exists(gate):
        time.sleep(0.01)
    return base + sum(receive())


def test_forked_call_inbox_hands_the_child_a_value_while_both_run(tmp_path):
    import os
    import threading

    from pmos.errors import PmosError
    from pmos.store.forked import ForkedCall

    gate = tmp_path / "gate"
    call = ForkedCall(_sum_when_told, 10, str(gate), inbox=True)
    big = list(range(200_000))  # far more than a pipe holds: send must not wait for the child
    # The child reads nothing until the gate exists, which is made only after send
    # returned: a send that waited for the child to read would never return.
    sender = threading.Thread(target=call.send, args=(big,), daemon=True)
    sender.start()
    sender.join(timeout=120)
    sent = not sender.is_alive()
    gate.touch()
    assert sent, "send waited for the child to read"
    assert call.result() == 10 + sum(big)
    with pytest.raises(RuntimeError, match="sent to already"):
        call.send([1])
    # Never sent: the waiting child sees end of file and reports it, no hang.
    with pytest.raises(PmosError, match="ended before sending"):
        ForkedCall(_sum_with, 1, inbox=True).result()
    # The parent fails before sending: cancel() stops and reaps the waiting child.
    waiting = ForkedCall(_sum_with, 1, inbox=True)
    waiting.cancel()
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)
