"""Benchmark: what git pays for a ledger of 100,000 records, in this layout and flat.

Builds two throw-away repositories holding the same records (run records, made
by the store's own sealing, so each line is what a writer stores):

* **buckets** (this layout): records spread over ``--months`` past months, each
  closed month compacted into one pack as ``pmos ledger pack`` makes it, and
  the open month's ``--open`` records loose in their day folders;
* **flat** (the layout before issue 23): every record a loose file in one folder.

and prints, for each, measured in this one run: ``git add -A`` of the whole
ledger, ``git status`` afterwards, and the commit of one more record
(``git add`` + ``git commit``), with the ratio flat / buckets.

Usage: ``python benchmarks/git_layout.py [--records 100000] [--months 12] [--open 3000]``
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from pmos.kit import init_kit  # noqa: E402
from pmos.store.append import record_meta, seal  # noqa: E402
from pmos.store.packing import pack_store  # noqa: E402

GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "b",
    "GIT_AUTHOR_EMAIL": "b@example.invalid",
    "GIT_COMMITTER_NAME": "b",
    "GIT_COMMITTER_EMAIL": "b@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str) -> float:
    start = time.perf_counter()
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=GIT_ENV)
    return time.perf_counter() - start


def month_back(months: int) -> str:
    today = datetime.now(UTC).date()
    index = today.year * 12 + today.month - 1 - months
    return f"{index // 12:04d}-{index % 12 + 1:02d}"


def records(total: int, months: int, open_count: int) -> list:
    out = []
    past = total - open_count
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S")
    for i in range(total):
        record = {
            **record_meta("runs"),
            "run_id": f"run-{i}",
            "initiative_id": "init-1",
            "builder_model": "claude-sonnet-4",
        }
        if i < past:
            month = month_back(2 + i % months)
            record["recorded_at"] = f"{month}-{1 + i % 28:02d}T10:00:00.{i:06d}Z"
        else:
            record["recorded_at"] = f"{now}.{i % 1_000_000:06d}Z"
        out.append(seal("runs", record))
    return out


def write(folder: Path, sealed: list, flat: bool) -> None:
    made: set[Path] = set()
    for s in sealed:
        path = folder / (s.name.rsplit("/", 1)[1] if flat else s.name)
        if path.parent not in made:
            path.parent.mkdir(parents=True, exist_ok=True)
            made.add(path.parent)
        path.write_bytes(s.line)


def measure(repo: Path, extra: object, flat: bool) -> dict[str, float]:
    git(repo, "init", "-q", "-b", "main")
    out = {"git add": git(repo, "add", "-A")}
    git(repo, "commit", "-q", "-m", "ledger")
    out["git status"] = git(repo, "status", "--porcelain")
    write(repo / "kit" / "state" / "runs", [extra], flat)
    out["commit one more"] = git(repo, "add", "-A") + git(repo, "commit", "-q", "-m", "one")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--months", type=int, default=12)
    parser.add_argument("--open", type=int, default=3_000)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="pmos-git-bench-"))
    try:
        sealed = records(args.records + 1, args.months, args.open + 1)
        extra, sealed = sealed[-1], sealed[:-1]
        results = {}
        for layout in ("buckets", "flat"):
            repo = tmp / layout
            init_kit(repo / "kit")
            folder = repo / "kit" / "state" / "runs"
            write(folder, sealed, layout == "flat")
            if layout == "buckets":
                from pmos.store.layout import Store

                store = Store(repo / "kit", {})
                pack_store(store, ["runs"], force=True)
            files = sum(1 for _ in folder.rglob("*") if _.is_file())
            print(f"{layout}: {files:,} files under state/runs", flush=True)
            results[layout] = measure(repo, extra, layout == "flat")
        print(f"\n{args.records:,} records; {os.getloadavg()[0]:.2f} load average")
        print(f"{'':<18}{'buckets':>10}{'flat':>10}{'flat/buckets':>14}")
        for name in results["buckets"]:
            b, f = results["buckets"][name], results["flat"][name]
            print(f"{name:<18}{b:>9.3f}s{f:>9.3f}s{f / b:>13.1f}x")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
