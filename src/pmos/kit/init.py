"""``pmos init``: create a kit root, or complete one, without overwriting anything."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, NamedTuple

from pmos import __version__
from pmos.assets import kit_source
from pmos.errors import BadInput, ConfigError, SinkRefused
from pmos.kit.ci import ci_file
from pmos.kit.ci import write as write_ci
from pmos.kit.config import CONFIG_NAME, Config, load_config
from pmos.store.layout import MARKER, TEMP_PREFIX, Store, marker_text
from pmos.store.registry import LEDGER_KINDS

#: Files and folders ``pmos init`` copies from the bundled kit (existing ones are kept).
KIT_TEMPLATE_PATHS: list[str] = [
    CONFIG_NAME,
    "schemas",
    "planning/evals/agent-run-eval-rubric.md",
    "scripts/pmos-log.sh",
    # What an agent in a product repository needs to find everything the skills link.
    "AGENTS.md",
    "CLAUDE.md",
    "DECISIONS.md",
    "skills",
    "planning/evals/calibration-method.md",
    "planning/evals/eval-calibration.md",  # entry-free in the repository: no inherited history
    "planning/evals/known-bad",
    "planning/research",
]


class InitReport(NamedTuple):
    root: Path
    created: list[str]
    kept: list[str]
    #: The CI file written (``--ci``), absolute; None without ``--ci``.
    ci: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"root": str(self.root), "created": self.created, "kept": self.kept, "ci": self.ci}


def init_kit(dest: str | Path, *, ci: str | None = None) -> InitReport:
    """Create (or complete) a kit root at ``dest``; never overwrites an existing file.

    Everything is checked before anything is written: an existing pmos.yaml must
    be valid, and every ledger it names must resolve to its own plain folder
    inside ``dest``. Each ledger folder gets its marker (and a ``.gitignore``
    for crash remnants), so it exists in git before its first record. With
    ``ci`` (github, gitlab), the merge gate's CI job is written into the
    repository the kit is in (:mod:`pmos.kit.ci`), which must not have that file.
    """
    if not str(dest).strip():
        raise BadInput("the kit root folder is an empty path")
    dest = Path(dest)
    if dest.exists() and not dest.is_dir():
        raise BadInput(f"{dest} exists and is not a folder")
    source = kit_source()
    if dest.resolve() == source.resolve():
        raise BadInput(f"{dest} is the bundled kit itself")
    existing = dest / CONFIG_NAME
    config = load_config(existing if existing.is_file() else source / CONFIG_NAME)
    ledgers = _ledger_targets(dest, config)
    ci_job = None if ci is None else ci_file(dest, ci, __version__)
    report = InitReport(dest.resolve(), [], [], None if ci_job is None else str(ci_job.path))
    try:
        dest.mkdir(parents=True, exist_ok=True)
        for src, rel_file in _template_files(source):
            _create(dest / rel_file, rel_file, report, lambda t, s=src: shutil.copy2(s, t))
        for kind, rel_folder, folder in ledgers:
            for name, data in ((MARKER, marker_text(kind)), (".gitignore", LEDGER_GITIGNORE)):
                _create(folder / name, f"{rel_folder}/{name}", report, _writer(data))
        if ci_job is not None:
            write_ci(ci_job)
    except FileExistsError as exc:
        raise BadInput(f"{exc.filename} appeared while pmos init ran; it was kept") from None
    except OSError as exc:
        raise BadInput(
            f"cannot create the kit at {dest}: {exc.strerror} ({exc.filename})"
        ) from None
    return report


_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL
#: Crash remnants of writers (see pmos.store.files) never belong in git.
LEDGER_GITIGNORE = f"{TEMP_PREFIX}*\n".encode()


def _writer(data: bytes):
    def make(target: Path) -> None:
        fd = os.open(target, _NEW_FILE, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    return make


def _template_files(source: Path) -> list[tuple[Path, str]]:
    files = []
    for rel in KIT_TEMPLATE_PATHS:
        origin = source / rel
        found = sorted(p for p in origin.rglob("*") if p.is_file()) if origin.is_dir() else [origin]
        files += [(src, src.relative_to(source).as_posix()) for src in found]
    return files


def _ledger_targets(dest: Path, config: Config) -> list[tuple[str, str, Path]]:
    """``(kind, folder as configured, folder)`` for each ledger under ``dest``, refused
    when it leaves ``dest``, passes a symlink or overlaps another kind's folder."""
    store = Store(Path(os.path.realpath(dest)), config.ledgers)
    out = []
    for kind in LEDGER_KINDS:
        try:
            out.append((kind, store.display(kind), store.folder(kind)))
        except SinkRefused as exc:
            raise ConfigError(f"{dest / CONFIG_NAME}: {exc}") from None
    return out


def _create(target: Path, rel: str, report: InitReport, make) -> None:
    if target.exists() or target.is_symlink():
        report.kept.append(rel)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    make(target)
    report.created.append(rel)


def summarise(files: list[str]) -> str:
    """``files`` (kit-relative paths) in one line: top-level files by name, folders by count.

    ``pmos init`` prints this instead of one line per file, so its output fits a
    screen and the next steps are not scrolled away.
    """
    loose: list[str] = []
    folders: dict[str, int] = {}
    for rel in files:
        top, sep, _ = rel.partition("/")
        if sep:
            folders[top] = folders.get(top, 0) + 1
        else:
            loose.append(rel)
    parts = loose + [f"{top}/ ({n})" for top, n in sorted(folders.items())]
    return ", ".join(parts)
