"""Benchmark: ``pmos sync`` against the server's floor, ``COPY`` of the same rows.

Builds (or reuses) a kit of ``--records N`` verdicts and N PM labels (default
1,000,000 + 1,000,000) over N/5 runs with the generator of
``benchmarks/metrics.py``, starts a throw-away PostgreSQL server as the tests do
(``tests/pgserver.py``; or uses ``--db DSN``), and measures in one run, each on
a freshly migrated database, as real processes:

* **the floor**: every record of the kit, already encoded as the rows ``pmos
  sync`` sends (:mod:`pmos.db.columns`, a buffer prepared before the clock
  starts), loaded by ``COPY`` into the same tables and indexes, in one
  transaction, as the database's owner;
* ``pmos sync`` with the kit's own role (``pmos db grant --kit``: the record
  tables' kit trigger checks its rows, as it does for every kit in production);
* ``pmos sync`` as the owner (the trigger lets the owner's rows through);
* ``pmos sync`` again (nothing to add: the cost of finding that out);
* ``pmos metrics --db --json`` against file-mode ``pmos metrics --json``: the
  same report, checked.

Before the clock starts, one ``pmos ledger verify`` fills the benchmark's own
screening cache (``PMOS_CACHE_DIR``; its time is printed), as the kit's CI
verifies the kit before it syncs: every sync measured then finds the cache in
the same state (without it the first sync measured would screen every record
against the writers' rules and the later ones none).

It prints each sync's time as a ratio to the floor (target: the kit role's sync
within 1.5x). Reading and checking the kit overlap the server's work, so the
ratio, measured in one run on one machine, says what sync adds to the server's
own cost whatever the machine's speed. The machine's load average is printed at
the start and end: on a shared machine compare ratios, not wall times.

Usage::

    python benchmarks/sync.py [--records 1000000] [--repeat 1] [--keep | --reuse KIT]
        [--db DSN] [--cache DIR] [--check]

``--cache DIR`` keeps the screening cache in ``DIR`` instead of a fresh folder
(as ``benchmarks/metrics.py --cache`` does), so a ``--reuse`` run of a signed
kit need not check every signature again before the clock starts.

``--check`` exits 1 when the kit role's sync takes more than 1.5x the floor, or
the database's report differs from file mode's.
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

#: The kit role's sync may take at most this many times the COPY floor.
TARGET_RATIO = 1.5
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
    reaped (utime, stime, cutime, cstime), plus the live backends. A backend whose
    client just left may not be reaped yet (its CPU would be missed): wait for it."""
    if server is None:
        return None
    time.sleep(2)
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


def copy_buffers(kit_root: Path, kit_key: int) -> dict[str, tuple[str, bytes]]:
    """Per record table: its COPY statement and every record of the kit as the rows
    ``pmos sync`` sends, sorted by digest (the order that costs the index least)."""
    from pmos.db.columns import encoder
    from pmos.db.tables import table_of
    from pmos.kit import open_kit
    from pmos.store.read import stored_lines
    from pmos.store.registry import LEDGER_KINDS

    store = open_kit(kit_root).store
    out = {}
    for kind in LEDGER_KINDS:
        found = {digest: body for batch in stored_lines(store, kind) for digest, body in batch}
        if not found:
            continue
        rows = encoder(kind)
        buffer = b"".join(rows.row(kit_key, d, found[d]) for d in sorted(found))
        table = table_of(kind)
        out[table] = (f"COPY {table} ({', '.join(rows.columns)}) FROM STDIN", buffer)
    return out


def copy_floor(dsn: str, buffers: dict[str, tuple[str, bytes]]) -> tuple[float, float]:
    """Seconds to COPY the prepared rows into the tables, in one committed transaction,
    and the CPU seconds this process spent sending them."""
    import psycopg

    with psycopg.connect(dsn) as conn:
        conn.execute("INSERT INTO kits (kit_id) VALUES ('bench')")
        conn.commit()
        cpu = time.process_time()
        start = time.perf_counter()
        for statement, buffer in buffers.values():
            with conn.cursor() as cursor, cursor.copy(statement) as copy:
                view = memoryview(buffer)
                for at in range(0, len(view), 1 << 20):
                    copy.write(view[at : at + (1 << 20)])
        conn.commit()
        return time.perf_counter() - start, time.process_time() - cpu


def with_user(dsn: str, user: str, password: str | None) -> str:
    parts = [p for p in dsn.split() if not p.startswith(("user=", "password="))]
    return " ".join([*parts, f"user={user}", *([f"password={password}"] if password else [])])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--records", type=int, default=1_000_000, help="verdicts, and as many labels"
    )
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="keep the generated kit")
    parser.add_argument("--reuse", type=Path, help="a kit kept by --keep (here or by metrics.py)")
    parser.add_argument("--db", help="an existing server's DSN (a database pmos_bench is made)")
    parser.add_argument("--cache", type=Path, help="the screening cache (default: a fresh one)")
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
            print(f"writing {args.records:,} verdicts and {args.records:,} labels ...", flush=True)
            generate(kit_root, max(1, args.records // 5), args.records, args.records)
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
        # The screening cache (pmos.store.screencache) of the benchmark's own: warmed
        # by one 'pmos ledger verify' before the clock starts, as the kit's CI verifies
        # before it syncs, so every sync measured finds it in the same state (else the
        # first sync measured would screen every record and the later ones none).
        env = {
            **os.environ,
            "PMOS_ROOT": str(kit_root),
            "PYTHONPATH": str(ROOT / "src"),
            "PMOS_CACHE_DIR": str(args.cache.resolve() if args.cache else workdir / "cache"),
        }
        pmos = [sys.executable, "-m", "pmos"]
        cold_verify = run([*pmos, "ledger", "verify"], env)[0]
        warmth = f"the screening cache in {args.cache}" if args.cache else "a cold screening cache"
        print(f"pmos ledger verify with {warmth}: {cold_verify:.1f} s", flush=True)
        print("preparing the COPY buffer ...", flush=True)
        buffers = copy_buffers(kit_root, 1)  # a fresh database's first kit has key 1
        records = sum(b.count(b"\n") for _, b in buffers.values())

        floors, as_role, as_owner, resyncs = [], [], [], []
        for attempt in range(args.repeat):
            fresh_database(admin_dsn, name, env, dsn)
            before = server_cpu(server)
            wall, cpu = copy_floor(dsn, buffers)
            used = None if before is None else server_cpu(server) - before
            floors.append((wall, cpu, used))
            print(f"  COPY floor {attempt + 1}: {wall:.1f} s", flush=True)

            fresh_database(admin_dsn, name, env, dsn)
            granted = json.loads(
                run([*pmos, "db", "grant", "--kit", "bench", "--db", dsn, "--json"], env)[2]
            )
            role_dsn = with_user(dsn, granted["role"], granted["password"])
            before = server_cpu(server)
            wall, cpu, _ = run(
                [
                    *pmos,
                    "sync",
                    "--policy-from-working-tree",
                    "--db",
                    role_dsn,
                    "--kit-id",
                    "bench",
                ],
                env,
            )
            used = None if before is None else server_cpu(server) - before
            as_role.append((wall, cpu, used))
            print(f"  sync as the kit's role {attempt + 1}: {wall:.1f} s", flush=True)
            resyncs.append(
                run(
                    [
                        *pmos,
                        "sync",
                        "--policy-from-working-tree",
                        "--db",
                        role_dsn,
                        "--kit-id",
                        "bench",
                    ],
                    env,
                )[0]
            )

            fresh_database(admin_dsn, name, env, dsn)
            before = server_cpu(server)
            wall, cpu, _ = run(
                [*pmos, "sync", "--policy-from-working-tree", "--db", dsn, "--kit-id", "bench"], env
            )
            used = None if before is None else server_cpu(server) - before
            as_owner.append((wall, cpu, used))
            print(f"  sync as the owner {attempt + 1}: {wall:.1f} s", flush=True)

        db_run = run([*pmos, "metrics", "--db", dsn, "--json"], env)
        file_run = run([*pmos, "metrics", "--json"], env)
        from_db = json.loads(db_run[2])
        from_db.pop("kits")
        same = from_db == json.loads(file_run[2])

        best_floor = min(floors)
        floor = best_floor[0]
        role, owner = min(as_role), min(as_owner)
        ratio = role[0] / floor
        print()
        sizes = {table: buffer.count(b"\n") for table, (_, buffer) in buffers.items()}
        per_table = ", ".join(f"{table} {n:,}" for table, n in sizes.items())
        print(f"kit: {records:,} records ({per_table})")
        print(
            f"machine: {os.cpu_count()} cores, load average {load_at_start:.1f} at the start, "
            f"{os.getloadavg()[0]:.1f} at the end"
        )
        print("| measure | result | ratio to the floor | target |")
        print("|---|---|---|---|")
        print(
            f"| COPY of the prepared rows (the floor, best of {args.repeat}) | {floor:.1f} s, "
            f"{records / floor:,.0f} records/s (client CPU {best_floor[1]:.1f} s"
            + ("" if best_floor[2] is None else f", server CPU {best_floor[2]:.1f} s")
            + ") | 1.00 | |"
        )

        def cpu_text(cpu: float, used: float | None) -> str:
            return f"pmos CPU {cpu:.1f} s" + ("" if used is None else f", server CPU {used:.1f} s")

        print(
            f"| `pmos sync` as the kit's role (the kit trigger) | {role[0]:.1f} s "
            f"({cpu_text(role[1], role[2])}) | {ratio:.2f} | <= {TARGET_RATIO} |"
        )
        print(
            f"| `pmos sync` as the owner | {owner[0]:.1f} s ({cpu_text(owner[1], owner[2])}) "
            f"| {owner[0] / floor:.2f} | |"
        )
        print(f"| `pmos sync` again (nothing to add) | {min(resyncs):.1f} s | | |")
        print(
            f"| `pmos ledger verify`, {warmth} (before the runs, untimed "
            f"for them) | {cold_verify:.1f} s | | |"
        )
        print(
            f"| `pmos metrics --db --json` / file mode | {db_run[0]:.2f} s / {file_run[0]:.2f} s "
            "| | |"
        )
        print(
            f"| same report from the database and the files | {'yes' if same else 'NO'} | | yes |"
        )
        if best_floor[2] is not None and role[2] is not None:
            floor_cpu = best_floor[1] + best_floor[2]
            print(
                f"CPU seconds, sync as the kit's role / floor: {role[1] + role[2]:.1f} / "
                f"{floor_cpu:.1f} = {(role[1] + role[2]) / floor_cpu:.2f} (pmos and server "
                "together; load-independent, but sync's CPU runs on two cores at once)"
            )

        print(f"ratio: {ratio:.2f} (sync as the kit's role / COPY floor; target <= {TARGET_RATIO})")
        if args.keep and not args.reuse:
            kept = Path(tempfile.gettempdir()) / f"pmos-sync-bench-kit-{os.getpid()}"
            shutil.move(str(kit_root), kept)
            print(f"kit kept at {kept} (--reuse it)")
        return 1 if args.check and (ratio > TARGET_RATIO or not same) else 0
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
