"""Files that appear whole or not at all: write a temporary file, fsync, rename, fsync the folder.

Every file pmos creates once and never changes (ledger records, packs, override
entries) is made here, so neither a crash nor SIGKILL leaves a torn file
behind, and a file a caller was told exists is on disk.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

#: The prefix of temporary files; readers of a folder skip names starting with a dot.
TEMP_PREFIX = ".tmp-"


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def fsync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_temp(folder: Path, data: bytes) -> Path:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    flags |= getattr(os, "O_NOFOLLOW", 0)
    temp = folder / f"{TEMP_PREFIX}{os.getpid()}-{os.urandom(6).hex()}"
    fd = os.open(temp, flags, 0o644)
    try:
        _write_all(fd, data)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    os.close(fd)
    return temp


def write_many(folder: Path, files: Iterable[tuple[str, bytes]]) -> list[Path]:
    """Create each ``(name, data)`` in ``folder``, whole, and fsync the folder once.

    All or nothing: if any file cannot be written, those already renamed into
    place by this call are removed again before the error is raised. A name
    that exists already is left as it is (names carry their content's digest,
    so an existing file of that name holds the same record).
    """
    done: list[Path] = []
    try:
        for name, data in files:
            final = folder / name
            if final.exists():
                continue
            temp = _write_temp(folder, data)
            os.rename(temp, final)
            done.append(final)
        fsync_folder(folder)
    except BaseException:
        for path in done:
            with contextlib.suppress(OSError):
                path.unlink()
        with contextlib.suppress(OSError):
            fsync_folder(folder)
        raise
    return done


def write_once(folder: Path, name: str, data: bytes) -> Path:
    """Create one file (see :func:`write_many`)."""
    write_many(folder, [(name, data)])
    return folder / name


def replace_file(path: Path, data: bytes) -> None:
    """Replace ``path``'s content whole (a temporary file renamed over it): a reader
    sees the old file or the new one, never a torn one."""
    temp = _write_temp(path.parent, data)
    try:
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    fsync_folder(path.parent)


def write_temp(folder: Path, data: bytes) -> Path:
    """``data`` in a new temporary file of ``folder``, fsynced: the first half of a
    write that :func:`publish` completes and :func:`discard` undoes, so a writer
    that must store two things (a record and a side file) can find out whether the
    side file can be written before it stores anything."""
    return _write_temp(folder, data)


def publish(temp: Path, name: str) -> Path:
    """Give the temporary file made by :func:`write_temp` its final ``name`` in its
    folder, and fsync the folder; an existing file of that name is kept (and the
    temporary file removed)."""
    final = temp.parent / name
    if final.exists() or final.is_symlink():
        discard(temp)
        return final
    os.rename(temp, final)
    fsync_folder(temp.parent)
    return final


def discard(temp: Path) -> None:
    """Remove a temporary file of :func:`write_temp` that will not be published."""
    with contextlib.suppress(OSError):
        os.unlink(temp)
