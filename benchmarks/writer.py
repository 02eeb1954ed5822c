"""Writer benchmark: start-up cost of one verdict, and raw append throughput.

Prints, measured in this one run:

* the median wall time of ``pmos eval record --file V`` as a ratio to the median
  of ``python -c "import typer, jsonschema, yaml"`` (target: at most 1.3), with
  the two measured interleaved so machine noise hits both alike, on an empty
  kit and on a kit holding 1,000,000 records (``--big``: 500,000 verdicts and
  500,000 labels packed, the newest 1,000 loose, as ``benchmarks/metrics.py``
  lays them out);
* appends per second for 10,000 records through the store's append path with
  a file and folder fsync per record (target: at least 2,000/s on this
  machine's disk), and, for information, the same through the validated
  acceptance writer;
* the same ratio for ``pmos accept`` (target: at most 1.3) on that kit, whose
  open month then holds 12,000 loose labels: a writer's look-ups read a month
  of loose files lazily (:func:`pmos.store.integrity.newest_in_bucket`), so a
  write does not cost more as its month fills.

With ``--busy`` the ratios are measured a second time while a process spins on
the CPU (the machine's other core busy), and both are printed.

Everything happens in a throw-away kit root. pmos's modules are byte-compiled
first, as an installer does (``pip install`` writes ``.pyc`` files for the
libraries in the floor too); without that, an environment with
``PYTHONDONTWRITEBYTECODE`` set would recompile pmos's sources on every run.
Usage: ``python benchmarks/writer.py [--big N] [--busy]`` (``--big 0`` skips the
large kit).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPEATS = 21
APPENDS = 10_000
sys.path.insert(0, str(Path(__file__).resolve().parent))


def timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def ratio_on(
    root: Path, verdict: dict, tmp: Path, env_base: dict[str, str], accept: bool = False
) -> tuple[float, float]:
    """Median ``eval record`` (or, with ``accept``, ``pmos accept`` of the verdict's
    run) and import-floor times on the kit at ``root``."""
    from pmos.gate.writers import register_run
    from pmos.kit import open_kit
    from pmos.store.lookup import find_run

    kit = open_kit(root)
    if find_run(kit.store, verdict["run_id"]) is None:
        register_run(
            kit,
            run_id=verdict["run_id"],
            initiative_id=verdict["initiative_id"],
            builder_model="claude-sonnet-4",
        )
    vfile = tmp / "verdict.json"
    vfile.write_text(json.dumps(verdict))
    env = {**env_base, "PMOS_ROOT": str(root)}
    record = [sys.executable, "-m", "pmos", "eval", "record", "--file", str(vfile)]
    if accept:
        record = [sys.executable, "-m", "pmos", "accept", verdict["run_id"], "--label", "pass"]
        record += ["--by", "bench"]
    floor = [sys.executable, "-c", "import typer, jsonschema, yaml"]
    for cmd in (record, floor):  # warm the OS caches once
        timed(cmd, env)
    record_times, floor_times = [], []
    for _ in range(REPEATS):
        record_times.append(timed(record, env))
        floor_times.append(timed(floor, env))
    return statistics.median(record_times), statistics.median(floor_times)


def ratios(
    root: Path, verdict: dict, tmp: Path, busy_too: bool, name: str, accept: bool = False
) -> list[tuple[str, float, float]]:
    """:func:`ratio_on`, and again with the other core busy when ``busy_too``."""
    from metrics import busy

    found = []
    for spinning in [False, True] if busy_too else [False]:
        with busy(spinning):
            took, floor = ratio_on(root, verdict, tmp, dict(os.environ), accept)
        found.append((f"{name}{', other core BUSY' if spinning else ''}", took, floor))
    return found


def main() -> int:
    import argparse
    import compileall

    import pmos
    from pmos.gate.writers import record_acceptance
    from pmos.kit import init_kit, open_kit
    from pmos.store.append import Draft, append

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--big", type=int, default=1_000_000, help="records in the large kit")
    parser.add_argument(
        "--busy", action="store_true", help="measure again with the other core busy"
    )
    args = parser.parse_args()
    compileall.compile_dir(Path(pmos.__file__).parent, quiet=1)
    repo = Path(__file__).resolve().parents[1]
    verdict = json.loads((repo / "examples" / "verdict.json").read_text())
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "kit"
        init_kit(root)
        results += ratios(root, verdict, Path(tmp), args.busy, "empty kit")
        if args.big:
            from metrics import generate

            big = Path(tmp) / "big"
            init_kit(big)
            print(f"writing a kit of {args.big:,} records ...")
            generate(big, 200_000, args.big // 2, args.big - args.big // 2, loose=1_000)
            results += ratios(big, verdict, Path(tmp), args.busy, f"kit of {args.big:,} records")

        kit = open_kit(root)
        start = time.perf_counter()
        for i in range(APPENDS):
            record = {"record_id": f"acc-{i:08d}", "recorded_at": f"2026-12-01T00:00:00.{i:06d}Z",
                      "schema_version": 1, "run_id": f"run-{i}", "label": "pass",
                      "by": "bench"}  # fmt: skip
            append(kit.store, "acceptances", lambda r=record: Draft([r]))
        raw_rate = APPENDS / (time.perf_counter() - start)

        start = time.perf_counter()
        validated = 2_000
        for i in range(validated):
            record_acceptance(kit, run_id=f"run-{i}", label="pass", by="bench")
        validated_rate = validated / (time.perf_counter() - start)
        month = f"pmos accept, {APPENDS + validated:,} labels in the open month"
        results += ratios(root, verdict, Path(tmp), args.busy, month, accept=True)

    for name, t_record, t_floor in results:
        ratio = t_record / t_floor
        print(f"{name}: the writer, median of {REPEATS}: {t_record * 1000:.0f} ms")
        print(
            f"{name}: import typer, jsonschema, yaml, median of {REPEATS}: {t_floor * 1000:.0f} ms"
        )
        print(
            f"{name}: ratio writer / import floor: {ratio:.2f} (target <= 1.30) "
            f"{'OK' if ratio <= 1.3 else 'MISSED'}"
        )
    print(
        f"store appends with fsync: {raw_rate:,.0f}/s over {APPENDS:,} "
        f"(target >= 2,000/s) {'OK' if raw_rate >= 2000 else 'MISSED'}"
    )
    print(
        f"validated acceptance writes with fsync: {validated_rate:,.0f}/s over {validated:,} "
        "(for information)"
    )
    print(f"load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
