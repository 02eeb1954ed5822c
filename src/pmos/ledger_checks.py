"""Kit-level ledger reading and verification (all kinds, with their schemas)."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice
from typing import Any

from pmos import schemas
from pmos.errors import BadInput
from pmos.kit import LEDGER_KINDS, Kit
from pmos.ledger import VerifyReport, iter_records, iter_records_reversed, verify


def verify_kit(kit: Kit, *, with_schema: bool = False) -> list[VerifyReport]:
    reports = []
    for kind, spec in LEDGER_KINDS.items():
        validate = (lambda r, s=spec.schema: schemas.validate(s, r)) if with_schema else None
        reports.append(verify(kit.ledger_path(kind), kind, validate=validate))
    return reports


#: More records than any ledger holds; a larger --last is a typo.
MAX_LAST = 1_000_000_000
#: Fields that tie a record to a run; a task names the run it came from.
RUN_FIELDS = ("run_id", "parent_run_id")


def read_kind(
    kit: Kit, kind: str, *, run_id: str | None = None, last: int | None = None
) -> Iterator[dict[str, Any]]:
    """Stream a ledger's records in order, optionally only one run's, optionally only the
    last ``last`` of them (read from the end, so a large ledger is not read whole).

    For display: records are shown as stored, whether or not they fit their
    schema (``pmos ledger verify --schema`` says which do not)."""
    path = kit.ledger_path(kind)

    def wanted(record: dict[str, Any]) -> bool:
        return run_id is None or any(record.get(f) == run_id for f in RUN_FIELDS)

    if last is None:
        return (r for r in iter_records(path, kind, plain=True) if wanted(r))
    if not 1 <= last <= MAX_LAST:
        raise BadInput(f"--last must be from 1 to {MAX_LAST:,}; got {last}")
    return reversed(
        list(islice((r for r in iter_records_reversed(path, kind, plain=True) if wanted(r)), last))
    )
