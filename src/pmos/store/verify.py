"""``pmos ledger verify``: check every record of every kind, and say what is wrong."""

from __future__ import annotations

from pmos.store.append import schema_problems
from pmos.store.chain import VerifyReport, verify
from pmos.store.layout import Store
from pmos.store.registry import LEDGER_KINDS


def verify_store(store: Store, *, with_schema: bool = False) -> list[VerifyReport]:
    """One report per ledger kind; ``with_schema`` also checks each record's schema."""
    reports = []
    for kind in LEDGER_KINDS:
        validate = (lambda r, k=kind: schema_problems(k, r)) if with_schema else None
        reports.append(verify(store.path(kind), kind, validate=validate))
    return reports
