"""What names a seeded known-bad run and its label: the identity rule alone.

Kept apart from :mod:`pmos.gate.known_bad` (which seeds cases through the
writers) because the signature check and the queue must recognise a seeded
label without depending on the writers that make one.
"""

from __future__ import annotations

RUN_PREFIX = "known-bad-"
INITIATIVE = "known-bad"
LABELLER = "seeded"


def is_seeded(run_id: str, initiative_id: str | None) -> bool:
    """Whether a registered run is a seeded known-bad case: its id and initiative
    are the ones seeding gives, so a real run is never mistaken for one."""
    return initiative_id == INITIATIVE and run_id.startswith(RUN_PREFIX)


def is_seeded_label(run_id: str, by: str | None) -> bool:
    """Whether a label is a seeded known-bad case's answer key (``pmos known-bad seed``
    writes it, by ``seeded``, on the case's run): the case's ground truth, which
    judges the run's judged verdicts whenever they come, and which calibration
    reports apart from the PM's own labels (``seeded_pairs``)."""
    return by == LABELLER and run_id.startswith(RUN_PREFIX)
