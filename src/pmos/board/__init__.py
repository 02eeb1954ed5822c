"""The board: one self-contained HTML page where a PM sees the review gate.

Every number on the page comes from the library's own readers
(:func:`pmos.calibration.metrics.compute_metrics`,
:func:`pmos.calibration.queue.compute_queue`, the exemplar log, the newest
ledger records); the board lays them out, it never recomputes them. The page
needs no network and no JavaScript: charts are inline SVG drawn by matplotlib
(the optional ``board`` extra) and every chart's numbers are in a table too.

The parts, in the order data flows through them: :mod:`.extra` (is the
optional extra installed), :mod:`.collect` (read the kit), :mod:`.charts` and
:mod:`.svg` (draw), :mod:`.view` and :mod:`.page` (lay out and escape),
:mod:`.output` (write the file).
"""

from __future__ import annotations
