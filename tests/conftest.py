"""Shared fixtures: every test runs in its own throw-away kit root.

The autouse fixture points PMOS_ROOT at a fresh kit (a copy of one made by
``pmos init`` once per session) and makes it the working directory, so no test
can touch the repository's own state/ ledgers or another test's kit.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from typer.testing import CliRunner

from pmos.cli import app
from pmos.kit import Kit, init_kit, open_kit

RUBRIC = "planning/evals/agent-run-eval-rubric.md"
#: The arguments that register run "r" of initiative "i" built by model "m".
REGISTER_R = ("run", "register", "--run-id", "r", "--initiative-id", "i", "--builder-model", "m")
DIMENSIONS = {
    "contract_fulfilment": (0.35, "spec"),
    "verification": (0.15, "spec"),
    "correctness_and_safety": (0.20, "standards"),
    "test_quality": (0.15, "standards"),
    "maintainability": (0.15, "standards"),
}


#: Where throw-away kits go when the run names no --basetemp: a RAM-backed folder when
#: the machine has one. Every append fsyncs; on tmpfs that returns at once, so the
#: suite measures pmos rather than the disk. Nothing under test depends on data
#: surviving a power cut (crash tests kill processes, which tmpfs survives alike).
RAM_TMP = Path("/dev/shm")

#: No property test has a time limit: Hypothesis's default deadline (200 ms an
#: example) and its too_slow health check (on the time taken to generate examples)
#: are wall-clock assertions, and on a loaded machine a first example that imports
#: scikit-learn or starts a process, or a large generated document, overruns them
#: and fails. A test that sets suppress_health_check lists TIME_FREE too.
TIME_FREE = [HealthCheck.too_slow]
settings.register_profile("pmos", deadline=None, suppress_health_check=TIME_FREE)
settings.load_profile("pmos")


def pytest_configure(config: pytest.Config) -> None:
    _share_compiled_code(config)
    if getattr(config, "workerinput", None) is not None:
        return  # an xdist worker: the controller chose the base folder
    if config.option.basetemp is None and RAM_TMP.is_dir() and os.access(RAM_TMP, os.W_OK):
        import tempfile

        config.option.basetemp = tempfile.mkdtemp(prefix="pmos-tests-", dir=RAM_TMP)
        config.add_cleanup(lambda: shutil.rmtree(config.option.basetemp, ignore_errors=True))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    """In CI (``CI`` set, as .ci/run's runner sets it), a skipped test fails.

    .ci/run installs everything the suite needs (chromium, PostgreSQL, strace,
    ssh-keygen), so a test that skips there is one whose check silently stopped
    running; locally, a missing tool may still skip with its reason.
    """
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get("CI") and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, where every test must run: {reason}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Start the tests marked ``slow`` first, dealt round-robin to the workers.

    pytest-xdist's worksteal scheduler first hands each of W workers one
    contiguous slice of the collection (the first len//W items, then the next...),
    and idle workers later steal from the tail of busy ones. A long test that
    sits late in a slice starts last and ends the run alone; placed at the head of
    the slices, the long tests run side by side from the start while the short
    ones fill in around them. The order only changes when tests run, never what
    they check.
    """
    slow = [item for item in items if item.get_closest_marker("slow")]
    if not slow:
        return
    rest = [item for item in items if not item.get_closest_marker("slow")]
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    ordered: list[pytest.Item] = []
    left, taken = len(items), 0
    for worker in range(workers):
        size = left // (workers - worker)  # as worksteal sizes each first slice
        left -= size
        head = slow[worker::workers]
        body = max(0, size - len(head))
        ordered += head + rest[taken : taken + body]
        taken += body
    ordered += rest[taken:]
    assert sorted(map(id, ordered)) == sorted(map(id, items))
    items[:] = ordered


def _share_compiled_code(config: pytest.Config) -> None:
    """Cache compiled code under .pytest_cache/pycache when bytecode writing is off.

    With PYTHONDONTWRITEBYTECODE set (as on machines that keep source trees free
    of __pycache__), every xdist worker rewrote the assertions of every test module
    again (several CPU-seconds a collection) and every ``python -m pmos`` process a
    test starts compiled pmos from source again. The cache goes to a folder of its
    own (PYTHONPYCACHEPREFIX), never next to the sources, and the workers and
    processes the suite starts inherit the setting; code behaves the same either way.
    """
    if not sys.dont_write_bytecode:
        return  # caches are written already (or an outer run of this hook chose a folder)
    prefix = str(config.rootpath / ".pytest_cache" / "pycache")
    sys.dont_write_bytecode = False
    sys.pycache_prefix = prefix
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = prefix


class Snapshot:
    """A folder's tree held in memory, written out again as a copy of it.

    Writing the bytes held here costs about a tenth of ``shutil.copytree`` (which
    stats, copies and sets times on each file again): the autouse kit below is
    copied for every test. Folders and regular files keep their permission bits;
    a tree holding anything else (a symlink) is copied by ``copytree`` instead.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.entries: list[tuple[str, int, bytes | None]] | None = []
        for folder, dirs, files in os.walk(root):
            dirs.sort()
            rel = os.path.relpath(folder, root)
            self.entries.append((rel, stat.S_IMODE(os.stat(folder).st_mode), None))
            for name in sorted(files):
                path = os.path.join(folder, name)
                st = os.lstat(path)
                if not stat.S_ISREG(st.st_mode):
                    self.entries = None
                    return
                with open(path, "rb") as handle:
                    data = handle.read()
                self.entries.append(
                    (os.path.normpath(os.path.join(rel, name)), stat.S_IMODE(st.st_mode), data)
                )
            if any(os.path.islink(os.path.join(folder, d)) for d in dirs):
                self.entries = None
                return

    def copy_to(self, target: Path, *, exist_ok: bool = False) -> None:
        """Write the tree at ``target`` (over what is there when ``exist_ok``, as
        ``copytree(..., dirs_exist_ok=True)`` does)."""
        if self.entries is None:
            shutil.copytree(self.root, target, symlinks=True, dirs_exist_ok=exist_ok)
            return
        flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if exist_ok else os.O_EXCL)
        os.makedirs(target, exist_ok=exist_ok)
        top = os.open(target, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for rel, mode, data in self.entries:  # parents before their contents
                if data is None:
                    if rel != ".":
                        try:
                            os.mkdir(rel, mode, dir_fd=top)
                        except FileExistsError:
                            if not exist_ok:
                                raise
                    os.chmod(rel, mode, dir_fd=top)
                    continue
                fd = os.open(rel, flags, mode, dir_fd=top)
                try:
                    os.fchmod(fd, mode)
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view) :]
                finally:
                    os.close(fd)
        finally:
            os.close(top)


@pytest.fixture(scope="session")
def kit_template(tmp_path_factory: pytest.TempPathFactory) -> Snapshot:
    """One kit made by ``pmos init`` per session (per worker), never used directly:
    each test gets a copy, which costs a small part of running init again."""
    root = tmp_path_factory.mktemp("template") / "kit"
    init_kit(root)
    return Snapshot(root)


@pytest.fixture(autouse=True)
def kit_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kit_template: Snapshot) -> Path:
    root = tmp_path / "kit"
    kit_template.copy_to(root)
    monkeypatch.setenv("PMOS_ROOT", str(root))
    # The screening cache of each test is its own, outside the kit (never ~/.cache).
    monkeypatch.setenv("PMOS_CACHE_DIR", str(tmp_path / "pmos-cache"))
    monkeypatch.delenv("PMOS_EVALUATOR_MODEL", raising=False)
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def kit(kit_root: Path) -> Kit:
    return open_kit(kit_root)


def judged_pass(cli: Any, run: str = "r1") -> None:
    """A short PASS verdict on ``run`` through ``pmos eval log`` (registered or not),
    for tests about what comes after the verdict: labels, signatures, anchors."""
    result = cli(
        "eval", "log", run, "i1", "0.9", "PASS", RUBRIC, "gpt-5",
        "--spec", "pass", "--standards", "pass", "--allow-unknown-run",
    )  # fmt: skip
    assert result.exit_code == 0, result.output


def good_verdict(**overrides: Any) -> dict[str, Any]:
    """A complete verdict the writer accepts against the default rubric (score 0.9, PASS)."""
    verdict: dict[str, Any] = {
        "run_id": "run-1",
        "initiative_id": "init-1",
        "rubric_path": RUBRIC,
        "evaluator_model": "gpt-5",
        "verdict": "PASS",
        "score": 0.9,
        "note": "Spec: pass, both criteria met. Standards: pass, clean.",
        "axes": {
            "spec": {"verdict": "pass", "rationale": "both done-criteria met"},
            "standards": {"verdict": "pass", "rationale": "no blocking defect, score 0.9"},
        },
        "criteria": [
            {
                "id": "c1",
                "result": "pass",
                "evidence": "tests/test_api.py:12 passes",
                "verified": True,
            },
            {
                "id": "c2",
                "result": "pass",
                "evidence": "README.md:40 documents the flag",
                "verified": True,
            },
        ],
        "dimensions": {
            name: {
                "score": 0.9,
                "weight": weight,
                "note": "met, checked by hand",
                "evidence": "src/app.py:10",
                "verified": True,
                "axis": axis,
            }
            for name, (weight, axis) in DIMENSIONS.items()
        },
        "defects": [],
        "exemplars": [],
    }
    verdict.update(overrides)
    return copy.deepcopy(verdict)


@pytest.fixture
def verdict() -> dict[str, Any]:
    return good_verdict()


class Cli:
    """Runs pmos in-process (fast) and reports exit code, stdout and stderr."""

    def __init__(self) -> None:
        self.runner = CliRunner()

    def __call__(self, *args: str, input: str | None = None):
        return self.runner.invoke(app, list(args), input=input, catch_exceptions=False)


@pytest.fixture
def cli() -> Cli:
    return Cli()


def pmos_process(
    *args: str,
    input: str | None = None,
    cwd: Path | None = None,
    env: dict | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess:
    """Run pmos as a real process (for exit codes, locks, signals)."""
    return subprocess.run(
        [sys.executable, "-m", "pmos", *args],
        input=input,
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        timeout=timeout,
    )


@pytest.fixture
def pmos() -> Callable[..., subprocess.CompletedProcess]:
    return pmos_process


def pmos_in_process(*args: str, input: str | None = None) -> subprocess.CompletedProcess:
    """pmos run in this process, reported as :func:`pmos_process` reports a real one.

    For modules whose tests are about what a command finds, says and exits with
    (the CLI maps each expected error to its exit code in-process too): a process
    of its own per call added only start-up time, about a second when the command
    imports scikit-learn. What needs a real process (signals, locks, a hang cut by
    a timeout, the entry point's own exit handling) keeps :func:`pmos_process`.
    """
    done = Cli()(*args, input=input)
    return subprocess.CompletedProcess(["pmos", *args], done.exit_code, done.stdout, done.stderr)


def ledger_bytes(root: Path) -> dict[str, bytes]:
    """Every file under state/, for 'nothing was written' assertions."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted((root / "state").rglob("*"))
        if p.is_file()
    }


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


# PostgreSQL fixtures (pg_server, pg_dsn, db) for the database tests.
from pg_fixtures import db, pg_dsn, pg_server  # noqa: E402, F401
