"""What every command shares: the kit root option, error mapping and output.

Errors reach the user in exactly one place, :class:`PmosGroup.invoke`: an
expected :class:`PmosError` prints its message on stderr and exits with the
code its class carries; Ctrl-C exits 130; anything else is a bug and keeps its
traceback.

Terminal safety is enforced in one place too: while a command runs,
:func:`neutral_streams` puts stdout and stderr behind a writer that passes all
text through :func:`pmos.text.neutralise`, so no record field, argument echoed
in an error, or usage message can put an escape sequence or a bidirectional
control on the screen, whichever module printed it. JSON output goes to the
byte stream, with the same characters written as ``\\uXXXX`` escapes.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from typer.core import TyperGroup

from pmos import exit_codes
from pmos.errors import PmosError, RecordRejected
from pmos.kit import Kit
from pmos.kit.root import SEARCHED, locate_root
from pmos.text import json_safe, neutralise


class _NeutralText(io.TextIOWrapper):
    """A text stream that neutralises every control and format character it is given."""

    def write(self, text: str) -> int:
        return super().write(neutralise(text))


@contextlib.contextmanager
def neutral_streams() -> Iterator[None]:
    """Route ``sys.stdout`` and ``sys.stderr`` text through :class:`_NeutralText`
    (same buffer, encoding and error handling), restoring them afterwards."""
    saved = sys.stdout, sys.stderr
    wrapped: list[_NeutralText] = []
    try:
        for name in ("stdout", "stderr"):
            stream = getattr(sys, name)
            buffer = getattr(stream, "buffer", None)
            if buffer is None or isinstance(stream, _NeutralText):
                continue
            stream.flush()
            neutral = _NeutralText(
                buffer,
                encoding=stream.encoding,
                errors=stream.errors,
                line_buffering=stream.line_buffering,
                write_through=True,
            )
            wrapped.append(neutral)
            setattr(sys, name, neutral)
        yield
    finally:
        sys.stdout, sys.stderr = saved
        for neutral in wrapped:
            # The buffer belongs to the stream it came from: detach, never close
            # it (a closed pipe, as in 'pmos metrics | head', has nothing to save).
            with contextlib.suppress(OSError, ValueError):
                neutral.flush()
            with contextlib.suppress(OSError, ValueError):
                neutral.detach()


#: The system could not store or read (the input was fine).
_SYSTEM_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO})
_PERMISSION_ERRNOS = frozenset({errno.EACCES, errno.EPERM})


def os_error_exit(exc: OSError) -> tuple[int, str]:
    """The exit code and advice for an error the system raised.

    A full disk or a refused permission is the machine's state, not bad input:
    a script that retries on 74 or asks for access on 77 must not also retry a
    wrong path (2). Anything else the system refuses (a name too long, not a
    folder, no such file) is the path the user gave.
    """
    if exc.errno in _SYSTEM_ERRNOS:
        return exit_codes.SYSTEM_ERROR, " (the system could not store it; nothing was written)"
    if exc.errno in _PERMISSION_ERRNOS:
        return exit_codes.NO_PERMISSION, " (permission denied; nothing was written)"
    return exit_codes.BAD_INPUT, ""


class PmosGroup(TyperGroup):
    def main(self, *args: Any, **kwargs: Any) -> Any:
        with neutral_streams():
            return super().main(*args, **kwargs)

    def invoke(self, ctx: Any) -> Any:
        try:
            result = super().invoke(ctx)
        except PmosError as exc:
            say_where_written()
            typer.echo(f"pmos: error: {exc}", err=True)
            raise typer.Exit(exc.exit_code) from None
        except BrokenPipeError:
            # The output's reader went away ('pmos metrics | head'): stop quietly, as
            # Unix tools do, and leave nothing for the interpreter to flush at exit.
            # (Pipes to child processes are handled where pmos opens them.)
            with contextlib.suppress(OSError):
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
            raise typer.Exit(exit_codes.OUTPUT_CLOSED) from None
        except OSError as exc:
            # Not a pmos bug. Nothing was written, since every write is checked and
            # undone on failure; the exit code says whose problem it is.
            code, advice = os_error_exit(exc)
            where = f": {exc.filename!s:.200}" if exc.filename else ""
            typer.echo(f"pmos: error: {exc.strerror or exc}{where}{advice}", err=True)
            raise typer.Exit(code) from None
        except KeyboardInterrupt:
            typer.echo("pmos: interrupted", err=True)
            raise typer.Exit(exit_codes.INTERRUPTED) from None
        say_where_written()
        return result


def new_typer(
    help_text: str,
    cls: type[TyperGroup] = PmosGroup,
    *,
    add_completion: bool = False,
    example: str | None = None,
) -> typer.Typer:
    """A command group, its help ending with ``example``. Only the top-level app adds
    typer's completion options."""
    return typer.Typer(
        cls=cls,
        help=help_text,
        epilog=examples(example) if example else None,
        no_args_is_help=True,
        add_completion=add_completion,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )


def examples(*lines: str) -> str:
    """A command's help epilog: one or more example command lines, kept unwrapped.

    Every command's ``--help`` ends with at least one; ``tests/test_cli_help.py``
    parses each example against the command, so an example cannot name an option
    the command does not have.
    """
    body = "\n".join(f"  {line}" for line in lines)
    return f"\b\nExample{'s' if len(lines) > 1 else ''}:\n{body}"


class _State:
    """Per-invocation state set by the top-level callback (one command per process,
    but tests run many in one process, so the callback resets it every time)."""

    root: str | None = None
    kit: Kit | None = None
    found_by: str | None = None


STATE = _State()


def set_root(root: str | None) -> None:
    STATE.root = root
    STATE.kit = None
    STATE.found_by = None


def say_where_written() -> None:
    """After a command that wrote records to a kit it found by searching upward from
    the working directory, say which kit that was: inside a clone of pmos, or a
    product whose parent folder holds another kit, it may not be the one meant."""
    kit_ = STATE.kit
    if kit_ is None or STATE.found_by != SEARCHED or not kit_.records_written:
        return
    STATE.found_by = None  # said once, though nested command groups return through here too
    here = Path.cwd().resolve()
    if here != kit_.root:
        typer.echo(
            f"pmos: wrote to the kit at {kit_.root}, found above {here} "
            "(--root or PMOS_ROOT names another)",
            err=True,
        )


def root_option() -> str | None:
    return STATE.root


def kit() -> Kit:
    """The kit of the current command, resolved once from --root / PMOS_ROOT / cwd."""
    if STATE.kit is None:
        root, STATE.found_by = locate_root(STATE.root)
        STATE.kit = Kit.open(root)
    return STATE.kit


def emit_json(data: Any) -> None:
    sys.stdout.flush()
    sys.stdout.buffer.write(json_safe(orjson.dumps(data, option=orjson.OPT_INDENT_2)) + b"\n")
    sys.stdout.flush()


@contextlib.contextmanager
def rejections_as_json(json_output: bool) -> Iterator[None]:
    """With ``--json``, a writer's refusal is also printed on stdout as JSON
    (:meth:`pmos.errors.RecordRejected.as_dict`: every rule id, field and message),
    so a program reads the violations where it reads a success. The message on
    stderr and the exit code (2) are :class:`PmosGroup`'s, as for every error."""
    try:
        yield
    except RecordRejected as exc:
        if json_output:
            emit_json(exc.as_dict())
        raise


def emit_json_array(items: Iterable[Any]) -> None:
    """Write a JSON array one element at a time, so a long stream is never held whole."""
    sys.stdout.flush()
    out = sys.stdout.buffer
    out.write(b"[")
    for i, item in enumerate(items):
        out.write(b",\n" if i else b"\n")
        out.write(json_safe(orjson.dumps(item)))
    out.write(b"\n]\n")
    sys.stdout.flush()


def warn(messages: Sequence[str]) -> None:
    for message in messages:
        typer.echo(f"pmos: warning: {message}", err=True)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain aligned text table; cells are neutralised of control characters."""

    def cell(value: Any) -> str:
        text = "" if value is None else str(value)
        return neutralise(text).replace("\n", " ")

    grid = [[cell(h) for h in headers], *[[cell(v) for v in row] for row in rows]]
    widths = [max(len(r[i]) for r in grid) for i in range(len(headers))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in grid]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def excluded_lines(items: Sequence[dict[str, Any]]) -> list[str]:
    """What a reader left out because it breaks a writer rule (none: no lines)."""
    if not items:
        return []
    rows = [[e["kind"], e["record_id"] or "-", e["rule"], e["problem"]] for e in items]
    return [
        f"excluded records: {len(items)} (they break a writer rule and are not counted)",
        table(["ledger", "record_id", "rule", "problem"], rows),
    ]


#: The ``--json`` flag of every reading command: ``json_output: JsonFlag = False``.
JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
