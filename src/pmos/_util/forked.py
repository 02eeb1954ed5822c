"""Run one function in a forked child process while the caller works on.

Some commands hold two large pieces of independent work: ``pmos sync`` reads
the kit's verification, report and queue beside its copy into the database,
the board collects its panels, ``pmos gate`` computes the calibration at the
base while it checks the change. Running one in a child while the parent does
the other uses a second core; small kits never fork (see the callers'
thresholds). The child sends its result back pickled through
a pipe; an exception raised in the child is re-raised in the parent, so a
corrupt ledger reports the same error either way. With an inbox, the parent
can hand the child one more value while both run (the labels it has read),
so the child can finish the work that needs both. With an outbox, the child
can hand the parent one value before its result (what the parent needs to
finish its own part).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import threading
import traceback
from collections.abc import Callable
from typing import Any

from pmos.errors import PmosError


class ForkedCall:
    """A function running in a child process; :meth:`result` waits for it.

    With ``inbox=True`` the function is called as ``function(receive, *args)``:
    ``receive()`` blocks until the parent's :meth:`send` and returns its value.
    With ``outbox=True`` it gets ``post`` next: ``post(value)`` hands the parent
    one value, which :meth:`early` returns, while the function goes on.
    ``nice`` raises the child's niceness by that much: work the caller does not
    wait for until later yields the processor to the work it waits for now.
    """

    def __init__(
        self,
        function: Callable[..., Any],
        *args: Any,
        inbox: bool = False,
        outbox: bool = False,
        nice: int = 0,
    ) -> None:
        read_fd, write_fd = os.pipe()
        inbox_read, inbox_write = os.pipe() if inbox else (None, None)
        outbox_read, outbox_write = os.pipe() if outbox else (None, None)
        pid = os.fork()
        if pid == 0:  # the child: compute, send, and leave without running any cleanup
            os.close(read_fd)
            try:
                if nice:
                    os.nice(nice)
                if outbox_write is not None:
                    os.close(outbox_read)  # type: ignore[arg-type]
                    args = (lambda value: _write_value(outbox_write, value), *args)
                if inbox_read is not None:
                    os.close(inbox_write)  # type: ignore[arg-type]
                    args = (lambda: _read_value(inbox_read), *args)
                _child(write_fd, function, args)
            finally:
                os._exit(0)
        os.close(write_fd)
        if inbox_read is not None:
            os.close(inbox_read)
        if outbox_write is not None:
            os.close(outbox_write)
        self._outbox: int | None = outbox_read
        self._pid: int | None = pid
        self._fd: int | None = read_fd
        self._inbox: int | None = inbox_write
        self._sender: threading.Thread | None = None

    def send(self, value: Any) -> None:
        """Hand ``value`` to the child's ``receive()`` without waiting for it to read.

        A pipe holds only 64 KiB and the child reads when its own work is
        done, so a thread writes while this process goes on. If the child is
        gone, the value is dropped: :meth:`result` reports why it ended.
        """
        if self._inbox is None:
            raise RuntimeError("this forked call has no inbox, or it was sent to already")
        fd, self._inbox = self._inbox, None
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)

        def write() -> None:
            try:
                with contextlib.suppress(BrokenPipeError), os.fdopen(fd, "wb") as pipe:
                    pipe.write(data)
            except OSError:
                pass  # the child is gone; result() says why

        self._sender = threading.Thread(target=write, daemon=True)
        self._sender.start()

    def early(self) -> Any:
        """The value the child posted (waiting for it). If the child ended
        without posting, its result is taken: its exception is raised here."""
        if self._outbox is None:
            raise RuntimeError("this forked call has no outbox, or its value was taken")
        data = self._take_outbox()
        if data:
            return pickle.loads(data)
        self.result()  # raises the child's error
        raise PmosError("a reader process ended before posting its part")

    def result(self) -> Any:
        """The function's return value, or its exception raised here."""
        if self._fd is None:
            raise RuntimeError("the result of a forked call can be taken once")
        self._drop_unsent()
        if self._outbox is not None:  # never taken: read it, so the child is not stuck posting
            self._take_outbox()
        with os.fdopen(self._fd, "rb") as pipe:
            self._fd = None
            data = pipe.read()
        status = self._reap()
        self._close_inbox()
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
        self._close_inbox()

    def _take_outbox(self) -> bytes:
        """What the child posted (empty: it ended without posting), read to the end."""
        fd, self._outbox = self._outbox, None
        with os.fdopen(fd, "rb") as pipe:  # type: ignore[arg-type]
            data: bytes = pipe.read()
        return data

    def _drop_unsent(self) -> None:
        if self._inbox is not None:  # never sent: a waiting child sees end of file
            os.close(self._inbox)
            self._inbox = None

    def _close_inbox(self) -> None:
        self._drop_unsent()
        if self._outbox is not None:
            os.close(self._outbox)
            self._outbox = None
        if self._sender is not None:  # the child has exited, so the writer cannot block
            self._sender.join()
            self._sender = None

    def _reap(self) -> int | None:
        pid, self._pid = self._pid, None
        if pid is None:
            return None
        return os.waitpid(pid, 0)[1]


def _read_value(fd: int) -> Any:
    with os.fdopen(fd, "rb") as pipe:
        data = pipe.read()
    if not data:
        raise PmosError("the parent process ended before sending its part")
    return pickle.loads(data)


def _write_value(fd: int, value: Any) -> None:
    with os.fdopen(fd, "wb") as pipe:
        pipe.write(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))


def _child(write_fd: int, function: Callable[..., Any], args: tuple[Any, ...]) -> None:
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
