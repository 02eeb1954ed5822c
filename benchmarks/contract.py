"""Contract benchmark: registering a run is linear in its contract's size.

Issue 16 item 10: ``run register`` with a 50,000-criterion contract took
49-73 s, because each criterion id was counted in the whole list, while the
runs ledger was locked. Prints, measured in this one run:

* the time of the contract-id check for 50,000 and for 200,000 criteria, and
  their ratio (linear: about 4, once both sizes are past the CPU caches; the
  quadratic check took 1.8 s for 5,000 ids and 8.6 s for 10,000 here, about
  3 minutes for 50,000);
* the time of ``pmos run register`` (a real process) with a 1,200 and a
  12,000-criterion contract, and their ratio (target: at most 15, i.e.
  linear with some fixed start-up cost). A record may hold at most 1 MiB
  (``MAX_RECORD_BYTES``), so a 50,000-criterion contract (about 3 MB) is
  refused, and 12,000 criteria is about the most that fits;
* for information, how long the store's validation of the large run record
  takes (``seal``: schema, encoding and size), which it does once and before
  taking the runs lock, and how long the lock is then held to write it.

Usage: ``python benchmarks/contract.py [--small N] [--large N]``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SMALL, LARGE = 1_200, 12_000
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
    import argparse

    from pmos.gate.rules import check_contract_ids
    from pmos.kit import init_kit, open_kit
    from pmos.store.append import Draft, append, record_meta, seal

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=SMALL, help="criteria of the small run")
    parser.add_argument("--large", type=int, default=LARGE, help="criteria of the large run")
    args = parser.parse_args()
    n_small, n_large = args.small, args.large

    ids_small, ids_large = contract(IDS_SMALL), contract(IDS_LARGE)
    t_small = best(lambda: check_contract_ids(ids_small), 7)
    t_large = best(lambda: check_contract_ids(ids_large), 7)
    print(
        f"contract-id check: {IDS_SMALL:,} ids {t_small * 1000:.1f} ms, {IDS_LARGE:,} ids "
        f"{t_large * 1000:.1f} ms, ratio {t_large / t_small:.1f} (linear: ~4)"
    )
    small, large = contract(n_small), contract(n_large)

    def run_record() -> dict:
        meta = record_meta("runs")
        return {**meta, "run_id": meta["record_id"], "initiative_id": "i", "builder_model": "m"}

    seal("runs", {**run_record(), "contract": contract(1)})
    t_seal = best(lambda: seal("runs", {**run_record(), "contract": large}), 1)
    print(f"store validation (seal) of the {n_large:,}-criterion run record: {t_seal:.2f} s")

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "kit"
        init_kit(root)
        store = open_kit(root).store
        sealed = [seal("runs", {**run_record(), "contract": large}) for _ in range(3)]
        t_lock = best(lambda: append(store, "runs", lambda: Draft([sealed.pop()])), 3)
        print(f"runs lock held to write it, once validated: {t_lock * 1000:.1f} ms")
        env = {**os.environ, "PMOS_ROOT": str(root)}
        runs = {}
        for n, data in ((n_small, small), (n_large, large)):
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
        ratio = runs[n_large] / runs[n_small]
        print(
            f"pmos run register: {n_small:,} criteria {runs[n_small]:.2f} s, {n_large:,} "
            f"criteria {runs[n_large]:.2f} s, ratio {ratio:.1f} (target <= 15)"
        )
    return 0 if ratio <= 15 else 1


if __name__ == "__main__":
    sys.exit(main())
