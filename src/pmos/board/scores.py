"""The score histogram's counts: labelled verdict scores binned by the PM's label.

Its input is :func:`pmos.calibration.metrics.scored_pairs` (each labelled run's
judged verdict, its 0..1 score and the PM's label); binning only sorts those
pairs into equal-width score bins for drawing, it computes no statistic.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

#: Equal-width bins over [0, 1]; a score of exactly 1 falls in the last one.
BINS = 20


@dataclass(frozen=True)
class ScoreBins:
    """Counts per bin for PM-accepted and PM-rejected runs, plus the unscored pairs."""

    edges: tuple[float, ...]
    accepted: tuple[int, ...]
    rejected: tuple[int, ...]
    unscored_accepted: int
    unscored_rejected: int

    @property
    def scored(self) -> int:
        return sum(self.accepted) + sum(self.rejected)

    def rows(self) -> list[tuple[float, float, int, int]]:
        """(low edge, high edge, accepted, rejected) per bin, for the table beside the chart."""
        return [
            (self.edges[i], self.edges[i + 1], self.accepted[i], self.rejected[i])
            for i in range(len(self.accepted))
        ]


def score_bins(pairs: Iterable[Any], bins: int = BINS) -> ScoreBins:
    """Bin ``pairs`` (anything with ``score`` and ``pm_pass``) by score and PM label.

    A score outside [0, 1] cannot come from the writers (the schema bounds it);
    one that does is refused rather than drawn off the axis.
    """
    accepted = [0] * bins
    rejected = [0] * bins
    unscored = [0, 0]
    for pair in pairs:
        score, pm_pass = pair.score, bool(pair.pm_pass)
        if score is None:
            unscored[pm_pass] += 1
            continue
        if not 0.0 <= score <= 1.0:
            raise ValueError(f"run {pair.run_id!r}: score {score!r} is outside 0..1")
        # A score on an edge (0.7 with 20 bins) belongs to the bin it opens,
        # whatever the float product rounds to.
        index = min(math.floor(score * bins + 1e-9), bins - 1)
        (accepted if pm_pass else rejected)[index] += 1
    edges = tuple(round(i / bins, 6) for i in range(bins + 1))
    return ScoreBins(edges, tuple(accepted), tuple(rejected), unscored[1], unscored[0])
