"""Kit-level ledger reading and verification (all kinds, with their schemas)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pmos import schemas
from pmos.kit import LEDGER_KINDS, Kit
from pmos.ledger import VerifyReport, iter_records, verify


def verify_kit(kit: Kit, *, with_schema: bool = False) -> list[VerifyReport]:
    reports = []
    for kind, spec in LEDGER_KINDS.items():
        validate = (lambda r, s=spec.schema: schemas.validate(s, r)) if with_schema else None
        reports.append(verify(kit.ledger_path(kind), kind, validate=validate))
    return reports


def read_kind(kit: Kit, kind: str) -> Iterator[dict[str, Any]]:
    return iter_records(kit.ledger_path(kind), kind)
