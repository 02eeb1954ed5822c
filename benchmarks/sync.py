"""Benchmark: ``pmos sync`` of a large kit into PostgreSQL, and reading it back.

Builds (or reuses) a kit of 1,000,000 verdicts and 1,000,000 PM labels over
200,000 runs with the generator of ``benchmarks/metrics.py``, starts a
throw-away PostgreSQL server as the tests do (``tests/pgserver.py``; or uses
``--db DSN``), and measures, as real processes, best of ``--repeat``:

* ``pmos sync`` into a freshly migrated database: wall time and records per
  second (target: at least 50,000/s), with the CPU seconds of pmos and of the
  server beside it, so a loaded machine can be told from a slow sync;
* ``pmos sync`` again (nothing to add: the cost of finding that out);
* ``SELECT * FROM v_calibration``;
* ``pmos metrics --db --json`` (and file-mode ``pmos metrics --json`` on the
  same kit, for scale), after checking that both give the same report, with
  the CPU seconds of pmos beside each.

The machine's load average is printed when the run starts and ends: on a
shared machine the wall times are only comparable at similar load, the CPU
seconds more nearly so.

Usage::

    python benchmarks/sync.py [--runs 200000] [--verdicts 1000000] [--labels 1000000]
        [--repeat 3] [--keep | --reuse KIT] [--db DSN] [--check]

``--check`` exits 1 when the records-per-second target is missed.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from metrics import generate  # noqa: E402

from pgserver import PgServer, find_bin_dir  # noqa: E402
from pmos.kit import init_kit  # noqa: E402

TARGET_RECORDS_PER_S = 50_000
#: The benchmark server: PostgreSQL's defaults (fsync on) except memory for a
#: 2 GB load and no checkpoint in the middle of it.
SERVER_SETTINGS = {
    "shared_buffers": "1GB",
    "max_wal_size": "16GB",
    "checkpoint_timeout": "30min",
    "max_connections": "20",
}
TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int | str) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def server_cpu(server: PgServer | None) -> float | None:
    """CPU seconds of the server so far: the postmaster with the backends it has
    reaped (utime, stime, cutime, cstime), plus the live backends."""
    if server is None:
        return None
    postmaster = (server.data / "postmaster.pid").read_text().split()[0]
    total = sum(int(v) for v in _stat(postmaster)[11:15])
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = _stat(entry.name)
            except (OSError, IndexError):
                continue
            if fields[1] == postmaster:
                total += int(fields[11]) + int(fields[12])
    return total / TICK


def run(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds of the process and its children, and stdout."""
    before = os.times()
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - start
    after = os.times()
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv[:4])} failed ({done.returncode}):\n{done.stderr}")
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return wall, cpu, done.stdout


def admin(dsn: str, *statements: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


def fresh_database(admin_dsn: str, name: str, env: dict[str, str], dsn: str) -> None:
    admin(admin_dsn, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)", f"CREATE DATABASE {name}")
    run([sys.executable, "-m", "pmos", "db", "migrate", "--db", dsn], env)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200_000)
    parser.add_argument("--verdicts", type=int, default=1_000_000)
    parser.add_argument("--labels", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the generated kit")
    parser.add_argument("--reuse", type=Path, help="a kit kept by --keep (here or by metrics.py)")
    parser.add_argument("--db", help="an existing server's DSN (a database pmos_bench is made)")
    parser.add_argument("--check", action="store_true", help="exit 1 when the target is missed")
    args = parser.parse_args()

    load_at_start = os.getloadavg()[0]
    workdir = Path(tempfile.mkdtemp(prefix="pmos-sync-bench-"))
    server = None
    try:
        if args.reuse:
            kit_root = args.reuse
        else:
            kit_root = workdir / "kit"
            init_kit(kit_root)
            print(f"writing {args.verdicts:,} verdicts and {args.labels:,} labels ...", flush=True)
            generate(kit_root, args.runs, args.verdicts, args.labels)
        records = args.verdicts + args.labels
        if args.db:
            admin_dsn = args.db
        else:
            bin_dir = find_bin_dir()
            if bin_dir is None:
                raise SystemExit(
                    "PostgreSQL server binaries not found (apt-get install postgresql-15)"
                )
            server = PgServer(bin_dir, SERVER_SETTINGS)
            admin_dsn = server.dsn()
        name = "pmos_bench"
        dsn = " ".join(p for p in admin_dsn.split() if not p.startswith("dbname=")) + (
            f" dbname={name}"
        )
        env = {**os.environ, "PMOS_ROOT": str(kit_root), "PYTHONPATH": str(ROOT / "src")}
        sync_argv = [sys.executable, "-m", "pmos", "sync", "--db", dsn, "--kit-id", "bench"]

        best = None
        for attempt in range(args.repeat):
            fresh_database(admin_dsn, name, env, dsn)
            before = server_cpu(server)
            wall, cpu, _ = run(sync_argv, env)
            after = server_cpu(server)
            used = None if before is None else after - before
            print(
                f"  sync {attempt + 1}: {wall:.1f} s, {records / wall:,.0f} records/s "
                f"(pmos CPU {cpu:.1f} s"
                + ("" if used is None else f", server CPU {used:.1f} s")
                + ")",
                flush=True,
            )
            if best is None or wall < best[0]:
                best = (wall, cpu, used)
        resync = min(run(sync_argv, env)[0] for _ in range(args.repeat))

        import psycopg

        view_times = []
        with psycopg.connect(dsn) as conn:
            conn.execute("ANALYZE")
            for _ in range(args.repeat):
                start = time.perf_counter()
                conn.execute("SELECT * FROM v_calibration").fetchall()
                view_times.append(time.perf_counter() - start)
        db_runs = [run([sys.executable, "-m", "pmos", "metrics", "--db", dsn, "--json"], env)]
        db_runs += [
            run([sys.executable, "-m", "pmos", "metrics", "--db", dsn, "--json"], env)
            for _ in range(args.repeat - 1)
        ]
        file_runs = [
            run([sys.executable, "-m", "pmos", "metrics", "--json"], env)
            for _ in range(args.repeat)
        ]
        from_db = json.loads(db_runs[0][2])
        from_db.pop("kits")
        same = from_db == json.loads(file_runs[0][2])

        wall, cpu, used = best
        rate = records / wall
        print()
        print(f"kit: {args.verdicts:,} verdicts + {args.labels:,} labels ({records:,} records)")
        print(
            f"machine: {os.cpu_count()} cores, load average {load_at_start:.1f} at the start, "
            f"{os.getloadavg()[0]:.1f} at the end"
        )
        print("| measure | result | target |")
        print("|---|---|---|")
        print(
            f"| `pmos sync` (first, best of {args.repeat}) | {wall:.1f} s, "
            f"{rate:,.0f} records/s | >= {TARGET_RECORDS_PER_S:,}/s |"
        )
        cpu_text = f"pmos {cpu:.1f} s" + ("" if used is None else f", server {used:.1f} s")
        print(f"| CPU of that sync | {cpu_text} | |")
        print(f"| `pmos sync` again (nothing to add) | {resync:.1f} s | |")
        print(f"| `SELECT * FROM v_calibration` | {min(view_times):.2f} s | |")
        db_best, file_best = min(db_runs), min(file_runs)
        print(
            f"| `pmos metrics --db --json` | {db_best[0]:.2f} s (pmos CPU {db_best[1]:.1f} s) | |"
        )
        print(
            f"| `pmos metrics --json` (file mode, same kit) | "
            f"{file_best[0]:.2f} s (pmos CPU {file_best[1]:.1f} s) | |"
        )
        print(f"| same report from the database and the files | {'yes' if same else 'NO'} | yes |")
        if args.keep and not args.reuse:
            kept = Path(tempfile.gettempdir()) / f"pmos-sync-bench-kit-{os.getpid()}"
            shutil.move(str(kit_root), kept)
            print(f"kit kept at {kept} (--reuse it)")
        return 1 if args.check and (rate < TARGET_RECORDS_PER_S or not same) else 0
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
