"""``pmos init``: create a kit root, or complete one, without overwriting anything."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

from pmos import __version__
from pmos.assets import kit_source
from pmos.atomic import replace_file
from pmos.errors import BadInput, ConfigError, SinkRefused
from pmos.kit.ci import ci_file
from pmos.kit.ci import write as write_ci
from pmos.kit.config import CONFIG_NAME, Config, load_config
from pmos.store.layout import MARKER, TEMP_PREFIX, Store, marker_text
from pmos.store.registry import LEDGER_KINDS
from pmos.yamlio import load_yaml

#: Files and folders ``pmos init`` copies from the bundled kit (existing ones are kept).
KIT_TEMPLATE_PATHS: list[str] = [
    CONFIG_NAME,
    "schemas",
    "planning/evals/agent-run-eval-rubric.md",
    "scripts/pmos-log.sh",
    # What an agent in a product repository needs to find everything the skills link.
    # The kit's AGENTS.md speaks to agents in the product (shipped as AGENTS.md,
    # SHIPPED_AS); the repository's own speaks to pmos's developers, and
    # DECISIONS.md stays in the pmos repository: no shipped document links it.
    "kit/AGENTS.md",
    "CLAUDE.md",
    "skills",
    "planning/evals/calibration-method.md",
    "planning/evals/exemplars.yaml",  # entry-free in the repository: no inherited history
    "planning/evals/known-bad",
    "planning/research",
]

#: Template files shipped under another name: repository path -> path in the kit.
SHIPPED_AS: dict[str, str] = {"kit/AGENTS.md": "AGENTS.md"}


#: The project-scoped MCP configuration Claude Code reads (Cursor's
#: ``.cursor/mcp.json`` has the same shape; VS Code's ``.vscode/mcp.json`` names
#: its map ``servers``): docs/how-to/use-pmos-over-mcp.md shows each.
MCP_CONFIG = ".mcp.json"
MCP_SERVER_NAME = "pmos"


class InitReport(NamedTuple):
    root: Path
    created: list[str]
    kept: list[str]
    mcp_config: Path | None = None
    #: The CI file written (``--ci``), absolute; None without ``--ci``.
    ci: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "root": str(self.root),
            "created": self.created,
            "kept": self.kept,
            "mcp_config": str(self.mcp_config) if self.mcp_config else None,
            "ci": self.ci,
        }


def enclosing_kit(dest: Path) -> Path | None:
    """The kit root that ``dest`` lies inside (not ``dest`` itself), or None."""
    for folder in dest.resolve().parents:
        if (folder / CONFIG_NAME).is_file():
            return folder
    return None


def mcp_config(project: Path, kit_root: Path) -> dict[str, Any]:
    """The ``.mcp.json`` of ``project``: one stdio server that runs ``pmos mcp`` on
    the kit. The kit is named relative to the project, where hosts start a
    project's servers, so the committed file holds on every clone."""
    rel = os.path.relpath(os.path.realpath(kit_root), os.path.realpath(project))
    args = ["--root", Path(rel).as_posix(), "mcp"]
    return {"mcpServers": {MCP_SERVER_NAME: {"command": "pmos", "args": args}}}


def _free_mcp_config(project: Path) -> Path:
    target = project / MCP_CONFIG
    if target.exists() or target.is_symlink():
        raise BadInput(
            f"{target} exists; pmos init never overwrites it: add the {MCP_SERVER_NAME!r} "
            "server to it by hand (docs/how-to/use-pmos-over-mcp.md)"
        )
    return target


def _write_new(target: Path, data: bytes) -> None:
    """Create ``target`` with ``data``, fsynced; never over an existing file."""
    fd = os.open(target, _NEW_FILE | getattr(os, "O_NOFOLLOW", 0), 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        target.unlink(missing_ok=True)
        raise
    os.close(fd)


def init_kit(
    dest: str | Path, *, mcp_project: str | Path | None = None, ci: str | None = None
) -> InitReport:
    """Create (or complete) a kit root at ``dest``; never overwrites an existing file.

    Everything is checked before anything is written: an existing pmos.yaml must
    be valid, and every ledger it names must resolve to its own plain folder
    inside ``dest``. Each ledger folder gets its marker (and a ``.gitignore``
    for crash remnants), so it exists in git before its first record.

    ``mcp_project``: also write that folder's ``.mcp.json`` (:func:`mcp_config`),
    refused before anything is written when the file exists.
    With ``ci`` (github, gitlab), the merge gate's CI job is written into the
    repository the kit is in (:mod:`pmos.kit.ci`), which must not have that file.
    """
    if not str(dest).strip():
        raise BadInput("the kit root folder is an empty path")
    dest = Path(dest)
    if dest.exists() and not dest.is_dir():
        raise BadInput(f"{dest} exists and is not a folder")
    mcp_target = _free_mcp_config(Path(mcp_project)) if mcp_project is not None else None
    source = kit_source()
    if dest.resolve() == source.resolve():
        raise BadInput(f"{dest} is the bundled kit itself")
    enclosing = enclosing_kit(dest)
    if enclosing is not None:
        raise BadInput(
            f"{dest} is inside the kit {enclosing}: a kit in another kit's folders would "
            "mix its files with that kit's ledgers and policy; choose a folder outside it"
        )
    existing = dest / CONFIG_NAME
    config = load_config(existing if existing.is_file() else source / CONFIG_NAME)
    ledgers = _ledger_targets(dest, config)
    ci_job = None if ci is None else ci_file(dest, ci, __version__)
    report = InitReport(dest.resolve(), [], [], ci=None if ci_job is None else str(ci_job.path))
    try:
        dest.mkdir(parents=True, exist_ok=True)
        for src, rel_file in _template_files(source):
            make: Callable[[Path], object] = partial(shutil.copy2, src)
            if rel_file == CONFIG_NAME:
                make = _writer(with_kit_id(src.read_text(encoding="utf-8")).encode("utf-8"))
            _create(dest / rel_file, rel_file, report, make)
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
    if mcp_target is None:
        return report
    servers = mcp_config(mcp_target.parent, report.root)
    try:
        _write_new(mcp_target, (json.dumps(servers, indent=2) + "\n").encode("utf-8"))
    except OSError as exc:
        raise BadInput(f"cannot write {mcp_target}: {exc.strerror}") from None
    return report._replace(mcp_config=mcp_target.resolve())


def new_kit_id() -> str:
    """A fresh kit identity: random, so two kits never share one by chance."""
    return f"kit-{uuid.uuid4().hex}"


KIT_ID_COMMENT = (
    "# The kit's identity: a signed PM label names it, so a label copied to another\n"
    "# kit does not verify. Written once by 'pmos init'; never change or copy it.\n"
)


def with_kit_id(text: str, kit_id: str | None = None) -> str:
    """pmos.yaml's ``text`` with a ``kit_id`` line (a new id unless given): after the
    ``schema_version`` line, else at the end."""
    line = f"{KIT_ID_COMMENT}kit_id: {kit_id or new_kit_id()}\n"
    lines = text.splitlines(keepends=True)
    for n, existing in enumerate(lines):
        if existing.startswith("schema_version:"):
            return "".join(lines[: n + 1]) + "\n" + line + "".join(lines[n + 1 :])
    return text + ("" if text.endswith("\n") or not text else "\n") + "\n" + line


def create_kit_id(root: Path) -> str:
    """Give a kit made before kits had an identity its ``kit_id`` (``pmos kit-id
    --create``), written into its pmos.yaml whole or not at all; refused when it
    has one already (an identity never changes)."""
    path = root / CONFIG_NAME
    config = load_config(path)
    if config.raw.get("kit_id"):
        raise BadInput(f"{path} has a kit_id already ({config.raw['kit_id']}); it never changes")
    text = path.read_text(encoding="utf-8")
    kit_id = new_kit_id()
    updated = with_kit_id(text, kit_id)
    reread = load_yaml(updated)
    if not isinstance(reread, dict) or reread.get("kit_id") != kit_id:
        raise BadInput(f"{path} is not laid out so a kit_id line can be added; add it by hand")
    try:
        replace_file(path, updated.encode("utf-8"))
    except OSError as exc:
        raise BadInput(f"cannot write {path}: {exc.strerror or exc}") from None
    return kit_id


_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL
#: Crash remnants of writers (see pmos.store.files) never belong in git.
LEDGER_GITIGNORE = f"{TEMP_PREFIX}*\n".encode()


def _writer(data: bytes) -> Callable[[Path], None]:
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
        for src in found:
            rel_file = src.relative_to(source).as_posix()
            files.append((src, SHIPPED_AS.get(rel_file, rel_file)))
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


def _create(target: Path, rel: str, report: InitReport, make: Callable[[Path], object]) -> None:
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
