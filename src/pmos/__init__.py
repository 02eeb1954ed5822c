"""pmos: validated ledgers and calibration metrics for an AI review gate.

The public surface is deliberately small; most callers want :mod:`pmos.kit`
(find and open a kit root), :mod:`pmos.writers` (append validated records)
and :mod:`pmos.ledger` (read and verify ledgers).
"""

__version__ = "0.1.0"
