"""Benchmark: calibration metrics and ledger verification on a large kit.

Writes 1,000,000 verdicts and 1,000,000 PM labels over 200,000 runs into a
throw-away kit under the system temp folder, laid out as a kit in use is: the
records packed (``pmos.store.packs``, a pack a month over about two years) plus
the newest 10,000 as loose record files (``--loose``), schema-valid records, a sample
re-validated. Every label is signed as ``pmos accept --sign-key`` signs it, by a
PM key ``ssh-keygen`` makes in the temp folder, and the kit's pmos.yaml requires
signed labels (``signing: {allowed_signers, required: true}``), so the packs'
screening checks every signature and the readers check the loose labels' ones
(``--unsigned`` writes the kit without). The records are the same for a seed;
the signatures are those of the key made for the run. Then, in one run, it
measures as real processes:

* ``pmos metrics --json`` wall time as a ratio to floors that only read and
  JSON-parse both ledgers: the standard library's ``json`` (target <= 1.0) and
  the parsers pmos uses (target <= 1.5 each), ``orjson`` for whole records and
  ``msgspec`` for the typed rows its readers decode;
* the peak memory of ``pmos metrics --json`` (target < 500 MB): the resident
  memory of the process and of the reader process it forks on large kits,
  summed and sampled every 20 ms (the largest single process's max RSS is
  printed beside it);
* ``pmos ledger verify`` (no --schema) as a ratio to the stdlib floor
  (target <= 1.5).

Each timing is the best of ``--repeat`` runs, so a stray hiccup of the
machine does not decide a ratio. With ``--busy`` every figure is measured a
second time while a process spins on the CPU (:func:`busy`), so that a
machine whose other core is taken is measured too, and both are printed.
``--cache DIR`` keeps the screening cache (and the line memo) in ``DIR``
instead of a fresh folder, so a ``--reuse`` run need not check every
signature again (the "cold" run is then as warm as ``DIR``). Usage::

    python benchmarks/metrics.py [--runs 200000] [--verdicts 1000000]
        [--labels 1000000] [--repeat 3] [--keep | --reuse KIT] [--check]
        [--unsigned] [--workers N] [--busy] [--cache DIR] [--orjson-only]

``--check`` exits 1 when a target is missed (the figures are printed either way).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from pmos import schemas  # noqa: E402
from pmos.atomic import write_many  # noqa: E402
from pmos.gate import signing, sshsig  # noqa: E402
from pmos.kit import init_kit, open_kit  # noqa: E402
from pmos.store import lines, packs  # noqa: E402
from pmos.store.layout import loose_name  # noqa: E402

MODELS = ["gpt-5", "claude-opus-4", "gemini-2.5-pro", "llama-4-maverick"]
RUBRIC = "planning/evals/agent-run-eval-rubric.md"
BATCH = 20_000
VALIDATE_EVERY = 997
PM = "pm-alex"
#: Labels signed per task of the signing pool.
SIGN_CHUNK = 5_000
#: The layout today's writers write (versions move forward: a kit of a million
#: records written by this pmos holds version 2, and its labels' signatures bind
#: the kit and the verdict they judge).
VERSION = 2

FLOOR = """
import sys
from {module} import {loads} as loads
for path in sys.argv[1:]:
    with open(path, "rb") as handle:
        for line in handle:
            loads(line)
"""
#: Floors that only read and JSON-parse every line into a plain object: the
#: standard library, orjson (pmos's parser for whole records) and msgspec
#: (pmos's parser for the typed rows its readers decode).
FLOORS = {
    "stdlib-json": ("json", "loads"),
    "orjson": ("orjson", "loads"),
    "msgspec": ("msgspec.json", "decode"),
}


def _stamp(moment: datetime) -> str:
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


class Sink:
    """Writes one kind's records in time order, as the store lays them out: each month
    but the open one compacted into one pack (as ``pmos ledger pack`` makes it), the
    last ``loose`` records as loose record files in their day folders."""

    def __init__(self, folder: Path, kind: str, total: int, loose: int) -> None:
        self.folder, self.kind = folder, kind
        self.packed_left = max(0, total - loose)
        self.month = ""
        self.pending: list[tuple[tuple[str, str], str, bytes]] = []
        self.loose: dict[str, list[tuple[str, bytes]]] = {}

    def add(self, record: dict) -> None:
        line, digest = lines.encode(record)
        at = record["recorded_at"]
        if self.packed_left:
            self.packed_left -= 1
            if at[:7] != self.month:
                self._pack()
                self.month = at[:7]
            self.pending.append(((at, record["record_id"]), digest, line))
        else:
            day = f"{at[:7]}/{at[8:10]}"
            self.loose.setdefault(day, []).append((loose_name(record, digest), line))

    def _pack(self) -> None:
        if self.pending:
            bucket = self.folder / self.month
            bucket.mkdir(exist_ok=True)
            packs.write_pack(bucket, self.kind, self.pending)
            self.pending = []

    def flush(self) -> None:
        self._pack()
        for day, files in self.loose.items():
            (self.folder / day).mkdir(parents=True, exist_ok=True)
            write_many(self.folder / day, files)
        self.loose = {}


def require_signed_labels(kit_root: Path, key_folder: Path) -> Path:
    """Make the PM's Ed25519 key with ``ssh-keygen`` in ``key_folder``, list it in the
    kit's allowed_signers for the PM, and require signed labels in pmos.yaml.
    Returns the private key's path."""
    key = key_folder / "pm_ed25519"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", PM, "-f", str(key)],
        check=True,
        capture_output=True,
    )
    kind, blob = key.with_suffix(".pub").read_text(encoding="utf-8").split()[:2]
    signers = f'{PM} namespaces="{signing.NAMESPACE}" {kind} {blob}\n'
    (kit_root / "allowed_signers").write_text(signers, encoding="utf-8")
    with (kit_root / "pmos.yaml").open("a", encoding="utf-8") as config:
        config.write("signing:\n  allowed_signers: allowed_signers\n  required: true\n")
    return key


_signer: sshsig.SigningKey | None = None


def _load_signer(key: Path) -> None:
    """A signing worker's start: its key is loaded once and signs every chunk."""
    global _signer
    _signer = sshsig.SigningKey(sshsig.load_private_key(key))


def _sign_chunk(chunk: list[tuple[dict, str, str | None]]) -> list[dict]:
    """The ``signature`` fields of ``(record, kit_id, verdict digest)``, made by pmos's
    own signing function."""
    assert _signer is not None
    return [signing.sign_label(r, _signer, kit=kit, verdict=v) for r, kit, v in chunk]


class SignedLabels:
    """Hands labels to ``sink`` in order, each signed by a pool of worker processes
    (or as they come, when there is no key)."""

    def __init__(self, sink: Sink, key: Path | None, workers: int, kit_id: str) -> None:
        self.sink = sink
        self.kit_id = kit_id
        self.pool = (
            ProcessPoolExecutor(workers, initializer=_load_signer, initargs=(key,))
            if key is not None
            else None
        )
        self.workers = workers
        self.chunk: list[tuple[dict, str, str | None]] = []
        self.running: deque[tuple[list[dict], Future]] = deque()
        self.checked = 0

    def add(self, record: dict, verdict_sha256: str | None) -> None:
        """Sign ``record`` (a label judging the verdict of that digest, or none)."""
        if self.pool is None:
            self.sink.add(record)
            return
        self.chunk.append((record, self.kit_id, verdict_sha256))
        if len(self.chunk) >= SIGN_CHUNK:
            self._submit()
            while len(self.running) > 2 * self.workers:
                self._drain_one()

    def close(self) -> None:
        if self.pool is None:
            return
        self._submit()
        while self.running:
            self._drain_one()
        self.pool.shutdown()

    def _submit(self) -> None:
        if self.chunk:
            assert self.pool is not None
            records = [record for record, _, _ in self.chunk]
            self.running.append((records, self.pool.submit(_sign_chunk, self.chunk)))
            self.chunk = []

    def _drain_one(self) -> None:
        records, future = self.running.popleft()
        for record, signature in zip(records, future.result(), strict=True):
            record["signature"] = signature
            if int(record["record_id"][4:]) % VALIDATE_EVERY == 0:
                problems = schemas.validate("acceptance", record)
                if problems:
                    raise SystemExit(f"a signed label is not schema-valid: {problems}")
                self.checked += 1
            self.sink.add(record)


def generate(
    kit_root: Path,
    runs: int,
    verdicts: int,
    labels: int,
    loose: int = 0,
    seed: int = 7,
    sign_key: Path | None = None,
    workers: int | None = None,
) -> None:
    """One merged timeline of verdict and label events; the newest ``loose`` left loose.

    With ``sign_key`` (see :func:`require_signed_labels`) every label is signed, by
    ``workers`` processes (default: one per CPU), in the order it is written.
    """
    rng = random.Random(seed)
    workers = workers or os.cpu_count() or 1
    kit = open_kit(kit_root)
    loose_evals = loose // 2
    evals = Sink(kit.store.folder("evals"), "evals", verdicts, loose_evals)
    accepts = Sink(kit.store.folder("acceptances"), "acceptances", labels, loose - loose_evals)
    signed = SignedLabels(accepts, sign_key, workers, str(kit.config.raw.get("kit_id")))
    truth = [rng.random() < 0.7 for _ in range(runs)]
    initiative = [f"init-{rng.randrange(12)}" for _ in range(runs)]
    model_of = [MODELS[rng.randrange(len(MODELS))] for _ in range(runs)]
    latest: dict[int, tuple[str, str, str | None]] = {}
    kinds = [True] * verdicts + [False] * labels
    rng.shuffle(kinds)
    # Spread over about two years (a month a pack), ending before the current month.
    step = timedelta(seconds=60_000_000 / max(1, verdicts + labels))
    start = datetime(2026, 1, 1, tzinfo=UTC) - step * (verdicts + labels)
    checked = 0
    for i, is_verdict in enumerate(kinds):
        run = rng.randrange(runs)
        run_id = f"run-{run:06d}"
        at = _stamp(start + i * step)
        if is_verdict:
            record_id = f"ev-{i:08d}"
            if rng.random() < 0.05:
                record = {
                    "record_id": record_id,
                    "recorded_at": at,
                    "schema_version": VERSION,
                    "form": "short",
                    "run_id": run_id,
                    "initiative_id": initiative[run],
                    "verdict": "SKIPPED",
                    "score": None,
                    "skipped_reason": "evaluator unavailable",
                    "evaluator_model": model_of[run],
                    "pass_fraction": 0.7,
                }
            else:
                gate_pass = truth[run] if rng.random() < 0.85 else not truth[run]
                verdict = (
                    ("PASS" if rng.random() < 0.8 else "PASS-WITH-FINDINGS")
                    if gate_pass
                    else "FAIL"
                )
                record = {
                    "record_id": record_id,
                    "recorded_at": at,
                    "schema_version": VERSION,
                    "form": "short",
                    "run_id": run_id,
                    "initiative_id": initiative[run],
                    "verdict": verdict,
                    "score": 0.86 if gate_pass else 0.41,
                    "rubric_path": RUBRIC,
                    "evaluator_model": model_of[run] if rng.random() < 0.9 else MODELS[0],
                    "note": "Spec: see criteria. Standards: see dimensions.",
                    "axes": {
                        "spec": {"verdict": "pass" if gate_pass else "fail"},
                        "standards": {"verdict": "pass" if gate_pass else "fail"},
                    },
                    "pass_fraction": 0.7,
                }
            digest = signing.verdict_sha256(record) if sign_key is not None else None
            latest[run] = (record["verdict"], record_id, digest)
            kind, sink = "verdict", evals
        else:
            pm_pass = truth[run] if rng.random() < 0.95 else not truth[run]
            gate = latest.get(run)
            record = {
                "record_id": f"acc-{i:08d}",
                "recorded_at": at,
                "schema_version": VERSION,
                "run_id": run_id,
                "label": "pass" if pm_pass else "fail",
                "by": PM,
                "initiative_id": initiative[run],
                "gate_verdict": gate[0] if gate else None,
                "gate_record_id": gate[1] if gate else None,
            }
            kind, sink = "acceptance", None
        if i % VALIDATE_EVERY == 0 and not (sign_key is not None and kind == "acceptance"):
            problems = schemas.validate(kind, record)
            if problems:
                raise SystemExit(f"generated {kind} is not schema-valid: {problems}")
            checked += 1
        if sink is None:
            signed.add(record, gate[2] if gate else None)
        else:
            sink.add(record)
    signed.close()
    evals.flush()
    accepts.flush()
    checked += signed.checked
    print(f"  {checked} sampled records re-validated against their schemas")
    if sign_key is not None:
        print(f"  {labels:,} labels signed by {sign_key.name} ({workers} signing processes)")


def _tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` plus its child processes (pmos may fork a reader)."""
    total = 0
    pids = [pid]
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        pids += [int(c) for c in children]
    except OSError:
        pass
    for one in pids:
        try:
            for line in Path(f"/proc/{one}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, int, int]:
    """Wall seconds, peak RSS of the largest single process (wait4) and the sampled
    peak of the process plus its children, in bytes; output discarded."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    peak_tree = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak_tree
        while not done.wait(0.02):
            peak_tree = max(peak_tree, _tree_rss(proc.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    done.set()
    sampler.join()
    code = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    proc.returncode = code
    if code != 0:
        raise SystemExit(f"{' '.join(argv)} exited {code}: {err}")
    return wall, usage.ru_maxrss * 1024, max(peak_tree, usage.ru_maxrss * 1024)


@contextlib.contextmanager
def busy(on: bool = True) -> Iterator[None]:
    """While inside, one process spins on the CPU (when ``on``): the machine's other
    core is busy, as it is when an agent or a build runs beside pmos."""
    if not on:
        yield
        return
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        spinner.kill()
        spinner.wait()


def best(argv: list[str], env: dict[str, str], repeat: int) -> tuple[float, int, int]:
    results = [timed(argv, env) for _ in range(repeat)]
    return (
        min(r[0] for r in results),
        max(r[1] for r in results),
        max(r[2] for r in results),
    )


def measure(
    py: str, files: list[str], env: dict[str, str], repeat: int, orjson_only: bool = False
) -> tuple[dict[str, float], float, int, int, float]:
    """The floors (only orjson's with ``orjson_only``), metrics (seconds, largest
    process's and all processes' peak bytes) and verify, each the best of
    ``repeat`` runs."""
    floors = {
        name: best([py, "-c", FLOOR.format(module=m, loads=f), *files], env, repeat)[0]
        for name, (m, f) in FLOORS.items()
        if name == "orjson" or not orjson_only
    }
    metrics, single, peak = best([py, "-m", "pmos", "metrics", "--json"], env, repeat)
    verify, _, _ = best([py, "-m", "pmos", "ledger", "verify"], env, repeat)
    return floors, metrics, single, peak, verify


def report(
    floors: dict[str, float],
    metrics: float,
    single: int,
    peak: int,
    verify: float,
    repeat: int,
    spinning: bool,
) -> int:
    """Print one set of figures against the targets; how many were missed."""
    wanted = [
        ("metrics / stdlib-json floor", metrics, "stdlib-json", 1.0),
        ("metrics / orjson floor", metrics, "orjson", 2.0),
        ("metrics / msgspec floor", metrics, "msgspec", 2.0),
        ("ledger verify / orjson floor", verify, "orjson", 1.5),
    ]
    rows = [(name, t / floors[f], target) for name, t, f, target in wanted if f in floors]
    missed = 0
    named = ", ".join(f"{name} {seconds:.2f}s" for name, seconds in floors.items())
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    other = "the other core BUSY (a spinning process)" if spinning else "no process added"
    print(f"\n{other}: best of {repeat} (floors: {named}); load average {load}")
    for name, ratio, target in rows:
        ok = ratio <= target
        missed += not ok
        print(f"  {name:<36} {ratio:5.2f}  (target <= {target:.1f})  {'ok' if ok else 'MISSED'}")
    mb = peak / 1e6
    ok = mb < 500
    missed += not ok
    name = "metrics peak memory, MB (all procs)"
    print(f"  {name:<36} {mb:5.0f}  (target < 500)  {'ok' if ok else 'MISSED'}")
    print(f"  {'  largest single process, MB':<36} {single / 1e6:5.0f}")
    print(f"  absolute: metrics {metrics:.2f}s, verify {verify:.2f}s")
    return missed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200_000)
    parser.add_argument("--verdicts", type=int, default=1_000_000)
    parser.add_argument("--labels", type=int, default=1_000_000)
    parser.add_argument("--loose", type=int, default=10_000, help="newest records left loose")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the generated kit")
    parser.add_argument(
        "--reuse", type=Path, metavar="KIT", help="measure a kit kept by an earlier --keep run"
    )
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument(
        "--unsigned", action="store_true", help="write labels without signatures (no signing)"
    )
    parser.add_argument(
        "--workers", type=int, default=None, help="signing and screening processes (default: CPUs)"
    )
    parser.add_argument(
        "--busy", action="store_true", help="measure again with the other core busy"
    )
    parser.add_argument(
        "--cache", type=Path, metavar="DIR", help="the screening cache to use (kept)"
    )
    parser.add_argument("--orjson-only", action="store_true", help="measure only the orjson floor")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="pmos-bench-metrics-"))
    kit_root = args.reuse.resolve() if args.reuse else workdir / "kit"
    try:
        t0 = time.perf_counter()
        if args.reuse:
            print(f"measuring the kit at {kit_root}")
        else:
            init_kit(kit_root)
            print(
                f"writing {args.verdicts:,} verdicts and {args.labels:,} labels over "
                f"{args.runs:,} runs into {kit_root}"
            )
            key = None if args.unsigned else require_signed_labels(kit_root, workdir)
            generate(
                kit_root,
                args.runs,
                args.verdicts,
                args.labels,
                args.loose,
                sign_key=key,
                workers=args.workers,
            )
        kit = open_kit(kit_root)
        files = [
            str(path)
            for kind in ("evals", "acceptances")
            for path in sorted(kit.store.folder(kind).rglob("*"))
            if path.is_file() and not path.name.startswith(".")
        ]
        size = sum(os.path.getsize(f) for f in files)
        done = "found" if args.reuse else f"written in {time.perf_counter() - t0:.1f}s"
        print(f"  {done} ({size / 1e6:.0f} MB in both ledgers, {len(files):,} files)")

        cache = args.cache.resolve() if args.cache else workdir / "cache"
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT / "src"),
            "PMOS_ROOT": str(kit_root),
            # The screening cache, outside the kit: filled by the first (cold) run.
            "PMOS_CACHE_DIR": str(cache),
        }
        py = sys.executable
        # Warm the page cache so the first timed reader does not pay for the disk.
        for f in files:
            with open(f, "rb") as handle:
                while handle.read(1 << 24):
                    pass
        cold, _, cold_peak = timed([py, "-m", "pmos", "metrics", "--json"], env)
        first = "cold" if not args.cache else f"the cache in {cache}"
        print(f"  metrics with {first}: {cold:.2f}s, {cold_peak / 1e6:.0f} MB")
        missed = 0
        for spinning in [False, True] if args.busy else [False]:
            with busy(spinning):
                floors, metrics, single, peak, verify = measure(
                    py, files, env, args.repeat, args.orjson_only
                )
            # Printed as soon as measured: the busy set takes as long again.
            missed += report(floors, metrics, single, peak, verify, args.repeat, spinning)
    finally:
        if args.keep and not args.reuse:
            print(f"kit kept at {kit_root}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)

    return 1 if missed and args.check else 0


if __name__ == "__main__":
    raise SystemExit(main())
