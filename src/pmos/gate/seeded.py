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
