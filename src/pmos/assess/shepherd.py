"""Runs one assessment command and stops everything it started (Linux).

It starts once per check, so it imports nothing of pmos and as little of the
standard library as it can. pmos imports it by its own name from this folder
(so its compiled code is cached), as if it were run as a script::

    python -I -S shepherd.py STATUS_FD PARENT_PID SCRIPT

A process group is not enough to find what a command started: ``setsid``, a
double fork or a daemon leaves the group, and a process whose parent died is
adopted by init, where no one will stop it. The shepherd makes itself a
*child subreaper* (``PR_SET_CHILD_SUBREAPER``): every process that the command
starts and orphans is adopted by the shepherd instead of init, so all of them
stay its descendants and can be found from ``/proc``. It runs ``bash -c
SCRIPT`` with default signal handling, waits for it, then kills every
descendant still running and reaps them, and reports on STATUS_FD (a Python
literal, a dict read back with ``ast.literal_eval``: importing ``json`` would
double the shepherd's start-up, and it starts once per check): bash's exit
status, whether pmos asked it to stop (SIGTERM, on a timeout or an
interrupt), and the processes the command left running.

If pmos dies, ``PR_SET_PDEATHSIG`` delivers SIGTERM and the shepherd cleans up
all the same.
"""

from __future__ import annotations

import ctypes
import os
import sys
import time

# Not typing.TYPE_CHECKING: importing typing would cost the shepherd's start-up
# more than _signal saves. Type checkers take any constant of this name as True.
TYPE_CHECKING = False
if TYPE_CHECKING:  # typeshed has no stub for _signal; its names are signal's
    import signal
else:
    import _signal as signal  # the C module: 'signal' imports enum, 7 ms a check

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
#: How long to keep killing and reaping before reporting what would not die
#: (a process stuck in the kernel, in state D, cannot be killed at once).
SWEEP_S = 10.0
NAMES_SHOWN = 5


def process_table() -> dict[int, tuple[str, int, int, str]]:
    """Every process, from ``/proc``: pid -> (name, parent pid, session id, state).

    pmos's own clean-up of what a check left behind (:mod:`pmos.assess.reaper`)
    reads the same table."""
    found: dict[int, tuple[str, int, int, str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                raw = f.read().decode("utf-8", "replace")
        except OSError:
            continue  # it exited meanwhile
        # After the name: state, parent pid, process group, session, tty (proc(5)).
        left, _, right = raw.rpartition(")")
        fields = right.split()
        if len(fields) >= 4:
            found[int(entry)] = (left.partition("(")[2], int(fields[1]), int(fields[3]), fields[0])
    return found


def _descendants(me: int) -> dict[int, tuple[str, str]]:
    """Every live or zombie descendant of ``me``: pid -> (name, state)."""
    children: dict[int, list[int]] = {}
    info: dict[int, tuple[str, str]] = {}
    for pid, (name, ppid, _session, state) in process_table().items():
        info[pid] = (name, state)
        children.setdefault(ppid, []).append(pid)
    found: dict[int, tuple[str, str]] = {}
    todo = list(children.get(me, []))
    while todo:
        pid = todo.pop()
        if pid in found or pid not in info:
            continue
        found[pid] = info[pid]
        todo += children.get(pid, [])
    return found


def _reap(child: int, status: dict[str, object]) -> bool:
    """Reap every child that has exited, noting the command's exit status;
    False when no child is left, and so, for a subreaper, no descendant."""
    while True:
        try:
            pid, wait_status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True
        if pid == child and status.get("exit") is None:
            status["exit"] = os.waitstatus_to_exitcode(wait_status)


def _sweep(me: int, child: int, status: dict[str, object]) -> tuple[dict[int, str], list[int]]:
    """Kill every descendant until none is left; returns those killed and any
    that would not die within :data:`SWEEP_S`. When the command left nothing
    running (the usual case) no child is left to reap, and /proc is not read."""
    killed: dict[int, str] = {}
    deadline = time.monotonic() + SWEEP_S
    while _reap(child, status):
        live = {p: n for p, (n, state) in _descendants(me).items() if state != "Z"}
        for pid, name in live.items():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
            killed.setdefault(pid, name)
        if time.monotonic() > deadline:
            return killed, sorted(live)
        time.sleep(0.005)
    return killed, []


def main(argv: list[str]) -> int:
    status_fd, parent, script = int(argv[1]), int(argv[2]), argv[3]
    os.set_inheritable(status_fd, False)
    # SIGTERM (pmos: stop) and SIGCHLD are taken synchronously with sigwaitinfo,
    # never as handlers, so no signal can interrupt the clean-up half-way.
    waited = {signal.SIGTERM, signal.SIGCHLD}
    signal.pthread_sigmask(signal.SIG_BLOCK, waited)
    status: dict[str, object] = {"exit": None, "stopped": False, "error": None}
    me = os.getpid()
    child = -1
    libc = ctypes.CDLL(None, use_errno=True)
    status["subreaper"] = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:
        status["stopped"] = True  # pmos died before the death signal was armed
    else:
        # The command starts with every signal at its default and none blocked:
        # pmos may run with SIGINT ignored, and Python ignores SIGPIPE.
        defaults = set(signal.valid_signals()) - {signal.SIGKILL, signal.SIGSTOP}
        try:
            child = os.posix_spawnp(
                "bash", ["bash", "-c", script], os.environ, setsigdef=defaults, setsigmask=()
            )
        except OSError as exc:
            status["error"] = f"could not start bash: {exc.strerror or exc}"
            status["errno"] = exc.errno
    while child > 0 and status["exit"] is None and not status["stopped"]:
        if signal.sigwaitinfo(waited).si_signo == signal.SIGTERM:
            status["stopped"] = True
            break
        _reap(child, status)
    killed, stuck = _sweep(me, child, status)
    if not status["stopped"]:
        left = {p: n for p, n in killed.items() if p != child}
        status["left_count"] = len(left)
        status["left_names"] = sorted(set(left.values()))[:NAMES_SHOWN]
    status["stuck"] = len(stuck)
    data = repr(status).encode("utf-8")
    while data:
        data = data[os.write(status_fd, data) :]
    os.close(status_fd)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
