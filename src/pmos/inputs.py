"""Reading files a user names: refuse what would hang or flood pmos.

A FIFO or a device named as an input would block a command forever, and a
multi-gigabyte "verdict" would be read whole into memory. Every file a user
passes in (a verdict, a contract, a spec, a score input, a log) goes through
:func:`check_regular_file` first; ``-`` means standard input where allowed.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from pmos.errors import BadInput

#: Inputs larger than this are refused (ledgers are not inputs and are streamed).
MAX_INPUT_BYTES = 64 * 1024 * 1024


def check_regular_file(path: str | Path, *, what: str) -> Path:
    """``path`` if it names a regular file; a clear error otherwise."""
    path = Path(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise BadInput(f"cannot read {what} {path}: no such file") from None
    except OSError as exc:
        raise BadInput(f"cannot read {what} {path}: {exc.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        raise BadInput(f"{what} {path} is a folder, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise BadInput(f"{what} {path} is not a regular file (a pipe or a device?)")
    return path


def read_input(source: str | Path, *, what: str, stdin_ok: bool = True) -> bytes:
    """The bytes of a user-named input file, or of standard input for ``-``."""
    if stdin_ok and str(source) == "-":
        data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
    else:
        path = check_regular_file(source, what=what)
        try:
            with open(path, "rb") as handle:
                data = handle.read(MAX_INPUT_BYTES + 1)
        except OSError as exc:
            raise BadInput(f"cannot read {what} {path}: {exc.strerror}") from None
    if len(data) > MAX_INPUT_BYTES:
        raise BadInput(f"{what} {source} is larger than {MAX_INPUT_BYTES // (1024 * 1024)} MB")
    return data


def read_json_input(source: str | Path, *, what: str) -> object:
    """A JSON document from a user-named file or ``-`` (standard input)."""
    import orjson

    raw = read_input(source, what=what)
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        where = "standard input" if str(source) == "-" else f"{what} {source}"
        raise BadInput(f"{where} is not valid JSON: {exc}") from None


def read_input_text(source: str | Path, *, what: str, stdin_ok: bool = True) -> str:
    """:func:`read_input` decoded as UTF-8."""
    data = read_input(source, what=what, stdin_ok=stdin_ok)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{what} {source} is not UTF-8 text: {exc}") from None
