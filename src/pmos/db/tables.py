"""Which table holds which ledger kind: the kind's name, with ``_`` for ``-``.

The tables themselves (and their typed columns) are defined by the SQL
migrations; a kind pmos gains later needs a migration that adds its table,
and ``pmos sync`` refuses to run until the database has it.
"""

from __future__ import annotations

from pmos.store.registry import kind_of


def table_of(kind: str) -> str:
    return kind_of(kind).name.replace("-", "_")
