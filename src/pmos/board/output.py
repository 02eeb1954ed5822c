"""Writing the board file: never over a ledger, never over someone else's file, never half.

The default place is ``board.html`` in the kit's ``state/`` folder. A path the
user names is checked first: it must not be (or lie inside) a configured
ledger, and an existing file is replaced only when it is itself a board (it
starts with the board's marker), so ``--out README.md`` cannot destroy a
document by a slip of the hand. The file is written to a temporary name in
the same folder and renamed into place, so a reader never sees half a board.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from pmos.board.page import MARKER
from pmos.errors import BadInput
from pmos.kit import Kit
from pmos.store.registry import LEDGER_KINDS

DEFAULT_NAME = "board.html"
STATE_DIR = "state"


def default_path(kit: Kit) -> Path:
    return Path(kit.root) / STATE_DIR / DEFAULT_NAME


def check_target(kit: Kit, target: Path) -> Path:
    """``target`` made absolute, after every rule; raises :class:`BadInput` on the first broken."""
    path = Path(os.path.abspath(target))
    real = Path(os.path.realpath(path))
    for kind in LEDGER_KINDS:
        folder = kit.store.folder(kind)
        single_file = folder.with_name(folder.name + ".jsonl")  # an older kit's ledger
        if real in (folder, single_file) or folder in real.parents:
            raise BadInput(
                f"refusing to write the board to {target}: that is the {kind} ledger's place; "
                "choose another --out"
            )
    if not path.parent.is_dir():
        raise BadInput(
            f"cannot write the board to {target}: the folder {path.parent} does not exist"
        )
    try:
        st = path.lstat()
    except FileNotFoundError:
        return path
    if stat.S_ISLNK(st.st_mode):
        raise BadInput(f"refusing to write the board through the symlink {target}")
    if not stat.S_ISREG(st.st_mode):
        raise BadInput(f"refusing to write the board to {target}: it is not a regular file")
    with open(path, "rb") as handle:
        head = handle.read(len(MARKER.encode()))
    if st.st_size and head != MARKER.encode():
        raise BadInput(
            f"refusing to overwrite {target}: it is not a board written by 'pmos board'; "
            "remove it or choose another --out"
        )
    return path


def write_board(kit: Kit, html: str, target: Path | None) -> Path:
    """Write ``html`` to ``target`` (default: ``state/board.html``) atomically; returns the path."""
    path = check_target(kit, target if target is not None else default_path(kit))
    data = html.encode("utf-8")
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    return path
