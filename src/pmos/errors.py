"""Domain exceptions.

The library raises these and never prints or exits; the CLI maps each class to
a message and an exit code in one place (``pmos.cli._app``). Keeping the exit
code on the class means a new error kind cannot be forgotten there.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

from pmos import exit_codes


class Violation(NamedTuple):
    """One broken rule: which rule, which field, and what is wrong with it."""

    rule: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"[{self.rule}] {self.field}: {self.message}"

    def as_dict(self) -> dict[str, str]:
        return {"rule": self.rule, "field": self.field, "message": self.message}


class PmosError(Exception):
    """Base class of every error pmos expects and reports without a traceback."""

    exit_code: int = exit_codes.BAD_INPUT

    def as_dict(self) -> dict[str, object]:
        """The error as data, for a program rather than a person (an MCP tool
        error): its class in kebab case (``bad-input``) and its message."""
        kind = re.sub(r"(?<!^)(?=[A-Z])", "-", type(self).__name__).lower()
        return {"error": kind, "message": str(self)}


class BadInput(PmosError):
    """Input that cannot be used: unreadable file, bad JSON or YAML, bad argument."""


class GitError(BadInput):
    """git could not answer: no repository, a revision or object that is not there,
    a git directory pmos refuses (see :mod:`pmos._util.git`), or git missing."""


class KitRootNotFound(PmosError):
    """No kit root could be resolved from --root, PMOS_ROOT or the working directory."""


class ConfigError(PmosError):
    """pmos.yaml is missing, unreadable or violates its schema."""


class RecordRejected(PmosError):
    """A record broke one or more rules; it was not written.

    All violations are collected so the author can fix them in one pass.
    """

    def __init__(self, kind: str, violations: Iterable[Violation]) -> None:
        self.kind = kind
        self.violations = list(violations)
        lines = "\n".join(f"  - {v}" for v in self.violations)
        super().__init__(f"{kind} record rejected ({len(self.violations)} problem(s)):\n{lines}")

    def as_dict(self) -> dict[str, object]:
        """The refusal as data: what a writer's ``--json`` prints and what the MCP
        server returns as a tool error, built here once so the two cannot differ.
        An agent reads every violation from it, corrects them all and tries again."""
        return {
            "error": "record-rejected",
            "kind": self.kind,
            "violations": [v.as_dict() for v in self.violations],
        }


class SinkRefused(PmosError):
    """A writer was pointed at a file that is not its own configured ledger."""


class LedgerCorrupt(PmosError):
    """A ledger cannot be read as a whole (its folder vanished, a file cannot be
    opened), or a ledger the rules read is damaged.

    A single bad record is not this error: readers leave it out and say why
    (:mod:`pmos.store.integrity`); this is for what no reader can work around.
    """

    def __init__(self, path: str, line: int | None, problem: str) -> None:
        self.path = path
        self.line = line
        self.problem = problem
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {problem} (run 'pmos ledger verify' for a full report)")

    def __reduce__(self) -> tuple[type[LedgerCorrupt], tuple[str, int | None, str]]:
        # Keeps the fields when the error travels from a reader process (pmos.forked).
        return (type(self), (self.path, self.line, self.problem))


class LedgerBusy(PmosError):
    """The ledger lock could not be taken in time; trying again later may work."""

    exit_code = exit_codes.TEMPORARY_FAILURE


class ResourcesExhausted(PmosError):
    """The system refused a thread or process for lack of resources (a process
    limit, memory); what had started was stopped and nothing was recorded, so
    trying again with fewer workers or a higher limit may work."""

    exit_code = exit_codes.TEMPORARY_FAILURE


class IncompleteWrite(PmosError):
    """A command that writes two ledgers stored the first and could not store the
    second; running the same command again completes it without duplicates."""

    exit_code = exit_codes.TEMPORARY_FAILURE
