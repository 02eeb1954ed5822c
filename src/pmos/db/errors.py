"""The errors the database commands add to :mod:`pmos.errors`.

Each carries its exit code, as every :class:`~pmos.errors.PmosError` does, so
the CLI maps them without knowing about databases.
"""

from __future__ import annotations

from pmos import exit_codes
from pmos.errors import PmosError


class KitRefused(PmosError):
    """The kit's ledgers fail verification: nothing of it was copied."""

    exit_code = exit_codes.CHECK_FAILED


class SchemaMismatch(PmosError):
    """The database's schema version is not the one this pmos reads and writes."""


class DatabaseError(PmosError):
    """The database refused a statement (a missing privilege, a bad value)."""


class DatabaseUnavailable(PmosError):
    """No connection could be made with the DSN given (wrong address, credentials, name)."""


class ConnectionLost(PmosError):
    """The connection broke mid-way: nothing was committed, and running again may work."""

    exit_code = exit_codes.TEMPORARY_FAILURE


class KitNotYours(PmosError):
    """The database role syncing is bound to another kit: nothing was written."""
