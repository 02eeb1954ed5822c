"""Running an assessment's commands: Bash, a timeout, bounded output, no strays.

Every command runs as ``bash -c`` in the assessed working directory under a
*shepherd* (:mod:`pmos.assess.shepherd`, on Linux): a small process that is a
child subreaper, so everything the command starts stays findable even when it
calls ``setsid`` or double-forks. When the command exits, the shepherd kills
whatever it left running and reports it, and the check says so; on a timeout
or Ctrl-C it stops the command and everything it started. Elsewhere the
command runs in a session of its own and its process group is killed.

At most ``assess.workers`` commands run at once (default
:data:`DEFAULT_WORKERS`), and the threads that wait for them are bounded the
same way, so a spec of 400 checks cannot exhaust the process limit. The pool
of threads (a ``concurrent.futures`` executor) is started whole before the
first command runs (see
:func:`concurrently`), so its size never depends on how fast commands finish;
a thread or process the system refuses to start stops the assessment with
:class:`~pmos.errors.ResourcesExhausted` instead of failing a check for a
reason that is not the work's. Only the last few kilobytes of output are kept,
so a chatty test suite cannot exhaust memory or bloat the ledger.

A multi-line command is a script: it runs with ``set -e``, so it fails at its
first failing line instead of reporting only its last line's status. Exit 0
is success; there is no other success code.
"""

from __future__ import annotations

import ast
import contextlib
import errno
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar

from pmos.assess import beneath, reaper
from pmos.assess.spec import Expectation, Metric, Spec
from pmos.errors import ResourcesExhausted

OUTPUT_TAIL_BYTES = 4096
DEFAULT_TIMEOUT_S = 600.0
#: Commands (and file checks) run at once unless pmos.yaml says otherwise.
DEFAULT_WORKERS = 8
#: How long to wait for output pipes to close after a command ended and its
#: group was killed; only a process that left the group can hold them longer.
_DRAIN_S = 5.0
#: How often the thread waiting for a pool's items wakes (to take a Ctrl-C).
_WAKE_S = 0.25
#: How long a shepherd gets to stop its command before its group is killed outright.
_STOP_GRACE_S = 15.0
#: Starts the shepherd by importing it, so Python reuses its compiled code instead
#: of compiling the file as a script each time; the folder goes last on the path,
#: so it shadows no module of the standard library.
_SHEPHERD = (
    f"import sys; sys.path.append({str(Path(__file__).parent)!r}); "
    "import shepherd; sys.exit(shepherd.main(sys.argv))"
)
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
#: The errors with which the system refuses a new process for lack of resources.
_RESOURCE_ERRNOS = frozenset({errno.EAGAIN, errno.ENOMEM})


def uses_shepherd() -> bool:
    """Commands run under a subreaper shepherd here (Linux only)."""
    return sys.platform.startswith("linux")


class Cancelled(Exception):
    """The assessment was interrupted before this command could start."""


class ProcessTracker:
    """The live commands of one assessment, so an interrupt can stop them all, and
    the slots that bound how many run at once."""

    def __init__(self, workers: int = DEFAULT_WORKERS) -> None:
        self.workers = workers
        self._lock = threading.Lock()
        self._live: dict[int, bool] = {}
        self._cancelled = False
        self._slots = threading.BoundedSemaphore(workers)
        #: Commands given a slot so far: while 0, a refusal can say nothing ran.
        self.commands = 0

    @contextlib.contextmanager
    def slot(self) -> Iterator[None]:
        """Hold one of the ``workers`` command slots (given up on cancellation)."""
        while not self._slots.acquire(timeout=0.1):
            self.check()
        with self._lock:
            self.commands += 1
        try:
            yield
        finally:
            self._slots.release()

    def started(self, pid: int, shepherd: bool) -> None:
        with self._lock:
            if self._cancelled:
                _stop(pid, shepherd)
                raise Cancelled()
            self._live[pid] = shepherd

    def finished(self, pid: int) -> None:
        with self._lock:
            self._live.pop(pid, None)

    def check(self) -> None:
        with self._lock:
            if self._cancelled:
                raise Cancelled()

    def kill_all(self) -> None:
        with self._lock:
            self._cancelled = True
            live = dict(self._live)
        for pid, shepherd in live.items():
            _stop(pid, shepherd)


def _stop(pid: int, shepherd: bool) -> None:
    """Ask a shepherd to stop its command (it kills every descendant); without
    a shepherd, kill the command's process group."""
    if shepherd:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    else:
        _kill_group(pid)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _start_thread(target: Callable[..., Any], *args: Any) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, daemon=True)
    try:
        thread.start()
    except RuntimeError as exc:  # "can't start new thread"
        raise ResourcesExhausted(_resource_message(f"start a thread ({exc})")) from None
    return thread


def _resource_message(what: str, *, ran: bool = True) -> str:
    done = "every command it had started was stopped" if ran else "no command was run"
    return (
        f"pmos assess could not {what}: the system refused for lack of resources (the "
        "limit on processes per user, 'ulimit -u', or memory). Nothing was recorded and "
        f"{done}. Lower assess.workers in pmos.yaml or raise the limit, then run the "
        "assessment again"
    )


class _Tail:
    """Reads a pipe to its end, keeping only the last ``limit`` bytes."""

    def __init__(self, stream: Any, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.total = 0
        self._stream = stream
        self._thread = _start_thread(self._run)

    def _run(self) -> None:
        try:
            while True:
                chunk = self._stream.read1(65536)
                if not chunk:
                    break
                self.total += len(chunk)
                self.data += chunk
                if len(self.data) > self.limit:
                    del self.data[: len(self.data) - self.limit]
        except (OSError, ValueError):
            pass

    def join(self, timeout: float) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def text(self) -> str:
        text = bytes(self.data).decode("utf-8", "replace")
        dropped = self.total - len(self.data)
        if dropped > 0:
            return f"[... {dropped} earlier bytes dropped]\n{text}"
        return text


@dataclass
class CommandResult:
    exit_code: int | None
    timed_out: bool
    duration_s: float
    output: str
    output_bytes: int
    stderr: str = ""
    error: str | None = None
    incomplete: bool = False
    #: Processes the command left running when it exited (stopped by the shepherd).
    left_running: int = 0
    left_names: tuple[str, ...] = ()

    def left_note(self) -> str | None:
        """What the command left behind, in words, or None."""
        if not self.left_running:
            return None
        names = f" ({', '.join(self.left_names)})" if self.left_names else ""
        return (
            f"it left {self.left_running} process(es) running{names} after it exited; "
            "pmos stopped them"
        )

    @property
    def ok(self) -> bool:
        return self.error is None and not self.timed_out and self.exit_code == 0

    def failure(self, timeout_s: float) -> str:
        """Why the command did not succeed, in one line."""
        if self.error is not None:
            return self.error
        if self.timed_out:
            return f"timed out after {timeout_s:g} s; its whole process group was killed"
        if self.exit_code is not None and self.exit_code < 0:
            return f"killed by signal {-self.exit_code}"
        return f"exited {self.exit_code}"


def script_for(command: str) -> str:
    """A multi-line command runs as a script that stops at its first failing line."""
    if "\n" in command.strip():
        return "set -e\n" + command
    return command


def run_command(
    command: str,
    *,
    cwd: Path,
    timeout_s: float,
    tracker: ProcessTracker | None = None,
    stdin_data: bytes | None = None,
    env: Mapping[str, str] | None = None,
    separate_stderr: bool = False,
    tail_bytes: int = OUTPUT_TAIL_BYTES,
) -> CommandResult:
    """Run ``command`` with Bash in ``cwd``; never raises for a failing command.

    Raises :class:`~pmos.errors.ResourcesExhausted` when the system refuses a
    process or thread, and :class:`Cancelled` after an interrupt.
    """
    tracker = tracker or ProcessTracker()
    tracker.check()
    with reaper.supervising() if uses_shepherd() else contextlib.nullcontext(), tracker.slot():
        return _run(command, cwd, timeout_s, tracker, stdin_data, env, separate_stderr, tail_bytes)


def _run(
    command: str,
    cwd: Path,
    timeout_s: float,
    tracker: ProcessTracker,
    stdin_data: bytes | None,
    env: Mapping[str, str] | None,
    separate_stderr: bool,
    tail_bytes: int,
) -> CommandResult:
    start = time.monotonic()
    shepherd = uses_shepherd()
    status_r, status_w = os.pipe() if shepherd else (-1, -1)
    if shepherd:
        argv = [sys.executable, "-I", "-S", "-c", _SHEPHERD, str(status_w), str(os.getpid())]
        argv.append(script_for(command))
    else:
        argv = ["bash", "-c", script_for(command)]
    try:
        with reaper.starting() as started:
            proc = subprocess.Popen(
                argv,
                cwd=cwd,
                stdin=subprocess.PIPE if stdin_data is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE if separate_stderr else subprocess.STDOUT,
                env=env,
                start_new_session=True,
                pass_fds=(status_w,) if shepherd else (),
            )
            started.add(proc.pid)
    except OSError as exc:
        if shepherd:
            os.close(status_r)
        if exc.errno in _RESOURCE_ERRNOS:
            raise ResourcesExhausted(_resource_message(f"start a process ({exc})")) from None
        return CommandResult(
            None, False, time.monotonic() - start, "", 0, error=f"could not start bash: {exc}"
        )
    finally:
        if shepherd:
            os.close(status_w)
    try:
        try:
            tracker.started(proc.pid, shepherd)
        except Cancelled:
            _reap(proc, status_r)
            raise
        return _watch(
            proc,
            shepherd,
            status_r,
            start,
            timeout_s,
            tracker,
            stdin_data,
            separate_stderr,
            tail_bytes,
        )
    finally:
        reaper.finished(proc.pid)


def _watch(
    proc: subprocess.Popen[bytes],
    shepherd: bool,
    status_r: int,
    start: float,
    timeout_s: float,
    tracker: ProcessTracker,
    stdin_data: bytes | None,
    separate_stderr: bool,
    tail_bytes: int,
) -> CommandResult:
    """Wait for a started command, read its output and its shepherd's report."""
    exited = threading.Event()
    fired = threading.Event()
    try:
        out = _Tail(proc.stdout, tail_bytes)
        err = _Tail(proc.stderr, tail_bytes) if separate_stderr else None
        if stdin_data is not None:
            _start_thread(_feed, proc.stdin, stdin_data)

        def on_timeout() -> None:
            fired.set()
            _stop(proc.pid, shepherd)
            if not exited.wait(_STOP_GRACE_S):
                _kill_group(proc.pid)

        timer = threading.Timer(timeout_s, on_timeout)
        timer.daemon = True
        try:
            timer.start()
        except RuntimeError as exc:
            raise ResourcesExhausted(_resource_message(f"start a thread ({exc})")) from None
    except ResourcesExhausted:
        _stop(proc.pid, shepherd)
        tracker.finished(proc.pid)
        _reap(proc, status_r)
        raise
    hijacked = False
    try:
        hijacked = _wait_unreaped(proc, shepherd)
    finally:
        exited.set()
        timer.cancel()
        # The leader is exited but not reaped, so its group id cannot have been
        # reused: kill whatever the command left running in it, so the pipes close.
        _kill_group(proc.pid)
        tracker.finished(proc.pid)
        proc.wait()
    status = _read_status(status_r) if shepherd else None
    if shepherd and status is None:
        # The shepherd died without a report (killed, by the command or by
        # pmos after it was stopped): what the command started was adopted by
        # pmos. Stop it now, before waiting for the output pipes it may hold.
        reaper.sweep()
    incomplete = not out.join(_DRAIN_S)
    if err is not None:
        incomplete = not err.join(_DRAIN_S) or incomplete
    for stream, tail in ((proc.stdout, out), (proc.stderr, err)):
        if stream is not None and tail is not None and not incomplete:
            stream.close()
    result = CommandResult(
        exit_code=proc.returncode,
        timed_out=fired.is_set() and proc.returncode == -signal.SIGKILL,
        duration_s=time.monotonic() - start,
        output=out.text(),
        output_bytes=out.total,
        stderr=err.text() if err is not None else "",
        incomplete=incomplete,
    )
    if shepherd:
        _apply_status(result, status, fired.is_set(), hijacked)
    if result.timed_out:
        result.exit_code = None
    return result


def _reap(proc: subprocess.Popen[bytes], status_r: int) -> None:
    proc.wait()
    if status_r >= 0:
        os.close(status_r)


def _read_status(fd: int) -> dict[str, Any] | None:
    """The shepherd's report; None when it died without one (killed outright)."""
    chunks = []
    try:
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    finally:
        os.close(fd)
    try:
        status = ast.literal_eval(b"".join(chunks).decode("utf-8"))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None  # UnicodeDecodeError is a ValueError
    return status if isinstance(status, dict) else None


def _apply_status(
    result: CommandResult, status: dict[str, Any] | None, fired: bool, hijacked: bool
) -> None:
    """Fill in what the shepherd reported about the command it ran."""
    if status is None:
        result.timed_out = fired and not hijacked
        if hijacked:
            result.error = (
                "the process supervising the command was stopped (SIGSTOP), so pmos "
                "killed it and every process the command had started; its outcome is unknown"
            )
        elif not fired:
            result.error = (
                f"the process supervising the command died (status {result.exit_code}); "
                "pmos stopped every process the command had started; its outcome is unknown"
            )
        return
    if status.get("error"):
        if status.get("errno") in _RESOURCE_ERRNOS:
            # The shepherd's own words are "could not start bash: <reason>"; the
            # message names what was refused as the other refusals do ("start a
            # process", "start a thread"): which of them meets the limit first
            # is a race between pmos's threads and the commands' processes.
            detail = str(status["error"]).removeprefix("could not start ")
            raise ResourcesExhausted(_resource_message(f"start a process ({detail})"))
        result.error = status["error"]
    result.exit_code = status.get("exit")
    result.timed_out = fired and bool(status.get("stopped"))
    result.left_running = int(status.get("left_count") or 0)
    result.left_names = tuple(status.get("left_names") or ())
    if status.get("stuck"):
        result.error = (
            f"{status['stuck']} process(es) it started could not be killed within the "
            "grace period and may still be running"
        )


def _wait_unreaped(proc: subprocess.Popen[bytes], shepherd: bool) -> bool:
    """Block until ``proc`` exits, leaving it a zombie (its pid stays reserved).

    A shepherd that is stopped (``kill -STOP $PPID`` from its command) can
    neither reap nor report, and would wait, stopped, until the timeout: pmos
    sees the stop (it is the shepherd's parent) and kills it at once, and the
    command's processes are then adopted by pmos and swept. Returns True when
    that happened."""
    flags = os.WEXITED | os.WNOWAIT
    if shepherd:
        flags |= os.WSTOPPED
    stopped = False
    # ChildProcessError: already reaped; proc.wait() afterwards returns its status.
    with contextlib.suppress(ChildProcessError):
        while True:
            info = os.waitid(os.P_PID, proc.pid, flags)
            if info is None or info.si_code not in (os.CLD_STOPPED, os.CLD_TRAPPED):
                break
            stopped = True
            # WNOWAIT leaves the stop reportable: wait for the exit alone from now on.
            flags = os.WEXITED | os.WNOWAIT
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
    return stopped


def _feed(stream: Any, data: bytes) -> None:
    try:
        stream.write(data)
    except (BrokenPipeError, OSError, ValueError):
        pass  # the command stopped reading; its exit status tells the story
    finally:
        with contextlib.suppress(OSError):
            stream.close()


# ---------------------------------------------------------------- checks


def _rounded(seconds: float) -> float:
    return round(seconds, 3)


def _command_details(command: str, result: CommandResult) -> dict[str, Any]:
    details: dict[str, Any] = {
        "command": command,
        "exit_code": result.exit_code,
        "timed_out": result.timed_out,
        "output_tail": result.output,
        "output_bytes": result.output_bytes,
    }
    if result.incomplete:
        details["output_incomplete"] = True
    if result.left_running:
        details["left_running"] = result.left_running
    return details


def run_command_check(
    exp: Expectation,
    *,
    cwd: Path,
    timeout_s: float,
    tracker: ProcessTracker,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A test or script expectation: the command must exit 0.

    A command that exits 0 but leaves processes running still passes (its own
    verdict is its exit status); the check's reason and ``left_running`` say
    what was left and stopped, and the assessment adds a warning.
    """
    assert exp.command is not None
    result = run_command(exp.command, cwd=cwd, timeout_s=timeout_s, tracker=tracker, env=env)
    passed = result.ok
    reason = "exited 0" if passed else result.failure(timeout_s)
    if result.incomplete:
        reason += "; a background process outlived the command and held its output open"
    left = result.left_note()
    if left:
        reason += f"; {left}"
    return {
        **check_head(exp, passed, reason, result.duration_s),
        **_command_details(exp.command, result),
    }


def _path_state(cwd_fd: int, path: str) -> str | None:
    """None when ``path`` exists beneath the working directory, else why not.

    Symbolic links are followed only while they stay inside the directory: a
    link that leads out is not evidence that the work produced the file. A
    path the system cannot even look up (a name too long, a folder that may
    not be searched) is not there for anyone relying on it, so it fails the
    check with that reason."""
    try:
        return None if beneath.exists_beneath(cwd_fd, path) else "missing"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a loop of symbolic links"
        return beneath.refusal(exc) or f"cannot be checked: {exc.strerror or exc}"


def run_file_check(exp: Expectation, *, cwd_fd: int) -> dict[str, Any]:
    """A file_exists expectation: every path, relative to the working directory, exists."""
    start = time.monotonic()
    states = [(p, _path_state(cwd_fd, p)) for p in exp.paths]
    missing = [p for p, state in states if state is not None]
    if missing:
        shown = [p if state == "missing" else f"{p} ({state})" for p, state in states if state]
        reason = f"missing {len(missing)} of {len(exp.paths)}: {', '.join(shown)}"
    else:
        reason = f"all {len(exp.paths)} path(s) exist"
    return {
        **check_head(exp, not missing, reason, time.monotonic() - start),
        "paths": list(exp.paths),
        "missing": missing,
    }


#: What a check or metric looks like before its command ran.
_NOT_RUN = CommandResult(exit_code=None, timed_out=False, duration_s=0.0, output="", output_bytes=0)


def placeholder_check(exp: Expectation) -> dict[str, Any]:
    """A test, script or file_exists check as recorded, before it ran.

    It holds every value the spec puts into the stored check, built by the same
    code as the real result, so the record can be validated before anything
    runs (see :func:`pmos.assessments.assess`).
    """
    head = check_head(exp, False, "not run", 0.0)
    if exp.type == "file_exists":
        return {**head, "paths": list(exp.paths), "missing": list(exp.paths)}
    assert exp.command is not None
    return {**head, **_command_details(exp.command, _NOT_RUN)}


def placeholder_metric(metric: Metric) -> dict[str, Any]:
    """A metric as recorded, before its command ran (see :func:`placeholder_check`)."""
    return _metric_entry(metric, None, False, "not run", _NOT_RUN)


def check_head(exp: Expectation, passed: bool, reason: str, duration: float) -> dict[str, Any]:
    """The fields every check result starts with, whatever its type."""
    head: dict[str, Any] = {
        "index": exp.index,
        "type": exp.type,
        "passed": passed,
        "reason": reason,
        "duration_s": _rounded(duration),
    }
    if exp.criterion_id is not None:
        head["criterion_id"] = exp.criterion_id
    if exp.confidence is not None:
        head["confidence"] = exp.confidence
    return head


def parse_number(text: str) -> float | None:
    """The metric value a command printed: its whole trimmed stdout, one finite number."""
    stripped = text.strip()
    if not _NUMBER.fullmatch(stripped):
        return None
    value = float(stripped)
    return value if value == value and abs(value) != float("inf") else None


def run_metric(
    metric: Metric,
    *,
    cwd: Path,
    timeout_s: float,
    tracker: ProcessTracker,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Run a metric command; its stdout must be a number >= the threshold."""
    result = run_command(
        metric.command,
        cwd=cwd,
        timeout_s=timeout_s,
        tracker=tracker,
        separate_stderr=True,
        env=env,
    )
    value: float | None = None
    if not result.ok:
        reason = result.failure(timeout_s)
        passed = False
    else:
        value = parse_number(result.output)
        if value is None:
            shown = result.output.strip()
            if len(shown) > 200:
                shown = shown[:200] + "..."
            reason = f"stdout is not a number: {shown!r}"
            passed = False
        else:
            # Compare as decimals: 0.3 printed by the command is 0.3, not 0.29999...
            passed = Decimal(repr(value)) >= Decimal(repr(metric.threshold))
            relation = ">=" if passed else "<"
            reason = f"{value:g} {relation} threshold {metric.threshold:g}"
    left = result.left_note()
    if left:
        reason += f"; {left}"
    return _metric_entry(metric, value, passed, reason, result)


def _metric_entry(
    metric: Metric, value: float | None, passed: bool, reason: str, result: CommandResult
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": metric.name,
        "value": value,
        "threshold": metric.threshold,
        "passed": passed,
        "reason": reason,
        "duration_s": _rounded(result.duration_s),
        "command": metric.command,
        "exit_code": result.exit_code,
        "timed_out": result.timed_out,
        "output_tail": result.output,
    }
    if result.stderr:
        out["stderr_tail"] = result.stderr
    if result.left_running:
        out["left_running"] = result.left_running
    return out


# ---------------------------------------------------------------- together

ReviewRunner = Callable[[Expectation, ProcessTracker], dict[str, Any]]


def run_spec(
    spec: Spec,
    *,
    cwd: Path,
    cwd_fd: int,
    timeout_s: float,
    review: ReviewRunner | None,
    env: Mapping[str, str] | None = None,
    workers: int = DEFAULT_WORKERS,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Run every expectation, then every metric, ``workers`` at a time.

    On any interruption every live command is stopped before the error
    propagates, since their own sessions do not receive the terminal's Ctrl-C.
    """
    tracker = ProcessTracker(workers)

    def one(exp: Expectation) -> dict[str, Any]:
        if exp.type in ("test", "script"):
            return run_command_check(exp, cwd=cwd, timeout_s=timeout_s, tracker=tracker, env=env)
        if exp.type == "file_exists":
            return run_file_check(exp, cwd_fd=cwd_fd)
        if review is None:
            raise RuntimeError("an llm_review expectation needs a review runner")
        return review(exp, tracker)

    with reaper.supervising() if uses_shepherd() else contextlib.nullcontext():
        checks = concurrently(one, spec.expectations, tracker)
        metrics = concurrently(
            lambda m: run_metric(m, cwd=cwd, timeout_s=timeout_s, tracker=tracker, env=env),
            spec.metrics,
            tracker,
        )
    return checks, metrics


_Item = TypeVar("_Item")
_Result = TypeVar("_Result")


def concurrently(
    fn: Callable[[_Item], _Result], items: list[_Item], tracker: ProcessTracker
) -> list[_Result]:
    """``fn`` over ``items`` on at most ``tracker.workers`` threads, results in order.

    The threads are a :class:`~concurrent.futures.ThreadPoolExecutor`'s, started
    whole before any item runs. The executor starts a thread per task submitted
    until it has ``max_workers`` and reuses idle ones after, so how many threads,
    and commands, were ever live at once would depend on how fast the commands
    finish, and a pool too large for the process limit would pass or fail by
    luck. So it is filled first with tasks that hold their thread until every
    thread has started: a pool that cannot start stops here, with
    :class:`~pmos.errors.ResourcesExhausted` and no command run.

    The first item to fail stops the others (every live command is stopped, the
    items not started are cancelled) and its error is raised; the
    :class:`Cancelled` of the items it stopped is not.
    """
    if not items:
        return []
    size = min(len(items), tracker.workers)
    filled = threading.Event()
    executor = ThreadPoolExecutor(max_workers=size, thread_name_prefix="pmos-assess")
    futures: list[Future[_Result]] = []
    try:
        started = 0
        try:
            for _ in range(size):
                executor.submit(filled.wait)
                started += 1
        except RuntimeError as exc:  # "can't start new thread"
            if tracker.commands:
                raise ResourcesExhausted(_resource_message(f"start a thread ({exc})")) from None
            what = f"start a pool of {size} threads for assess.workers ({started} started)"
            raise ResourcesExhausted(_resource_message(what, ran=False)) from None
        finally:
            filled.set()
        futures = [executor.submit(fn, item) for item in items]
        # Wait in slices: Ctrl-C may be delivered to a thread other than this
        # one, and its handler runs here only when this thread wakes.
        while wait(futures, timeout=_WAKE_S, return_when=FIRST_EXCEPTION).not_done:
            if any(f.done() and f.exception() is not None for f in futures):
                break
        failures = [f.exception() for f in futures if f.done() and not f.cancelled()]
        failed = [e for e in failures if e is not None]
        if failed:
            raise next((e for e in failed if not isinstance(e, Cancelled)), failed[0])
        return [f.result() for f in futures]
    except BaseException:
        # Stop first: the threads wait for their commands.
        tracker.kill_all()
        for future in futures:
            future.cancel()
        raise
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
