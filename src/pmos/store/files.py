"""Write-once files and the per-kind lock: the store's only ways to touch the disk.

A file appears whole or not at all: it is written under a temporary name,
fsynced, renamed to its final name and the folder is fsynced, so neither a
crash nor SIGKILL leaves a torn record behind (a leftover temporary file is
ignored by readers and removed by ``pmos ledger pack``).

Writers whose checks read the ledger they write (a run registered once, the
pass fraction before a verdict) hold the kind's lock: an exclusive ``flock`` on
the ledger's marker file. Locking a file never modifies it, so the lock leaves
nothing for git to see.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from pmos.atomic import fsync_folder
from pmos.errors import LedgerBusy
from pmos.store.layout import MARKER, TEMP_PREFIX

LOCK_TIMEOUT_S = 30.0
#: A temporary file older than this is a crash remnant, not a write in flight.
STALE_TEMP_S = 3600.0


#: Deleting a file whose blocks are on disk waits on the file system's journal
#: (milliseconds each on a busy virtual disk); many deletions in flight at once
#: share those waits (ext4, 100,000 synced files: 21 s one by one, 11 s among
#: 32 threads; more threads gain nothing more).
REMOVERS = 32
#: Files deleted one by one, and timed, before the rest may go to threads.
PROBE = 256
#: A deletion that takes longer than this waited: over 150 us on ext4 for nine in
#: ten synced files, under 7 us on tmpfs for nine in ten.
WAITED_S = 40e-6


def remove_many(folder: Path, paths: Iterable[str | Path]) -> None:
    """Delete files that were folded elsewhere, then fsync the folder.

    The first :data:`PROBE` files are deleted here, one by one, and timed. If
    their deletions waited (on a journal; the median is taken, as a busy
    machine may pause any one of them), the rest are split among
    :data:`REMOVERS` threads, each deleting its share in a plain loop (a future
    per file cost more than the deletion's own CPU); if not (tmpfs), threads
    would only contend for the folder's lock, which doubled the cost (100,000
    files: 0.6 s in a loop, 1.15 s among threads), and the rest are deleted
    here too. The first error other than an already-missing file stops its
    share and is raised after every share has finished.
    """
    todo = [os.fspath(p) for p in paths]
    errors: list[BaseException] = []

    def remove(share: list[str], times: list[float] | None = None) -> None:
        clock = time.perf_counter
        try:
            for name in share:
                start = clock() if times is not None else 0.0
                # Not contextlib.suppress: a context manager per file costs 1 us.
                try:  # noqa: SIM105
                    os.unlink(name)
                except FileNotFoundError:
                    pass
                if times is not None:
                    times.append(clock() - start)
        except BaseException as exc:  # raised in the caller's thread, below
            errors.append(exc)

    probe, rest = todo[:PROBE], todo[PROBE:]
    times: list[float] = []
    remove(probe, times)
    waited = bool(times) and sorted(times)[len(times) // 2] > WAITED_S  # the median
    if waited and len(rest) > 16:
        count = min(REMOVERS, len(rest))
        threads = [threading.Thread(target=remove, args=(rest[i::count],)) for i in range(count)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    elif rest:
        remove(rest)
    if errors:
        raise errors[0]
    fsync_folder(folder)


def stale_temps(folder: Path) -> list[Path]:
    """Temporary files left by writers that died (older than :data:`STALE_TEMP_S`)."""
    now = time.time()
    out = []
    # Writers make them in the day folder they write to: every folder of the ledger.
    for where, _, names in os.walk(folder):
        for name in names:
            if name.startswith(TEMP_PREFIX):
                path = os.path.join(where, name)
                with contextlib.suppress(FileNotFoundError):
                    if now - os.lstat(path).st_mtime > STALE_TEMP_S:
                        out.append(Path(path))
    return out


@contextlib.contextmanager
def kind_lock(
    folder: Path, *, shared: bool = False, timeout: float | None = None
) -> Iterator[None]:
    """Hold the ledger's lock (exclusive, or shared for a consistent listing)."""
    fd = os.open(folder / MARKER, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        _lock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX, folder, timeout)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _lock(fd: int, kind: int, folder: Path, timeout: float | None) -> None:
    limit = LOCK_TIMEOUT_S if timeout is None else timeout
    deadline = time.monotonic() + limit
    delay = 0.0005
    while True:
        try:
            fcntl.flock(fd, kind | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
        if time.monotonic() >= deadline:
            raise LedgerBusy(f"{folder}: could not lock the ledger within {limit:.0f}s")
        time.sleep(delay)
        delay = min(delay * 2, 0.02)
