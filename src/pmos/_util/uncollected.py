"""The garbage collector paused while a reader builds what holds no reference cycle."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def uncollected() -> Iterator[None]:
    """The garbage collector paused inside, and running again as it did on leaving.

    The readers of large ledgers make millions of objects that hold no reference
    cycle (rows, lists of them, entries, numpy columns); every collection that
    their allocations set off visits every young one made so far and, now and
    then, every object the process holds, finding nothing to free. On the
    1M + 1M kit that was about a second of ``pmos ledger verify``'s eight, and of
    ``pmos metrics``'s fold and pairing as much again. Whatever cycle is made
    inside is freed by the first collection after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
