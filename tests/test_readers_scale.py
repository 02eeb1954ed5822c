"""Readers stream; writers stay light; the fast read path keeps every check.

Large kits are built the way ``pmos ledger pack`` leaves them: records encoded
by the store's own encoder into packs (:func:`pmos.store.packs.write_pack`),
far faster than one file per record.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tracemalloc

import pytest

import ledgerfiles
from pmos.calibration.metrics import compute_metrics
from pmos.store import lines
from pmos.store.packs import write_pack
from pmos.store.read import records
from pmos.store.rows import row_type
from pmos.store.screening import Excluded
from pmos.store.verify import verify_kind

RUBRIC = "planning/evals/agent-run-eval-rubric.md"


def _verdict(i: int, run: str) -> dict:
    passing = i % 3 != 0
    axis = "pass" if passing else "fail"
    return {
        "record_id": f"ev-{i:07d}",
        "recorded_at": f"2026-01-01T00:00:00.{i:06d}Z",
        "schema_version": 2,  # what today's writers write
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
        "schema_version": 2,  # what today's writers write
        "run_id": run,
        "label": "pass" if i % 4 else "fail",
        "by": "pm",
    }


def _pack(kit, kind: str, made) -> None:
    entries = []
    for record in made:
        line, digest = lines.encode(record)
        entries.append(((record["recorded_at"], record["record_id"]), digest, line))
    if not entries:
        return
    bucket = kit.store.folder(kind) / entries[0][0][0][:7]  # all of one month
    bucket.mkdir(parents=True, exist_ok=True)
    write_pack(bucket, kind, entries)


def _fill(kit, runs: int, per_run: int, months: int = 1) -> None:
    """Packs of verdicts and of labels (one a month, from January 2026), replacing
    what the ledgers held."""
    for kind in ("evals", "acceptances"):
        for path in ledgerfiles.pack_files(kit.root, kind):
            path.unlink()
    total = runs * per_run
    share = -(-total // months)
    for month in range(months):
        made = range(month * share, min(total, (month + 1) * share))
        _pack(kit, "evals", (_moved(_verdict(i, f"run-{i % runs}"), month) for i in made))
        _pack(kit, "acceptances", (_moved(_label(i, f"run-{i % runs}"), month) for i in made))


def _moved(record: dict, month: int) -> dict:
    record["recorded_at"] = record["recorded_at"].replace("2026-01", f"2026-{month + 1:02d}", 1)
    return record


def _peak(kit) -> int:
    tracemalloc.start()
    try:
        compute_metrics(kit)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.slow
def test_memory_grows_with_runs_not_records(kit):
    pytest.importorskip("sklearn.metrics")  # imported before measuring: a one-off cost
    compute_metrics(kit)
    # A reader holds one month at a time: 4x the records, over 4 months, cost about
    # what one month of them costs.
    _fill(kit, runs=50, per_run=300)
    few_records = _peak(kit)
    _fill(kit, runs=50, per_run=1200, months=4)  # the same 50 runs, 4x the records
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


def _renamed(pack, data: bytes):
    """Write ``data`` as a pack named after its bytes (a hand-made pack), replacing ``pack``."""
    pack.unlink()
    made = pack.with_name(f"pack-{hashlib.sha256(data).hexdigest()}.jsonl")
    made.write_bytes(data)
    return made


def test_fast_read_path_keeps_every_check(kit, kit_root):
    _fill(kit, runs=3, per_run=2)
    (pack,) = ledgerfiles.pack_files(kit_root, "evals")
    original = pack.read_bytes()
    rows = original.splitlines(keepends=True)  # a header, then six record lines
    fast = row_type("evals", ("run_id", "verdict"))
    assert len(list(records(kit.store, "evals"))) == 6
    assert len(list(records(kit.store, "evals", row=fast))) == 6

    cases = {
        "edited": (rows[2].replace(b'"init-1"', b'"init-2"'), "does not match its digest"),
        "no digest": (rows[2][: -(lines.TAIL_LEN + 1)] + b"}\n", "carries no digest"),
        "upper-case digest": (
            rows[2][:-67] + rows[2][-67:-3].upper() + b'"}\n',
            "does not match its digest",
        ),
        "not json": (b"{not json\n", "carries no digest"),
    }
    for name, (replacement, message) in cases.items():
        # A hand-made pack, named after its bytes: each line is checked all the same.
        pack = _renamed(pack, b"".join([*rows[:2], replacement, *rows[3:]]))
        for row in (None, fast):  # the whole-record reader and the hot readers' rows
            excluded = Excluded()
            assert len(list(records(kit.store, "evals", row=row, excluded=excluded))) == 5
            (left_out,) = excluded.items
            assert left_out.file == f"{pack}:3" and message in left_out.problem, name
        report = verify_kind(kit.store, "evals")
        assert [(p.file, p.line) for p in report.problems] == [(str(pack), 3)], name
        assert report.problems[0].problem == left_out.problem
    # A deleted line with the name kept: the pack is left out whole.
    pack = _renamed(pack, original)
    pack.write_bytes(b"".join([*rows[:2], *rows[3:]]))
    excluded = Excluded()
    assert list(records(kit.store, "evals", row=fast, excluded=excluded)) == []
    assert "does not match its name" in excluded.items[0].problem
    # A pack moved in from another ledger kind fails at its header.
    pack.write_bytes(original)
    target = ledgerfiles.folder(kit_root, "acceptances") / "2026-01"
    shutil.copy(pack, target)
    excluded = Excluded()
    assert len(list(records(kit.store, "acceptances", excluded=excluded))) == 6
    assert any("not a acceptances pack header" in e.problem for e in excluded.items)
    # Each record line is the record's canonical JSON with its digest last.
    first = json.loads(rows[1])
    digest = first.pop("digest")
    assert lines.check(rows[1][:-1]) == (
        lines.encode(first)[0][: -(lines.TAIL_LEN + 1)] + b"}",
        digest,
    )


PASSES = """
import json, sys
from pmos.calibration import metrics
from pmos.kit import open_kit
from pmos.store import integrity

forks, scans = [], []
sys.addaudithook(lambda event, args: forks.append(event) if event == "os.fork" else None)
scan = integrity.scan


def counted(sources, kind, **options):
    scans.append(kind)
    return scan(sources, kind, **options)


integrity.scan = counted
report = metrics.compute_metrics(open_kit())
print(json.dumps({"forks": len(forks), "scans": scans, "pairs": report["pairs"]}))
"""


def test_metrics_reads_each_ledger_once_in_one_process(kit, kit_root):
    """Verdicts, then labels, each in one pass, whatever the ledgers' size: the
    loose labels' verdicts come from the verdict pass, and no second process is
    started (two processes bought no speed once the other core was busy, and
    held both ledgers' state at once)."""
    _fill(kit, runs=400, per_run=5)
    _pack(kit, "evals", (_verdict(i, f"run-{i % 400}") for i in range(2_000, 2_400)))
    for i in range(2_400, 2_410):
        ledgerfiles.forge(kit_root, "evals", _verdict(i, f"run-{i % 400}"))
    for i in range(3_000, 3_010):
        label = _label(i, f"run-{i % 400}")
        label.update(gate_record_id=f"ev-{i - 600:07d}", gate_verdict="PASS")
        ledgerfiles.forge(kit_root, "acceptances", label)
    done = subprocess.run(
        [sys.executable, "-c", PASSES], capture_output=True, text=True, cwd=kit_root, timeout=600
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["forks"] == 0
    assert sorted(k for k in found["scans"] if k in ("evals", "acceptances")) == [
        "acceptances",
        "evals",
    ]
    assert found["pairs"] == 400


@pytest.mark.parametrize("kind", ["evals", "acceptances"])
def test_metrics_reports_a_corrupt_pack_and_counts_the_rest(kit, kind):
    _fill(kit, runs=5, per_run=2)
    (pack,) = ledgerfiles.pack_files(kit.root, kind)
    rows = pack.read_bytes().splitlines(keepends=True)
    rows[3] = rows[3].replace(b'"run-2"', b'"run-4"')
    pack.write_bytes(b"".join(rows))
    report = compute_metrics(kit)
    assert any(
        e["file"] == str(pack) and "does not match its name" in e["problem"]
        for e in report["excluded_records"]
    )


def test_forked_call_carries_results_and_errors():
    from pmos._util.forked import ForkedCall

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

    from pmos._util.forked import ForkedCall
    from pmos.errors import PmosError

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
