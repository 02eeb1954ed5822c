"""Paths named in records and config must stay inside the kit root.

One rule with two strengths. A file pmos *reads* (a rubric, a known-bad case)
may be reached through a symlink as long as it resolves inside the kit root.
A file pmos *writes* (a ledger, the exemplar log) must be named plainly: no
symlink anywhere on the way, so what the configuration says is what gets
written.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePath

from pmos.errors import BadInput, SinkRefused


def resolve_inside(
    root: Path, named: str | Path, *, what: str, for_writing: bool, real_root: Path | None = None
) -> Path:
    """The real path of ``named`` (relative to ``root``, or absolute), inside ``root``.

    Raises :class:`SinkRefused` for a write target and :class:`BadInput` for a
    file to read, naming ``what`` in the message. ``real_root``, when given, is
    ``Path(os.path.realpath(root))`` already worked out by a caller that resolves
    several paths under one root.
    """
    error = SinkRefused if for_writing else BadInput
    if not str(named).strip():
        raise error(f"{what} is an empty path")
    if "\x00" in str(named):
        raise error(f"{what} contains a NUL character")
    if real_root is None:
        real_root = Path(os.path.realpath(root))
    lexical = Path(os.path.normpath(real_root / named))
    real = Path(os.path.realpath(lexical))
    if for_writing and real != lexical:
        raise error(
            f"{what} {str(named)!r} passes through a symlink (it resolves to {real}); "
            "files pmos writes must be plain paths inside the kit root"
        )
    if not is_below(real, real_root):
        raise error(f"{what} {str(named)!r} leaves the kit root {real_root}")
    return real


def is_below(path: PurePath, folder: PurePath) -> bool:
    """``folder in path.parents`` (``folder`` is one of ``path``'s ancestors), asked
    of the one parent that has as many parts as ``folder``: the same answer, without
    building every parent (the ledger paths are checked on every read and write)."""
    parents = path.parents
    up = len(path.parts) - 1 - len(folder.parts)  # parents[up] has len(folder.parts) parts
    return 0 <= up < len(parents) and parents[up] == folder
