"""Benchmark: ``pmos gate`` on a change of 100 runs over a kit of 100,000 records.

Builds a product repository in a throw-away folder: a kit at ``product/pmos``
holding ``--records`` (default 100,000) verdicts and PM labels over
``--records // 5`` runs, written with the store's own functions as a kit in
use lays them out (packed, the newest ``--loose`` as loose files; the
generator of ``benchmarks/metrics.py``), committed as ``main``. A branch then
adds ``--runs`` (default 100) runs through the real writers (a registration,
a PASS verdict and a PM pass label each) and commits them. Measured as real
processes, each the best of ``--repeat`` runs, the two run in turn:

* ``pmos gate --base main --json`` (the change may merge: checked);
* ``pmos ledger verify --json`` of the same kit at the branch's head.

Prints the ratio gate / verify (target: at most 1.5) and the machine's load
average before and after. ``--check`` exits 1 when the target is missed.
pmos's modules are byte-compiled first, as an installer does (as
``benchmarks/writer.py`` does): with ``PYTHONDONTWRITEBYTECODE`` set, a module
edited since its last compilation would otherwise be compiled again on every
run, by whichever of the two commands imports it.

Usage: ``python benchmarks/gate.py [--records 100000] [--runs 100] [--loose 1000]
[--repeat 3] [--check] [--keep]``.
"""

from __future__ import annotations

import argparse
import compileall
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
sys.path.insert(0, str(Path(__file__).resolve().parent))

from metrics import generate  # noqa: E402

import pmos  # noqa: E402
from pmos.kit import init_kit  # noqa: E402

RUBRIC = "planning/evals/agent-run-eval-rubric.md"
TARGET = 1.5


def git(cwd: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    done = subprocess.run(
        ["git", "-C", str(cwd), *args], capture_output=True, text=True, env=env, check=True
    )
    return done.stdout.strip()


def add_runs(kit: Path, count: int) -> None:
    """``count`` runs through the real writers, in this process (pmos's CLI)."""
    from typer.testing import CliRunner

    from pmos.cli import app

    runner = CliRunner()
    env = {"PMOS_ROOT": str(kit), "PMOS_EVALUATOR_MODEL": ""}

    def ok(*args: str) -> str:
        result = runner.invoke(app, list(args), env=env, catch_exceptions=False)
        if result.exit_code:
            raise SystemExit(f"pmos {' '.join(args)}: {result.output}")
        return result.stdout

    for n in range(count):
        run = f"change-{n:04d}"
        ok(
            "run",
            "register",
            "--run-id",
            run,
            "--initiative-id",
            "shop",
            "--builder-model",
            "claude-x",
        )
        ok(
            "eval", "log", run, "shop", "0.9", "PASS", RUBRIC, "gpt-5",
            "--spec", "pass", "--standards", "pass",
        )  # fmt: skip
        ok("accept", run, "--label", "pass", "--by", "pm-alex", "--note", "checked")


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, int, str]:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    return time.perf_counter() - start, done.returncode, done.stdout


def best_of_alternated(
    commands: list[list[str]], cwd: Path, env: dict[str, str], repeat: int
) -> list[tuple[float, int, str]]:
    """Each command's best run of ``repeat``, the commands run in turn (so both
    see the same stretch of a shared machine, and both caches are warm after
    the first turn)."""
    runs: list[list[tuple[float, int, str]]] = [[] for _ in commands]
    for _ in range(repeat):
        for argv, done in zip(commands, runs, strict=True):
            done.append(timed(argv, cwd, env))
    first = ", ".join(f"{done[0][0]:.2f} s" for done in runs)
    print(f"first runs (this machine's caches cold): {first}")
    return [min(done, key=lambda r: r[0]) for done in runs]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--loose", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the product repository")
    args = parser.parse_args()
    compileall.compile_dir(Path(pmos.__file__).parent, quiet=1)
    work = Path(tempfile.mkdtemp(prefix="pmos-bench-gate-"))
    try:
        repo = work / "product"
        repo.mkdir()
        git(repo, "init", "-q", "-b", "main")
        git(repo, "config", "user.email", "bench@example.com")
        git(repo, "config", "user.name", "Bench")
        kit = repo / "pmos"
        init_kit(kit)
        verdicts = args.records * 3 // 5
        labels = args.records - verdicts
        print(f"writing {verdicts:,} verdicts and {labels:,} labels into {kit}")
        generate(kit, max(1, args.records // 5), verdicts, labels, loose=args.loose)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "a kit in use")
        git(repo, "checkout", "-q", "-b", "change")
        print(f"adding {args.runs} runs (registration, verdict, PM label) through the writers")
        add_runs(kit, args.runs)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "the change")
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT / "src"),
            "PMOS_ROOT": str(kit),
            "PMOS_EVALUATOR_MODEL": "",
        }
        py = [sys.executable, "-m", "pmos"]
        load_before = os.getloadavg()
        (gate_s, gate_rc, gate_out), (verify_s, verify_rc, _) = best_of_alternated(
            [[*py, "gate", "--base", "main", "--json"], [*py, "ledger", "verify", "--json"]],
            repo,
            env,
            args.repeat,
        )
        load_after = os.getloadavg()
        report = json.loads(gate_out)
        print(
            f"pmos gate: {gate_s:.2f} s (exit {gate_rc}, {report['decision']}, "
            f"{len(report['runs'])} runs of the change)"
        )
        print(f"pmos ledger verify: {verify_s:.2f} s (exit {verify_rc})")
        ratio = gate_s / verify_s
        print(f"ratio gate / verify: {ratio:.2f} (target <= {TARGET})")
        print(
            "load average before/after: "
            + " ".join(f"{x:.2f}" for x in load_before)
            + " / "
            + " ".join(f"{x:.2f}" for x in load_after)
            + f" on {os.cpu_count()} CPUs"
        )
        if gate_rc != 0 or len(report["runs"]) != args.runs:
            print("pmos gate did not accept the honest change", file=sys.stderr)
            return 1
        return 1 if args.check and ratio > TARGET else 0
    finally:
        if args.keep:
            print(f"kept: {repo}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
