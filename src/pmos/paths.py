"""Paths named in records and config must stay inside the kit root.

One rule with two strengths. A file pmos *reads* (a rubric, a known-bad case)
may be reached through a symlink as long as it resolves inside the kit root.
A file pmos *writes* (a ledger, the exemplar log) must be named plainly: no
symlink anywhere on the way, so what the configuration says is what gets
written.
"""

from __future__ import annotations

import os
from pathlib import Path

from pmos.errors import BadInput, SinkRefused


def resolve_inside(root: Path, named: str | Path, *, what: str, for_writing: bool) -> Path:
    """The real path of ``named`` (relative to ``root``, or absolute), inside ``root``.

    Raises :class:`SinkRefused` for a write target and :class:`BadInput` for a
    file to read, naming ``what`` in the message.
    """
    error = SinkRefused if for_writing else BadInput
    if not str(named).strip():
        raise error(f"{what} is an empty path")
    if "\x00" in str(named):
        raise error(f"{what} contains a NUL character")
    real_root = Path(os.path.realpath(root))
    lexical = Path(os.path.normpath(real_root / named))
    real = Path(os.path.realpath(lexical))
    if for_writing and real != lexical:
        raise error(
            f"{what} {str(named)!r} passes through a symlink (it resolves to {real}); "
            "files pmos writes must be plain paths inside the kit root"
        )
    if real_root not in real.parents:
        raise error(f"{what} {str(named)!r} leaves the kit root {real_root}")
    return real
