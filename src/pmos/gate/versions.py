"""Versions move forward: a record of an older layout, dated after the kit's first
record of a newer one, is reported and left out.

A writer writes only the newest layout of its kind (verdicts: 2 since each
criterion carries ``verified``; labels: 2 since a signature binds its kit and
verdict), and the rules a stored record is checked against follow its
``schema_version``: an older version is held to the older, weaker rules. Once a
kit has a record of the newer version, a later record of an older one did not
come from a writer of this kit; it is a side door around the newer rules (a
version-1 verdict that skips a registered contract), so
:mod:`pmos.gate.recheck` applies :func:`older_than_the_kit` to every record.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from pmos.errors import BadInput, Violation
from pmos.timestamps import parse_instant, seconds_rfc3339

#: The schema version each writer writes today; a record of an older version is
#: read as long as it is not dated after the kit's first record of this one.
VERDICT_SCHEMA_VERSION = 2
LABEL_SCHEMA_VERSION = 2
NEWEST = {"evals": VERDICT_SCHEMA_VERSION, "acceptances": LABEL_SCHEMA_VERSION}

RULE = "version-forward"


def first_of_each_version(records: Iterable[Mapping[str, Any]]) -> dict[int, datetime]:
    """The earliest ``recorded_at`` of each ``schema_version`` among ``records``."""
    first: dict[int, datetime] = {}
    for record in records:
        version = record.get("schema_version", 1)
        if not isinstance(version, int):
            continue
        try:
            at = parse_instant(str(record.get("recorded_at")))
        except (BadInput, ValueError):
            continue
        if version not in first or at < first[version]:
            first[version] = at
    return first


def older_than_the_kit(
    record: Mapping[str, Any], first: Mapping[int, datetime]
) -> Violation | None:
    """The problem with ``record`` when it is of an older ``schema_version`` than a
    record the kit already held when it was recorded; None otherwise."""
    version = record.get("schema_version", 1)
    if not isinstance(version, int):
        return None
    try:
        at = parse_instant(str(record.get("recorded_at")))
    except (BadInput, ValueError):
        return None
    newer = [(when, v) for v, when in first.items() if v > version and when < at]
    if not newer:
        return None
    when, v = min(newer)
    return Violation(
        RULE,
        "schema_version",
        f"schema_version {version}, recorded at {record.get('recorded_at')}, after the kit's "
        f"first record of version {v} ({seconds_rfc3339(when)}): pmos writers write only the "
        "newest version, so this record did not come from one; record it again through "
        "the writer",
    )
