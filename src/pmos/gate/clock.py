"""Time from a clock pmos trusts: the time of checking, never a record's own date.

A record's ``recorded_at`` is written by a pmos writer from the machine's clock,
but a record in a ledger is only bytes somebody committed: its date says what
its author wanted it to say. So nothing that decides whether a record counts
takes that date on trust. The rules here compare a record's date with ``now``,
the time of checking, which the caller reads from its own clock
(:func:`checking_time`: the writer's machine, the CI runner of ``pmos gate``)
and passes in, so every rule is a pure function of its arguments:

* :func:`future_dated`: a record dated more than :data:`MAX_SKEW` after the
  time of checking was not written by a writer on a sane clock (a verdict dated
  2099 would otherwise stay a run's latest for ever, and bind every later PM
  label to itself);
* :func:`label_before_verdict`: a PM label dated before the verdict it judges
  claims to judge what did not exist yet;
* signature validity windows (``valid-after``/``valid-before`` of the
  allowed-signers file) are checked at the time of checking as well
  (:class:`pmos.gate.signing.LabelSignatures` takes ``now``): a key whose
  ``valid-before`` has passed signs nothing that counts today, whatever date
  the label it signed claims.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from pmos.errors import BadInput, Violation
from pmos.timestamps import parse_instant, seconds_rfc3339

#: How far a record's date may lie after the time of checking: clocks of the
#: machines that write and check records differ by seconds when they keep time
#: at all; five minutes covers that and nothing a forger could use.
MAX_SKEW = timedelta(minutes=5)

#: The rule names a finding carries.
FUTURE_DATED = "future-dated"
LABEL_BEFORE_VERDICT = "label-before-verdict"


def checking_time() -> datetime:
    """The time of checking: this machine's clock, in UTC. The one place a rule's
    ``now`` is read from the clock; a caller that checks many records reads it once."""
    return datetime.now(UTC)


def _instant(record: Any, field: str) -> datetime | None:
    value = record.get(field) if isinstance(record, dict) else None
    if not isinstance(value, str):
        return None
    try:
        return parse_instant(value)
    except BadInput:
        return None


def future_dated(record: dict[str, Any], now: datetime) -> Violation | None:
    """A finding when ``record`` is dated more than :data:`MAX_SKEW` after ``now``.

    A record with no readable ``recorded_at`` is its schema's problem, not this
    rule's: None."""
    at = _instant(record, "recorded_at")
    if at is None or at <= now + MAX_SKEW:
        return None
    return Violation(
        FUTURE_DATED,
        "recorded_at",
        f"{record['recorded_at']} is after the time of checking ({seconds_rfc3339(now)}, "
        f"allowing {_minutes(MAX_SKEW)} of clock skew): a pmos writer dates a record by its "
        "clock when it writes it, so this date was set by hand",
    )


def label_before_verdict(label: dict[str, Any], verdict: dict[str, Any]) -> Violation | None:
    """A finding when a PM label is dated before the verdict it judges.

    ``verdict`` is the record the label's ``gate_record_id`` names; the caller
    finds it. Either date unreadable: None (the schema's problem)."""
    labelled, judged = _instant(label, "recorded_at"), _instant(verdict, "recorded_at")
    if labelled is None or judged is None or labelled >= judged:
        return None
    return Violation(
        LABEL_BEFORE_VERDICT,
        "recorded_at",
        f"label {label.get('record_id')} is dated {label['recorded_at']}, before the verdict "
        f"it judges ({verdict.get('record_id')}, dated {verdict['recorded_at']}): a label "
        "cannot judge a verdict that did not exist yet",
    )


def _minutes(span: timedelta) -> str:
    minutes = int(span.total_seconds() // 60)
    return f"{minutes} minute{'s' if minutes != 1 else ''}"
