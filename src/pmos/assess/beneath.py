"""Opening a path strictly beneath a directory descriptor.

An assessment reads files of the assessed working directory (``--cwd``) while
its own commands may be changing that directory: a check can swap ``sub/``
for a symbolic link to ``../outside`` between any two system calls. Resolving
a path with ``os.path.realpath`` and opening it afterwards is therefore a race
that can be lost; so is ``O_NOFOLLOW``, which guards the last component only.

Every path is opened here relative to a descriptor of ``--cwd`` that is taken
once, so the directory cannot be swapped underneath either:

* with Linux's ``openat2`` (5.6+), ``RESOLVE_BENEATH`` makes the kernel refuse
  any resolution that leaves the directory, and ``RESOLVE_NO_SYMLINKS`` any
  symbolic link on the way, in one atomic step;
* elsewhere, the path is walked one component at a time from the directory
  descriptor, each directory opened with ``O_DIRECTORY | O_NOFOLLOW`` relative
  to the previous one, so a component swapped for a link makes the walk fail
  instead of following it.

``follow_links=True`` (used by ``file_exists``) follows links that stay inside
the directory and refuses those that lead out; ``False`` (evidence shown to
reviewers) refuses every link. A refusal is an :class:`OSError` whose errno is
``ELOOP`` (a link where none is allowed) or ``EXDEV`` (the path leads out).
"""

from __future__ import annotations

import ctypes
import errno
import os
import posixpath
import stat
import sys
from collections.abc import Callable

RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
#: openat2's number in the generic syscall table, shared by every architecture
#: Linux added it to at once (x86-64, arm64, arm, riscv, ppc, s390, mips...).
_SYS_OPENAT2 = 437
_MAX_LINKS = 40
_RETRIES = 8
#: Flags for opening something only to learn that it exists.
PATH_ONLY = getattr(os, "O_PATH", os.O_RDONLY | os.O_NONBLOCK) | os.O_CLOEXEC
#: Flags for reading a file's content without blocking on a pipe.
READ = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC


def refusal(exc: OSError) -> str | None:
    """What a refused resolution means, in words; None for any other error."""
    if exc.errno == errno.ELOOP:
        return "it is a symbolic link or passes through one, which assess does not follow"
    if exc.errno == errno.EXDEV:
        return "it leads outside --cwd"
    return None


def open_dir(path: str | os.PathLike[str]) -> int:
    """A descriptor of the directory ``path`` to resolve paths beneath."""
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


def open_beneath(dirfd: int, relpath: str, *, follow_links: bool, flags: int = READ) -> int:
    """Open ``relpath`` beneath ``dirfd`` (see the module docstring); returns a descriptor.

    ``relpath`` is normalised as text first (``a/../b`` is ``b``); a path that
    climbs above the directory that way is refused with ``EXDEV``.
    """
    rel = posixpath.normpath(relpath)
    if posixpath.isabs(rel) or rel == ".." or rel.startswith("../"):
        raise OSError(errno.EXDEV, os.strerror(errno.EXDEV), relpath)
    opener = _openat2_opener()
    if opener is not None:
        resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS
        if not follow_links:
            resolve |= RESOLVE_NO_SYMLINKS
        for _ in range(_RETRIES):
            try:
                return opener(dirfd, rel, flags, resolve)
            except OSError as exc:
                # EAGAIN: a rename raced the lookup; the kernel asks for a retry.
                if exc.errno != errno.EAGAIN:
                    raise OSError(exc.errno, exc.strerror, relpath) from None
        raise OSError(errno.EAGAIN, "the path kept changing while it was opened", relpath)
    return walk_beneath(dirfd, rel, follow_links=follow_links, flags=flags)


def walk_beneath(dirfd: int, relpath: str, *, follow_links: bool, flags: int = READ) -> int:
    """The portable fallback of :func:`open_beneath`: one component at a time."""
    todo = [p for p in relpath.split("/") if p not in ("", ".")]
    stack = [os.dup(dirfd)]
    links = 0
    try:
        while todo:
            name = todo.pop(0)
            if name == "..":
                if len(stack) == 1:
                    raise OSError(errno.EXDEV, os.strerror(errno.EXDEV), relpath)
                os.close(stack.pop())
                continue
            here = stack[-1]
            info = os.stat(name, dir_fd=here, follow_symlinks=False)
            if stat.S_ISLNK(info.st_mode):
                links += 1
                if not follow_links or links > _MAX_LINKS:
                    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), relpath)
                target = os.readlink(name, dir_fd=here)
                if target.startswith("/"):
                    raise OSError(errno.EXDEV, os.strerror(errno.EXDEV), relpath)
                todo = [p for p in target.split("/") if p not in ("", ".")] + todo
                continue
            if not todo:
                # O_NOFOLLOW: a link swapped in since the lstat above is refused.
                return os.open(name, flags | os.O_NOFOLLOW, dir_fd=here)
            nofollow = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
            stack.append(os.open(name, nofollow, dir_fd=here))
        return os.open(".", flags, dir_fd=stack[-1])
    finally:
        for fd in stack:
            os.close(fd)


def exists_beneath(dirfd: int, relpath: str) -> bool:
    """True when ``relpath`` names something beneath ``dirfd`` (links inside followed).

    Raises :class:`OSError` for a path that leads outside (``EXDEV``) or that
    cannot be looked up; a missing path is False.
    """
    try:
        fd = open_beneath(dirfd, relpath, follow_links=True, flags=PATH_ONLY)
    except (FileNotFoundError, NotADirectoryError):
        return False
    os.close(fd)
    return True


def read_beneath(dirfd: int, relpath: str, limit: int) -> tuple[bytes, int]:
    """The first ``limit`` bytes of the regular file ``relpath`` and its full size,
    reached through no symbolic link. A pipe or device is refused (``EINVAL``):
    reading one could block the assessment forever."""
    fd = open_beneath(dirfd, relpath, follow_links=False, flags=READ)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", relpath)
        chunks: list[bytes] = []
        have = 0
        while have < limit:
            chunk = os.read(fd, min(limit - have, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            have += len(chunk)
        return b"".join(chunks), max(info.st_size, have)
    finally:
        os.close(fd)


# ---------------------------------------------------------------- openat2

_Opener = Callable[[int, str, int, int], int]
_OPENER: list[_Opener | None] = []


def _openat2_opener() -> _Opener | None:
    """``openat2`` through ctypes, or None where the kernel or libc lacks it."""
    if _OPENER:
        return _OPENER[0]
    opener = _load_openat2() if sys.platform.startswith("linux") else None
    _OPENER.append(opener)
    return opener


def _load_openat2() -> _Opener | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        syscall = libc.syscall
    except (OSError, AttributeError):
        return None

    class OpenHow(ctypes.Structure):
        _fields_ = [
            ("flags", ctypes.c_uint64),
            ("mode", ctypes.c_uint64),
            ("resolve", ctypes.c_uint64),
        ]

    syscall.restype = ctypes.c_long

    def openat2(dirfd: int, path: str, flags: int, resolve: int) -> int:
        how = OpenHow(flags, 0, resolve)
        fd = syscall(
            ctypes.c_long(_SYS_OPENAT2),
            ctypes.c_int(dirfd),
            ctypes.c_char_p(os.fsencode(path)),
            ctypes.byref(how),
            ctypes.c_size_t(ctypes.sizeof(how)),
        )
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
        return int(fd)

    # Probe once: ENOSYS (an old kernel) or a seccomp filter that refuses the
    # call means the portable walk is used instead.
    root = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.close(openat2(root, ".", PATH_ONLY, RESOLVE_BENEATH))
    except OSError:
        return None
    finally:
        os.close(root)
    return openat2
