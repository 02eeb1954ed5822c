"""A full disk and a refused permission exit with their own codes, not as bad input.

A script that drives pmos must tell "my input was wrong" (2: fix it) from "the
machine could not store it" (74: free space, retry) and "the machine refused
access" (77: fix permissions, retry). Each case runs the real writer against a
real file system state: a tiny tmpfs filled to the brim, a kit owned by another
user. Nothing is written in either case.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from pmos import exit_codes

REGISTER = ["run", "register", "--run-id", "r9", "--initiative-id", "i", "--builder-model", "m"]


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _unused_uid() -> int:
    taken = {p.pw_uid for p in pwd.getpwall()}
    return next(uid for uid in range(54400, 60000) if uid not in taken)


def test_a_bad_path_is_still_bad_input(kit_root: Path):
    done = subprocess.run(
        [sys.executable, "-m", "pmos", *REGISTER, "--contract", str(kit_root / "no" / "such")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == exit_codes.BAD_INPUT, done.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a tmpfs (CI runs as root)")
def test_a_full_disk_exits_74_and_writes_nothing(kit_root: Path, tmp_path: Path):
    # The kit is copied onto a 1 MiB tmpfs in a private mount namespace, the free
    # space is filled, and the writer runs there.
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    script = (
        'mount -t tmpfs -o size=1m tmpfs "$1" && cp -a "$2" "$1/kit" && '
        '(dd if=/dev/zero of="$1/fill" bs=4k 2>/dev/null; true) && '
        'before=$(find "$1/kit" -type f | sort | xargs sha256sum | sha256sum) && '
        '"$3" -m pmos --root "$1/kit" "${@:4}"; rc=$?; '
        'after=$(find "$1/kit" -type f | sort | xargs sha256sum | sha256sum); '
        '[ "$before" = "$after" ] || echo "KIT CHANGED" >&2; exit $rc'
    )
    unshare = ["unshare", "-m", "--propagation", "private", "bash", "-c", script, "bash"]
    done = subprocess.run(
        [*unshare, str(mnt), str(kit_root), sys.executable, *REGISTER],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == exit_codes.SYSTEM_ERROR, done.stderr
    assert "No space left on device" in done.stderr
    assert "nothing was written" in done.stderr
    assert "KIT CHANGED" not in done.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run as another user (CI runs as root)")
def test_a_refused_permission_exits_77_and_writes_nothing(kit_root: Path):
    # A kit owned by root, readable by all, written by a user who may not write it.
    shared = Path(tempfile.mkdtemp(prefix="pmos-perm-"))
    try:
        shared.chmod(0o755)
        kit = shared / "kit"
        shutil.copytree(kit_root, kit)
        for p in [kit, *kit.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
        before = _files(kit)
        uid = str(_unused_uid())
        as_other = ["setpriv", "--reuid", uid, "--regid", uid, "--clear-groups"]
        done = subprocess.run(
            [*as_other, sys.executable, "-m", "pmos", "--root", str(kit), *REGISTER],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "HOME": str(shared)},
        )
        assert done.returncode == exit_codes.NO_PERMISSION, done.stderr
        assert "Permission denied" in done.stderr
        assert _files(kit) == before
    finally:
        shutil.rmtree(shared, ignore_errors=True)
