"""Benchmark: ``pmos board`` on a large kit, against ``pmos metrics --json`` on the same kit.

Writes 1,000,000 verdicts and 1,000,000 PM labels over 200,000 runs with the
kit builder of ``benchmarks/metrics.py`` (schema-valid records through the
ledger library), then, in one run, times as real processes:

* ``pmos metrics --json`` (output discarded), and
* ``pmos board --out FILE --json`` (the whole page written),

alternating the two so a change in the machine's load hits both alike, and
prints the board's wall time as a ratio to the metrics time (target <= 2.0)
and the board file's size (target < 3 MB). Each timing is the best of
``--repeat`` runs, after one untimed run of each (page cache, font cache).
Usage::

    python benchmarks/board.py [--runs 200000] [--verdicts 1000000]
        [--labels 1000000] [--repeat 3] [--keep | --reuse KIT] [--check]

``--check`` exits 1 when a target is missed (the figures are printed either way).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(HERE))

from metrics import generate  # noqa: E402

from pmos.kit import init_kit  # noqa: E402

RATIO_TARGET = 2.0
SIZE_TARGET = 3_000_000


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (user + system, the process and the readers it
    forked and reaped) and stdout of one run."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if code != 0:
            raise SystemExit(f"{' '.join(argv)} exited {code}: {err.read().decode()}")
        return wall, usage.ru_utime + usage.ru_stime, out.read().decode()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200_000)
    parser.add_argument("--verdicts", type=int, default=1_000_000)
    parser.add_argument("--labels", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the generated kit")
    parser.add_argument(
        "--reuse", type=Path, metavar="KIT", help="measure a kit kept by an earlier --keep run"
    )
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="pmos-bench-board-"))
    kit_root = args.reuse.resolve() if args.reuse else workdir / "kit"
    out = workdir / "board.html"
    try:
        if args.reuse:
            print(f"measuring the kit at {kit_root}")
        else:
            t0 = time.perf_counter()
            init_kit(kit_root)
            print(
                f"writing {args.verdicts:,} verdicts and {args.labels:,} labels over "
                f"{args.runs:,} runs into {kit_root}"
            )
            generate(kit_root, args.runs, args.verdicts, args.labels)
            print(f"  written in {time.perf_counter() - t0:.1f}s")
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PMOS_ROOT": str(kit_root)}
        py = sys.executable
        metrics_cmd = [py, "-m", "pmos", "metrics", "--json"]
        board_cmd = [py, "-m", "pmos", "board", "--out", str(out), "--json"]
        timed(metrics_cmd, env)  # warm-up: page cache
        timed(board_cmd, env)  # warm-up: matplotlib's font cache
        metrics_times, board_times, metrics_cpu, board_cpu = [], [], [], []
        summary: dict = {}
        for _ in range(args.repeat):
            wall, cpu, _ = timed(metrics_cmd, env)
            metrics_times.append(wall)
            metrics_cpu.append(cpu)
            wall, cpu, stdout = timed(board_cmd, env)
            board_times.append(wall)
            board_cpu.append(cpu)
            summary = json.loads(stdout)
        size = out.stat().st_size
    finally:
        if args.keep and not args.reuse:
            print(f"kit kept at {kit_root}")
            out.unlink(missing_ok=True)
        else:  # the generated kit (if any) and the board go
            shutil.rmtree(workdir, ignore_errors=True)

    metrics_best, board_best = min(metrics_times), min(board_times)
    ratio = board_best / metrics_best
    load = os.getloadavg()[0]
    print(f"\nbest of {args.repeat} (load average {load:.1f} on {os.cpu_count()} CPUs)")
    missed = 0
    ok = ratio <= RATIO_TARGET
    missed += not ok
    print(
        f"  board / metrics --json wall time   {ratio:5.2f}  (target <= {RATIO_TARGET:.1f})  "
        f"{'ok' if ok else 'MISSED'}"
    )
    ok = size < SIZE_TARGET
    missed += not ok
    print(
        f"  board file size, MB                {size / 1e6:5.2f}  "
        f"(target < {SIZE_TARGET / 1e6:.0f})  {'ok' if ok else 'MISSED'}"
    )
    print(f"  absolute: metrics {metrics_best:.2f}s, board {board_best:.2f}s")
    cpu_ratio = min(board_cpu) / min(metrics_cpu)
    print(
        f"  CPU time (user + system, all processes): metrics {min(metrics_cpu):.2f}s, "
        f"board {min(board_cpu):.2f}s, ratio {cpu_ratio:.2f} (less sensitive to other load; "
        "the board's readers run in parallel, so its wall ratio is below this on idle cores)"
    )
    print(f"  every run: metrics {_list(metrics_times)}; board {_list(board_times)}")
    print(f"  charts drawn (marks): {summary.get('charts')}")
    for line in summary.get("unavailable", []):
        print(f"  not on this board: {line}")
    return 1 if missed and args.check else 0


def _list(times: list[float]) -> str:
    return ", ".join(f"{t:.2f}s" for t in times)


if __name__ == "__main__":
    raise SystemExit(main())
