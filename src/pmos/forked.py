"""Run one function in a forked child process while the caller works on.

``pmos metrics`` reads two large, independent ledgers before it can pair
them. Reading one in a child while the parent reads the other uses a second
core and roughly halves the wall time on large kits; small kits never fork
(see the callers' thresholds). The child sends its result back pickled through
a pipe; an exception raised in the child is re-raised in the parent, so a
corrupt ledger reports the same error either way.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import traceback
from collections.abc import Callable
from typing import Any

from pmos.errors import PmosError


class ForkedCall:
    """A function running in a child process; :meth:`result` waits for it."""

    def __init__(self, function: Callable[..., Any], *args: Any) -> None:
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: compute, send, and leave without running any cleanup
            os.close(read_fd)
            try:
                _child(write_fd, function, args)
            finally:
                os._exit(0)
        os.close(write_fd)
        self._pid: int | None = pid
        self._fd: int | None = read_fd

    def result(self) -> Any:
        """The function's return value, or its exception raised here."""
        if self._fd is None:
            raise RuntimeError("the result of a forked call can be taken once")
        with os.fdopen(self._fd, "rb") as pipe:
            self._fd = None
            data = pipe.read()
        status = self._reap()
        if not data:
            raise PmosError(f"a reader process ended without a result (wait status {status})")
        outcome, value = pickle.loads(data)
        if outcome == "raise":
            raise value
        return value

    def cancel(self) -> None:
        """Stop the child if it is still running (after an error in the parent)."""
        if self._pid is not None:
            with contextlib.suppress(ProcessLookupError):  # already gone
                os.kill(self._pid, signal.SIGKILL)
            self._reap()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _reap(self) -> int | None:
        pid, self._pid = self._pid, None
        if pid is None:
            return None
        return os.waitpid(pid, 0)[1]


def _child(write_fd: int, function: Callable[..., Any], args: tuple) -> None:
    try:
        payload = pickle.dumps(("return", function(*args)), protocol=pickle.HIGHEST_PROTOCOL)
    except BaseException as exc:  # sent to the parent, which raises it
        try:
            payload = pickle.dumps(("raise", exc), protocol=pickle.HIGHEST_PROTOCOL)
            pickle.loads(payload)  # an exception that cannot travel becomes a plain error
        except Exception:
            text = "".join(traceback.format_exception(exc)).rstrip()
            payload = pickle.dumps(("raise", RuntimeError(f"in a reader process: {text}")))
    with os.fdopen(write_fd, "wb") as pipe:
        pipe.write(payload)
