"""Contract benchmark: registering a run is linear in its contract's size.

Issue 16 item 10: ``run register`` with a 50,000-criterion contract took
49-73 s, because each criterion id was counted in the whole list, while the
runs ledger was locked. Prints, measured in this one run:

* the time of the contract-id check for 50,000 and for 200,000 criteria, and
  their ratio (linear: about 4, once both sizes are past the CPU caches; the
  quadratic check took 1.8 s for 5,000 ids and 8.6 s for 10,000 here, about
  3 minutes for 50,000);
* the time of ``pmos run register`` (a real process) with a 5,000 and a
  50,000-criterion contract, and their ratio (target: at most 15, i.e.
  linear with some fixed start-up cost);
* for information, how much of that is schema validation, which the writer
  does before taking the lock (the store validates again under it).

Usage: ``python benchmarks/contract.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SMALL, LARGE = 5_000, 50_000
IDS_SMALL, IDS_LARGE = 50_000, 200_000


def contract(n: int) -> dict:
    return {
        "done_criteria": [
            {"id": f"c{i}", "text": f"criterion {i}", "test_method": "manual"} for i in range(n)
        ]
    }


def best(fn, repeats: int = 3) -> float:
    """The best of ``repeats`` timings, with the garbage collector off (it would
    otherwise charge the larger input for collecting the smaller one's objects)."""
    import gc

    times = []
    for _ in range(repeats):
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        finally:
            gc.enable()
    return min(times)


def main() -> int:
    from pmos import schemas
    from pmos.gate.rules import check_contract_ids
    from pmos.kit import init_kit
    from pmos.store.append import record_meta

    ids_small, ids_large = contract(IDS_SMALL), contract(IDS_LARGE)
    t_small = best(lambda: check_contract_ids(ids_small), 7)
    t_large = best(lambda: check_contract_ids(ids_large), 7)
    print(
        f"contract-id check: {IDS_SMALL:,} ids {t_small * 1000:.1f} ms, {IDS_LARGE:,} ids "
        f"{t_large * 1000:.1f} ms, ratio {t_large / t_small:.1f} (linear: ~4)"
    )
    small, large = contract(SMALL), contract(LARGE)

    record = {**record_meta("runs"), "run_id": "r", "initiative_id": "i", "builder_model": "m"}
    schemas.validate("run", {**record, "contract": contract(1)})
    t_schema = best(lambda: schemas.validate("run", {**record, "contract": large}), 1)
    print(f"schema validation of the {LARGE:,}-criterion run record: {t_schema:.2f} s")

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "kit"
        init_kit(root)
        env = {**os.environ, "PMOS_ROOT": str(root)}
        runs = {}
        for n, data in ((SMALL, small), (LARGE, large)):
            path = Path(tmp) / f"contract-{n}.json"
            path.write_text(json.dumps(data))

            def register(n: int = n, path: Path = path) -> None:
                run_id = f"run-{n}-{time.perf_counter_ns()}"
                subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "pmos",
                        "run",
                        "register",
                        "--run-id",
                        run_id,
                        "--initiative-id",
                        "i",
                        "--builder-model",
                        "m",
                        "--contract",
                        str(path),
                    ],
                    env=env,
                    check=True,
                    stdout=subprocess.DEVNULL,
                )

            runs[n] = best(register, 2)
        ratio = runs[LARGE] / runs[SMALL]
        print(
            f"pmos run register: {SMALL:,} criteria {runs[SMALL]:.2f} s, {LARGE:,} criteria "
            f"{runs[LARGE]:.2f} s, ratio {ratio:.1f} (target <= 15)"
        )
    return 0 if ratio <= 15 else 1


if __name__ == "__main__":
    sys.exit(main())
