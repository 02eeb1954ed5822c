"""Writer benchmark: start-up cost of one verdict, and raw append throughput.

Prints, measured in this one run:

* the median wall time of ``pmos eval record --file V`` as a ratio to the median
  of ``python -c "import typer, jsonschema, yaml"`` (target: at most 1.3), with
  the two measured interleaved so machine noise hits both alike;
* appends per second for 10,000 records through ``pmos.ledger`` with an fsync
  per append (target: at least 2,000/s on this machine's disk), and, for
  information, the same through the validated acceptance writer.

Everything happens in a throw-away kit root. pmos's modules are byte-compiled
first, as an installer does (``pip install`` writes ``.pyc`` files for the
libraries in the floor too); without that, an environment with
``PYTHONDONTWRITEBYTECODE`` set would recompile pmos's sources on every run.
Usage: ``python benchmarks/writer.py``.
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


def timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    import compileall

    import pmos
    from pmos.gate.writers import record_acceptance, register_run
    from pmos.kit import init_kit, open_kit
    from pmos.store.chain import LedgerWriter

    compileall.compile_dir(Path(pmos.__file__).parent, quiet=1)
    repo = Path(__file__).resolve().parents[1]
    verdict = json.loads((repo / "examples" / "verdict.json").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "kit"
        init_kit(root)
        kit = open_kit(root)
        register_run(
            kit,
            run_id=verdict["run_id"],
            initiative_id=verdict["initiative_id"],
            builder_model="claude-sonnet-4",
        )
        vfile = Path(tmp) / "verdict.json"
        vfile.write_text(json.dumps(verdict))
        env = {**os.environ, "PMOS_ROOT": str(root)}
        record = [sys.executable, "-m", "pmos", "eval", "record", "--file", str(vfile)]
        floor = [sys.executable, "-c", "import typer, jsonschema, yaml"]
        for cmd in (record, floor):  # warm the OS caches once
            timed(cmd, env)
        record_times, floor_times = [], []
        for _ in range(REPEATS):
            record_times.append(timed(record, env))
            floor_times.append(timed(floor, env))
        t_record = statistics.median(record_times)
        t_floor = statistics.median(floor_times)

        path = root / "state" / "bench.jsonl"
        writer = LedgerWriter(path, "bench")
        start = time.perf_counter()
        for i in range(APPENDS):
            writer.append({"n": i, "run_id": f"run-{i}", "label": "pass", "by": "bench"})
        raw_rate = APPENDS / (time.perf_counter() - start)

        start = time.perf_counter()
        validated = 2_000
        for i in range(validated):
            record_acceptance(kit, run_id=f"run-{i}", label="pass", by="bench")
        validated_rate = validated / (time.perf_counter() - start)

    ratio = t_record / t_floor
    print(f"pmos eval record, median of {REPEATS}: {t_record * 1000:.0f} ms")
    print(f"import typer, jsonschema, yaml, median of {REPEATS}: {t_floor * 1000:.0f} ms")
    print(
        f"ratio eval record / import floor: {ratio:.2f} (target <= 1.30) "
        f"{'OK' if ratio <= 1.3 else 'MISSED'}"
    )
    print(
        f"ledger appends with fsync: {raw_rate:,.0f}/s over {APPENDS:,} "
        f"(target >= 2,000/s) {'OK' if raw_rate >= 2000 else 'MISSED'}"
    )
    print(
        f"validated acceptance writes with fsync: {validated_rate:,.0f}/s over {validated:,} "
        "(for information)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
