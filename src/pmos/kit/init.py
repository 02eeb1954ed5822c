"""``pmos init``: create a kit root, or complete one, without overwriting anything."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, NamedTuple

from pmos.assets import kit_source
from pmos.errors import BadInput, ConfigError, SinkRefused
from pmos.kit.config import CONFIG_NAME, Config, load_config
from pmos.paths import resolve_inside
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

    def as_dict(self) -> dict[str, Any]:
        return {"root": str(self.root), "created": self.created, "kept": self.kept}


def init_kit(dest: str | Path) -> InitReport:
    """Create (or complete) a kit root at ``dest``; never overwrites an existing file.

    Everything is checked before anything is written: an existing pmos.yaml must
    be valid, and every ledger it names must resolve to its own plain file
    inside ``dest``.
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
    report = InitReport(dest.resolve(), [], [])
    try:
        dest.mkdir(parents=True, exist_ok=True)
        for src, rel_file in _template_files(source):
            _create(dest / rel_file, rel_file, report, lambda t, s=src: shutil.copy2(s, t))
        for rel_file, target in ledgers:
            _create(target, rel_file, report, lambda t: os.close(os.open(t, _NEW_FILE, 0o644)))
    except OSError as exc:
        raise BadInput(
            f"cannot create the kit at {dest}: {exc.strerror} ({exc.filename})"
        ) from None
    return report


_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL


def _template_files(source: Path) -> list[tuple[Path, str]]:
    files = []
    for rel in KIT_TEMPLATE_PATHS:
        origin = source / rel
        found = sorted(p for p in origin.rglob("*") if p.is_file()) if origin.is_dir() else [origin]
        files += [(src, src.relative_to(source).as_posix()) for src in found]
    return files


def _ledger_targets(dest: Path, config: Config) -> list[tuple[str, Path]]:
    """Each ledger's file under ``dest``, refused when it leaves ``dest``, passes a
    symlink or is shared by two kinds."""
    targets: dict[Path, str] = {}
    out = []
    for kind in LEDGER_KINDS:
        rel = config.ledgers[kind]
        try:
            target = resolve_inside(dest, rel, what=f"the {kind} ledger", for_writing=True)
        except SinkRefused as exc:
            raise ConfigError(f"{dest / CONFIG_NAME}: {exc}") from None
        if target in targets:
            raise ConfigError(
                f"{dest / CONFIG_NAME}: the {kind} and {targets[target]} ledgers are the same "
                f"file {rel!r}; each kind needs its own file"
            )
        targets[target] = kind
        out.append((rel, target))
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
