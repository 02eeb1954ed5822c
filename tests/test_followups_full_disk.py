"""`followups suggest --policy create` on a file system that fills up (issue 16 item 12).

The command writes two ledgers. On a full disk it used to store 60 tasks and
no follow-ups, and the rerun then suppressed all 60 as duplicate_open_task.
Now the follow-ups are stored first and the tasks derived from them, so the
second write's failure is reported (exit 75) and the rerun completes it.

The small file system is a real tmpfs, mounted over the kit's state/ in a
private mount namespace (``unshare -m``) that ends with the driver process,
so nothing outside the test sees it. Skipped only where root cannot mount.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from runrecords import defect, register, verdict_with

DEFECTS = 60

DRIVER = r"""
import json, os, shutil, subprocess, sys

kit, out = sys.argv[1], sys.argv[2]
state = os.path.join(kit, "state")
copy = os.path.join(out, "state-copy")
shutil.copytree(state, copy)
results = {}


def pmos(*args):
    done = subprocess.run(
        [sys.executable, "-m", "pmos", *args],
        env={**os.environ, "PMOS_ROOT": kit}, capture_output=True, text=True,
    )
    return {"code": done.returncode, "stdout": done.stdout, "stderr": done.stderr}


def used():
    st = os.statvfs(state)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def mount():
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", state], check=True)
    shutil.copytree(copy, state, dirs_exist_ok=True)


def umount():
    subprocess.run(["umount", state], check=True)


# What one call needs: the follow-ups alone, and follow-ups plus tasks.
mount()
base = used()
pmos("followups", "suggest", "--run-id", "run-1", "--policy", "suggest")
followups_only = used() - base
umount()
mount()
base = used()
pmos("followups", "suggest", "--run-id", "run-1", "--policy", "create")
both = used() - base
umount()
results["followups_bytes"], results["both_bytes"] = followups_only, both

# Room for the follow-ups and half the tasks.
mount()
room = followups_only + (both - followups_only) // 2
st = os.statvfs(state)
filler = os.path.join(state, "filler")
with open(filler, "wb") as f:
    f.write(b"\0" * (st.f_bavail * st.f_frsize - room))
CREATE = ("followups", "suggest", "--run-id", "run-1", "--policy", "create", "--json")
results["first"] = pmos(*CREATE)
results["after_first"] = {
    "followups": pmos("ledger", "show", "followups", "--json"),
    "tasks": pmos("tasks", "list", "--json"),
}
os.unlink(filler)
results["second"] = pmos(*CREATE)
results["third"] = pmos(*CREATE)
results["tasks"] = pmos("tasks", "list", "--json")
results["verify"] = pmos("ledger", "verify")
umount()
with open(os.path.join(out, "results.json"), "w") as f:
    json.dump(results, f)
"""


def _can_mount(tmp_path: Path) -> str | None:
    if not (hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("unshare")):
        return "needs root and unshare to mount a small tmpfs"
    probe = tmp_path / "probe"
    probe.mkdir()
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "mount", "-t", "tmpfs", "tmpfs", str(probe)],
        capture_output=True,
        text=True,
    )
    return None if done.returncode == 0 else f"this sandbox cannot mount a tmpfs: {done.stderr}"


@pytest.mark.slow
def test_a_full_disk_between_the_two_writes_is_reported_and_the_rerun_completes_it(
    kit, kit_root, tmp_path
):
    why = _can_mount(tmp_path)
    if why:
        pytest.skip(why)
    register(kit)
    defects = [
        defect("must-fix", f"src/module_{i}.py:{i + 1}", f"Problem number {i} breaks case {i}.")
        for i in range(DEFECTS)
    ]
    verdict_with(kit, defects=defects)
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    out = tmp_path / "out"
    out.mkdir()
    args = [str(kit_root), str(out)]
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", sys.executable, str(driver), *args],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    results = json.loads((out / "results.json").read_text())
    assert results["both_bytes"] > results["followups_bytes"] > 0

    first = results["first"]
    assert first["code"] == 75, first
    assert "Traceback" not in first["stderr"]
    assert f"the {DEFECTS} follow-up suggestion(s) of run 'run-1' were stored" in first["stderr"]
    assert "No space left on device" in first["stderr"]
    assert "Run the same command again" in first["stderr"]
    stored = json.loads(results["after_first"]["followups"]["stdout"])
    assert [s["state"] for s in stored] == ["created"] * DEFECTS
    assert json.loads(results["after_first"]["tasks"]["stdout"]) == []

    second = json.loads(results["second"]["stdout"])
    assert results["second"]["code"] == 0
    decided = sorted(s["createdTaskId"] for s in stored)
    assert sorted(second["createdTaskIds"]) == decided
    reasons = {s["suppressedReason"] for s in second["suggestions"]}
    assert reasons == {"duplicate_prior_suggestion"}
    assert any("an earlier call decided but stopped before writing" in n for n in second["notes"])

    third = json.loads(results["third"]["stdout"])
    assert third["createdTaskIds"] == []
    tasks = json.loads(results["tasks"]["stdout"])
    assert sorted(t["task_id"] for t in tasks) == decided
    assert results["verify"]["code"] == 0, results["verify"]
