"""Reading records: every reader of every package gets its records here.

Readers never see files: they ask for the records of a kind, oldest first or
newest first, typed by the kind's schema (:mod:`pmos.store.rows`), and get them
only after the store checked their integrity (a corrupt ledger raises
:class:`~pmos.errors.LedgerCorrupt` instead of yielding numbers).
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice
from typing import Any

from pmos.errors import BadInput
from pmos.store import chain
from pmos.store.layout import Store

#: More records than any ledger holds; a larger --last is a typo.
MAX_LAST = 1_000_000_000
#: Fields that tie a record to a run; a task names the run it came from.
RUN_FIELDS = ("run_id", "parent_run_id")


def records(
    store: Store, kind: str, *, row: type | None = None, plain: bool = False
) -> Iterator[Any]:
    """Every record of ``kind``, oldest first.

    By default each is a dict checked against the kind's schema types;
    ``row`` decodes just the fields of a row type (:func:`pmos.store.rows.row_type`);
    ``plain`` skips the type check, for code that only displays records.
    """
    return chain.iter_records(store.path(kind), kind, row=row, plain=plain)


def newest_first(store: Store, kind: str, *, plain: bool = False) -> Iterator[dict[str, Any]]:
    """Every record of ``kind``, newest first, read from the end: a look-up of recent
    history does not read a large ledger whole."""
    return chain.iter_records_reversed(store.path(kind), kind, plain=plain)


def show(
    store: Store, kind: str, *, run_id: str | None = None, last: int | None = None
) -> Iterator[dict[str, Any]]:
    """Records for display, optionally only one run's, optionally only the last
    ``last`` of them (read from the end).

    Records are shown as stored, whether or not they fit their schema
    (``pmos ledger verify --schema`` says which do not)."""

    def wanted(record: dict[str, Any]) -> bool:
        return run_id is None or any(record.get(f) == run_id for f in RUN_FIELDS)

    if last is None:
        return (r for r in records(store, kind, plain=True) if wanted(r))
    if not 1 <= last <= MAX_LAST:
        raise BadInput(f"--last must be from 1 to {MAX_LAST:,}; got {last}")
    recent = (r for r in newest_first(store, kind, plain=True) if wanted(r))
    return reversed(list(islice(recent, last)))


def records_with_digests(store: Store, kind: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every record of ``kind`` with its content digest (:mod:`pmos.store.digest`),
    oldest first, each exactly once, as stored (no type check)."""
    from pmos.store.digest import record_digest

    for record in records(store, kind, plain=True):
        body = {k: v for k, v in record.items() if k not in ("prev_hash", "hash")}
        yield record_digest(body), body
