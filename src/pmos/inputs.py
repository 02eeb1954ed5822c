"""Reading files a user names: refuse what would hang or flood pmos.

A FIFO or a device named as an input would block a command forever, and a
multi-gigabyte "verdict" would be read whole into memory. Every file a user
passes in (a verdict, a contract, a spec, a score input, a log) goes through
:func:`check_regular_file` first; ``-`` means standard input where allowed.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import orjson

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
    """A JSON document from a user-named file or ``-`` (standard input); an
    object that repeats a key is refused, naming it."""
    raw = read_input(source, what=what)
    where = "standard input" if str(source) == "-" else f"{what} {source}"
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise BadInput(f"{where} is not valid JSON: {exc}") from None
    repeated = duplicate_json_key(raw)
    if repeated is not None:
        raise BadInput(f"{where} is not valid JSON: {repeated}")
    return data


def duplicate_json_key(raw: bytes | str) -> str | None:
    """Which key an object of the JSON text ``raw`` repeats, in words, or None.

    orjson (like most parsers) keeps a repeated key's last value without a
    word, so a verdict could say one thing to a reader of the file and another
    to pmos. The standard library's parser hands each object's pairs over in
    order, so it sees every repetition; on text orjson has already accepted it
    costs about as much again as orjson's own parse (a counting shortcut that
    tokenised the text was slower still), which is far below the YAML loader's.
    """
    found: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        data = dict(items)
        if len(data) != len(items) and not found:
            seen: set[str] = set()
            for key, _ in items:
                if key in seen:
                    found.append(key)
                    break
                seen.add(key)
        return data

    try:
        json.loads(raw, object_pairs_hook=pairs)
    except RecursionError:
        return "it is nested too deeply to check for repeated keys"
    return f"the key {found[0]!r} is repeated in one object" if found else None


def read_input_text(source: str | Path, *, what: str, stdin_ok: bool = True) -> str:
    """:func:`read_input` decoded as UTF-8."""
    data = read_input(source, what=what, stdin_ok=stdin_ok)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{what} {source} is not UTF-8 text: {exc}") from None
