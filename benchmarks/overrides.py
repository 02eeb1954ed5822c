"""Override benchmark: recording a PM label that overrides the gate must not slow
down as the exemplar log grows.

Makes two kits that differ only in their exemplar logs: one holds ``--overrides``
(default 5,000) override entries, one file each in the override folder as
``pmos accept`` leaves them (rendered by pmos's own entry renderer, validated
once with its parser); the other none. Each kit holds the same ``--repeats``
judged, unlabelled runs. Prints, measured in this one run:

* the median wall time of ``pmos accept RUN --label fail`` (an override, which
  writes an entry file) on the kit with the full log, as a ratio to the same on
  the kit with the empty log (target: at most 1.2), the two measured
  interleaved so machine noise hits both alike.

Usage: ``python benchmarks/overrides.py [--overrides N] [--repeats R]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUBRIC = "planning/evals/agent-run-eval-rubric.md"


def timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def judge_pass(kit, run_id: str) -> None:
    from pmos.gate.writers import record_short_verdict

    record_short_verdict(
        kit,
        run_id=run_id,
        initiative_id="bench",
        verdict="PASS",
        score=0.9,
        rubric_path=RUBRIC,
        evaluator_model="gpt-5",
        spec="pass",
        standards="pass",
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--overrides", type=int, default=5_000)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()

    from pmos.gate.exemplars import override_dir, read_log, render_entry
    from pmos.kit import init_kit, open_kit

    with tempfile.TemporaryDirectory() as tmp:
        empty_root, full_root = Path(tmp) / "empty", Path(tmp) / "full"
        init_kit(empty_root)
        empty = open_kit(empty_root)
        for i in range(args.repeats + 1):
            judge_pass(empty, f"timed-{i}")
        shutil.copytree(empty_root, full_root)
        kit = open_kit(full_root)
        start = time.perf_counter()
        # One rendered entry, its ids varied: what 5,000 'pmos accept' overrides leave.
        entry = {
            "case_id": "CASE",
            "run_id": "RUN",
            "gate_verdict": "PASS",
            "pm_label": "fail",
            "override": True,
            "lesson": "The retry loop swallowed the timeout; the green test asserted nothing.",
            "recorded_at": "2026-11-30T08:15:00Z",
            "by": "pm",
            "gate_record_id": "EVAL",
            "acceptance_record_id": "ACC",
            "evaluator_model": "gpt-5",
        }
        one = render_entry(entry)
        chunks = [
            one.replace("CASE", f"logged-{i}-override-20261130T081500Z")
            .replace("RUN", f"logged-{i}")
            .replace("EVAL", f"ev-20261130T081500000000Z-{i:08x}")
            .replace("ACC", f"acc-20261130T081500000000Z-{i:08x}")
            for i in range(args.overrides)
        ]
        folder = override_dir(kit)
        folder.mkdir(parents=True, exist_ok=True)
        for i, chunk in enumerate(chunks):
            (folder / f"logged-{i}-override-20261130T081500Z.md").write_text(
                chunk.lstrip("\n"), encoding="utf-8"
            )
        logged = len(read_log(kit))
        assert logged == args.overrides, logged
        built = time.perf_counter() - start

        def accept(root: Path, run_id: str) -> list[str]:
            return [
                sys.executable, "-m", "pmos", "--root", str(root),
                "accept", run_id, "--label", "fail", "--by", "pm",
            ]  # fmt: skip

        env = dict(os.environ)
        for root in (full_root, empty_root):  # untimed: warms the caches
            timed(accept(root, f"timed-{args.repeats}"), env)
        full_times, empty_times = [], []
        for i in range(args.repeats):
            full_times.append(timed(accept(full_root, f"timed-{i}"), env))
            empty_times.append(timed(accept(empty_root, f"timed-{i}"), env))
        assert len(read_log(kit)) == args.overrides + args.repeats + 1
        assert len(read_log(empty)) == args.repeats + 1
    t_full, t_empty = statistics.median(full_times), statistics.median(empty_times)
    print(f"exemplar log of {args.overrides:,} overrides written and validated in {built:.1f} s")
    print(
        f"pmos accept (an override), median of {args.repeats}: "
        f"{t_full * 1000:.0f} ms with {args.overrides:,} logged overrides, "
        f"{t_empty * 1000:.0f} ms with an empty log"
    )
    print(f"ratio: {t_full / t_empty:.3f} (target <= 1.2)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
