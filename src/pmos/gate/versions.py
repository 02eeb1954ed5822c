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

import re
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


#: The writers' own times (UTC, microseconds): two of them order as their text does.
_WRITERS_TIME = re.compile(r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z\Z")


def first_of_each_version(stamps: Iterable[tuple[Any, Any]]) -> dict[int, datetime]:
    """The earliest ``recorded_at`` of each ``schema_version`` among the
    ``(schema_version, recorded_at)`` of a ledger's records.

    A time in the writers' own format is parsed only when its text is earlier
    than the earliest such text of its version so far (they order as their
    text does, and a ledger is read in time order, so that is rare); any other
    time is parsed. A time that does not parse is passed over.
    """
    first: dict[int, datetime] = {}
    earliest: dict[int, str] = {}  # per version: the earliest writers' time that parsed
    for version, at in stamps:
        if not isinstance(version, int):
            continue
        text = str(at)
        plain = _WRITERS_TIME.match(text) is not None
        if plain and text >= earliest.get(version, "~"):
            continue
        try:
            moment = parse_instant(text)
        except (BadInput, ValueError):
            continue
        if plain:
            earliest[version] = text
        if version not in first or moment < first[version]:
            first[version] = moment
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
