"""Running an assessment's commands: Bash, a timeout, bounded output, no strays.

Every command runs as ``bash -c`` in the assessed working directory, in a
session of its own so that a timeout (or Ctrl-C) can kill its whole process
group: a test runner's workers or a server a script started die with it.
Anything a command leaves running in the background is stopped when the
command itself exits, so an assessment never leaves processes behind. Only
the last few kilobytes of output are kept, so a chatty test suite cannot
exhaust memory or bloat the ledger.

A multi-line command is a script: it runs with ``set -e``, so it fails at its
first failing line instead of reporting only its last line's status. Exit 0
is success; there is no other success code.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from pmos.assess.spec import Expectation, Metric, Spec

OUTPUT_TAIL_BYTES = 4096
DEFAULT_TIMEOUT_S = 600.0
#: How long to wait for output pipes to close after a command ended and its
#: group was killed; only a process that left the group can hold them longer.
_DRAIN_S = 5.0
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


class Cancelled(Exception):
    """The assessment was interrupted before this command could start."""


class ProcessTracker:
    """The live process groups of one assessment, so an interrupt can kill them all."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: set[int] = set()
        self._cancelled = False

    def started(self, pid: int) -> None:
        with self._lock:
            if self._cancelled:
                _kill_group(pid)
                raise Cancelled()
            self._live.add(pid)

    def finished(self, pid: int) -> None:
        with self._lock:
            self._live.discard(pid)

    def check(self) -> None:
        with self._lock:
            if self._cancelled:
                raise Cancelled()

    def kill_all(self) -> None:
        with self._lock:
            self._cancelled = True
            live = list(self._live)
        for pid in live:
            _kill_group(pid)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


class _Tail:
    """Reads a pipe to its end, keeping only the last ``limit`` bytes."""

    def __init__(self, stream: Any, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.total = 0
        self._stream = stream
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

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
    env: dict[str, str] | None = None,
    separate_stderr: bool = False,
    tail_bytes: int = OUTPUT_TAIL_BYTES,
) -> CommandResult:
    """Run ``command`` with Bash in ``cwd``; never raises for a failing command."""
    tracker = tracker or ProcessTracker()
    tracker.check()
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            ["bash", "-c", script_for(command)],
            cwd=cwd,
            stdin=subprocess.PIPE if stdin_data is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if separate_stderr else subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    except OSError as exc:
        return CommandResult(
            None, False, time.monotonic() - start, "", 0, error=f"could not start bash: {exc}"
        )
    try:
        tracker.started(proc.pid)
    except Cancelled:
        proc.wait()
        raise
    out = _Tail(proc.stdout, tail_bytes)
    err = _Tail(proc.stderr, tail_bytes) if separate_stderr else None
    if stdin_data is not None:
        threading.Thread(target=_feed, args=(proc.stdin, stdin_data), daemon=True).start()
    fired = threading.Event()

    def on_timeout() -> None:
        fired.set()
        _kill_group(proc.pid)

    timer = threading.Timer(timeout_s, on_timeout)
    timer.daemon = True
    timer.start()
    try:
        _wait_unreaped(proc)
    finally:
        timer.cancel()
        # The leader is exited but not reaped, so its group id cannot have been
        # reused: kill whatever the command left running, so the pipes close.
        _kill_group(proc.pid)
        tracker.finished(proc.pid)
        proc.wait()
    timed_out = fired.is_set() and proc.returncode == -signal.SIGKILL
    incomplete = not out.join(_DRAIN_S)
    if err is not None:
        incomplete = not err.join(_DRAIN_S) or incomplete
    for stream, tail in ((proc.stdout, out), (proc.stderr, err)):
        if stream is not None and tail is not None and not incomplete:
            stream.close()
    return CommandResult(
        exit_code=None if timed_out else proc.returncode,
        timed_out=timed_out,
        duration_s=time.monotonic() - start,
        output=out.text(),
        output_bytes=out.total,
        stderr=err.text() if err is not None else "",
        incomplete=incomplete,
    )


def _wait_unreaped(proc: subprocess.Popen[bytes]) -> None:
    """Block until ``proc`` exits, leaving it a zombie (its pid stays reserved)."""
    # ChildProcessError: already reaped; proc.wait() afterwards returns its status.
    with contextlib.suppress(ChildProcessError):
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)


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
    return details


def run_command_check(
    exp: Expectation, *, cwd: Path, timeout_s: float, tracker: ProcessTracker
) -> dict[str, Any]:
    """A test or script expectation: the command must exit 0."""
    assert exp.command is not None
    result = run_command(exp.command, cwd=cwd, timeout_s=timeout_s, tracker=tracker)
    passed = result.ok
    reason = "exited 0" if passed else result.failure(timeout_s)
    if result.incomplete:
        reason += "; a background process outlived the command and held its output open"
    return {
        **check_head(exp, passed, reason, result.duration_s),
        **_command_details(exp.command, result),
    }


def _path_state(path: Path) -> str | None:
    """None when ``path`` exists, else why not. A path the system cannot even look
    up (a name too long, a folder that may not be searched) is not there for
    anyone relying on it, so it fails the check with that reason."""
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    except OSError as exc:
        return f"cannot be checked: {exc.strerror or exc}"
    return None


def run_file_check(exp: Expectation, *, cwd: Path) -> dict[str, Any]:
    """A file_exists expectation: every path, relative to the working directory, exists."""
    start = time.monotonic()
    states = [(p, _path_state(cwd / p)) for p in exp.paths]
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
    metric: Metric, *, cwd: Path, timeout_s: float, tracker: ProcessTracker
) -> dict[str, Any]:
    """Run a metric command; its stdout must be a number >= the threshold."""
    result = run_command(
        metric.command, cwd=cwd, timeout_s=timeout_s, tracker=tracker, separate_stderr=True
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
    return out


# ---------------------------------------------------------------- together

ReviewRunner = Callable[[Expectation, ProcessTracker], dict[str, Any]]


def run_spec(
    spec: Spec,
    *,
    cwd: Path,
    timeout_s: float,
    review: ReviewRunner | None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Run every expectation concurrently, then every metric concurrently.

    On any interruption every live process group is killed before the error
    propagates, since their own sessions do not receive the terminal's Ctrl-C.
    """
    tracker = ProcessTracker()

    def one(exp: Expectation) -> dict[str, Any]:
        if exp.type in ("test", "script"):
            return run_command_check(exp, cwd=cwd, timeout_s=timeout_s, tracker=tracker)
        if exp.type == "file_exists":
            return run_file_check(exp, cwd=cwd)
        if review is None:
            raise RuntimeError("an llm_review expectation needs a review runner")
        return review(exp, tracker)

    checks = concurrently(one, spec.expectations, tracker)
    metrics = concurrently(
        lambda m: run_metric(m, cwd=cwd, timeout_s=timeout_s, tracker=tracker),
        spec.metrics,
        tracker,
    )
    return checks, metrics


def concurrently(
    fn: Callable[[Any], dict[str, Any]], items: list[Any], tracker: ProcessTracker
) -> list[dict[str, Any]]:
    if not items:
        return []
    pool = ThreadPoolExecutor(max_workers=len(items))
    try:
        futures = [pool.submit(fn, item) for item in items]
        return [f.result() for f in futures]
    except BaseException:
        # Kill first: the pool waits for its threads, and they wait for their commands.
        tracker.kill_all()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
