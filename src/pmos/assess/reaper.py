"""pmos itself adopts whatever a check's commands leave behind (Linux).

Each command runs under a *shepherd* (:mod:`pmos.assess.shepherd`), a child
subreaper that stops everything the command started when it exits. But the
shepherd is the command's parent, and a command can kill it (``kill -9
$PPID``) or stop it (``kill -STOP $PPID``): what the command started would
then be reparented to init and outlive pmos. So while commands run, pmos makes
*itself* a child subreaper too (:func:`supervising`): when a shepherd dies,
its orphans are reparented to pmos, never to init, and pmos kills them
(:func:`sweep`). The kernel guarantees the chain: an orphan goes to its
nearest living subreaper ancestor, and pmos is an ancestor of every process a
command starts and outlives all of them, so none can leave pmos's tree while
pmos runs. (A check that kills pmos itself is answered by the shepherds'
parent-death signal.)

Which of pmos's children were adopted? pmos starts each shepherd in a session
of its own, and a session can only be created, never joined, so no process a
command starts is ever in pmos's session. A child of pmos outside pmos's
session that is not a live shepherd (pmos registers each one as it starts it)
and was not already a child before the first command ran is therefore an
orphan of a command. The sweep kills only pmos's own children, which cannot
be reaped, and so their pids cannot be reused, behind its back; their own
children are adopted in turn and killed on the next round, until none is left.
It reaps them one pid at a time, never with ``waitpid(-1)``, which would steal
the exit status of a process another thread waits for.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import threading
import time
from collections.abc import Iterator

from pmos.assess.shepherd import process_table

PR_SET_CHILD_SUBREAPER = 36
#: How long a sweep keeps killing adopted processes before giving up on them
#: (a process stuck in the kernel, in state D, cannot be killed at once).
SWEEP_S = 10.0

_lock = threading.RLock()
_depth = 0
#: Children of pmos in other sessions before it became a subreaper (not ours to kill).
_before: frozenset[int] = frozenset()
#: Live shepherds (and, without one, commands) pmos started itself.
_started: set[int] = set()


def _prctl_subreaper(on: bool) -> bool:
    libc = ctypes.CDLL(None, use_errno=True)
    return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0)


def _processes() -> dict[int, tuple[int, int, str]]:
    """Every process: pid -> (parent pid, session id, state)."""
    return {pid: (ppid, sid, state) for pid, (_, ppid, sid, state) in process_table().items()}


def _foreign_children() -> frozenset[int]:
    me, session = os.getpid(), os.getsid(0)
    return frozenset(
        pid for pid, (ppid, sid, _) in _processes().items() if ppid == me and sid != session
    )


@contextlib.contextmanager
def supervising() -> Iterator[None]:
    """Make pmos a child subreaper while the block runs; on leaving the
    outermost block, kill what was adopted and stop being one.

    Nested and concurrent blocks share one count, so the flag goes off only
    when the last of them ends."""
    global _depth, _before
    if not os.path.isdir("/proc"):
        yield
        return
    with _lock:
        if _depth == 0:
            _before = _foreign_children()
            _prctl_subreaper(True)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                try:
                    sweep()
                finally:
                    _prctl_subreaper(False)


@contextlib.contextmanager
def starting() -> Iterator[set[int]]:
    """Hold while starting a shepherd and add its pid to the yielded set, so
    that no sweep running meanwhile mistakes it for an orphan."""
    with _lock:
        yield _started


def finished(pid: int) -> None:
    """The shepherd ``pid`` was reaped: its pid may be reused by anyone."""
    with _lock:
        _started.discard(pid)


def sweep() -> int:
    """Kill and reap every process pmos adopted; returns how many would not
    die within :data:`SWEEP_S` (0 in all but pathological cases)."""
    me, session = os.getpid(), os.getsid(0)
    deadline = time.monotonic() + SWEEP_S
    while True:
        with _lock:
            adopted = [
                (pid, state)
                for pid, (ppid, sid, state) in _processes().items()
                if ppid == me and sid != session and pid not in _started and pid not in _before
            ]
        if not adopted:
            return 0
        for pid, state in adopted:
            if state != "Z":
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        for pid, _ in adopted:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
        if time.monotonic() > deadline:
            return len(adopted)
        time.sleep(0.002)
