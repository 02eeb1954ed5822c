"""Pack benchmark: folding 100,000 loose records, against verifying the packed result.

Writes ``--loose`` (default 100,000) loose verdict records into a throw-away kit
that already holds ``--packed`` (default 0) packed ones, then measures, as real
processes, ``pmos ledger pack`` and ``pmos ledger verify`` on the packed result,
each the best of ``--repeat`` runs (packing is repeated on fresh copies of the
loose files, which are synced to disk first, as a writer's fsynced records
are). Prints the ratio pack / verify (target: at most 3) and the machine's
load average, and beside it the floors no packing code goes under: reading
as many files (a plain os.open/os.read/os.close loop, in this process) and
deleting them as pack does.

Usage: ``python benchmarks/pack.py [--loose 100000] [--packed 0] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from metrics import generate  # noqa: E402

from pmos.kit import init_kit  # noqa: E402
from pmos.store.files import remove_many  # noqa: E402


def timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def read_all(paths: list[str]) -> float:
    """Seconds to open, read and close every file of ``paths``, in a plain loop."""
    start = time.perf_counter()
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        os.read(fd, 1 << 16)
        os.close(fd)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loose", type=int, default=100_000)
    parser.add_argument("--packed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="pmos-bench-pack-"))
    try:
        kit = work / "kit"
        init_kit(kit)
        total = args.packed + args.loose
        print(f"writing {total:,} verdicts ({args.loose:,} loose) into {kit}")
        generate(kit, max(1, total // 5), total, 0, loose=args.loose * 2)
        evals = kit / "state" / "evals"
        saved = work / "loose"
        saved.mkdir()
        # Loose files sit in day folders of their month (closed: generate ends last year).
        loose = sorted(evals.rglob("*.json"))
        for path in loose:
            shutil.copy2(path, saved / path.name)
        home = {path.name: path for path in loose}
        print(f"  {len(loose):,} loose record files")
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PMOS_ROOT": str(kit)}
        py = sys.executable
        packs_before = {p.name for p in evals.rglob("pack-*")}
        pack_times = []
        for attempt in range(args.repeat):
            if attempt:  # put the loose files back and drop the pack the last run made
                for path in evals.rglob("pack-*"):
                    if path.name not in packs_before:
                        path.unlink()
                for path in saved.iterdir():
                    home[path.name].parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, home[path.name])
            # Records a writer made are on disk (fsynced); deleting them costs more
            # than deleting copies still in the page cache.
            os.sync()
            pack_times.append(timed([py, "-m", "pmos", "ledger", "pack", "evals"], env))
        verify_times = [
            timed([py, "-m", "pmos", "ledger", "verify"], env) for _ in range(args.repeat)
        ]
        # What reading them alone costs: the plain loop pack cannot go under. The
        # floors take the files by plain string paths, as pack does (a Path each
        # would add its own cost to the floor).
        names = [os.path.join(saved, name) for name in os.listdir(saved)]
        read_floor = min(read_all(names) for _ in range(args.repeat))
        # What the file system alone charges: deleting as many synced files of the
        # same sizes, the way pack deletes them (a floor no packing code can go under).
        os.sync()
        start = time.perf_counter()
        remove_many(saved, names)
        delete_floor = time.perf_counter() - start
    finally:
        shutil.rmtree(work, ignore_errors=True)
    pack, verify = min(pack_times), min(verify_times)
    ratio = pack / verify
    print(f"load average (1, 5, 15 min) at the end: {os.getloadavg()}")
    print(
        f"pack runs {[round(t, 2) for t in pack_times]}, verify runs "
        f"{[round(t, 2) for t in verify_times]}"
    )
    print(f"best of {args.repeat}: pack {pack:.2f}s, verify of the packed kit {verify:.2f}s")
    print(f"ratio pack / verify: {ratio:.2f} (target <= 3.0) {'OK' if ratio <= 3 else 'MISSED'}")
    print(
        f"reading {len(loose):,} such files alone (os.open/os.read/os.close) took "
        f"{read_floor:.2f}s ({read_floor / verify:.2f}x verify)"
    )
    print(
        f"deleting {len(loose):,} such files alone took {delete_floor:.2f}s "
        f"({delete_floor / verify:.2f}x verify); pack without it: {pack - delete_floor:.2f}s"
    )
    rest = pack - delete_floor - read_floor
    print(
        f"pack without reading and deleting: {rest:.2f}s ({rest / verify:.2f}x verify, "
        f"{rest / len(loose) * 1e6:.0f} us a record)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
