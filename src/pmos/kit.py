"""The kit root: finding it, reading its pmos.yaml, resolving its ledgers, creating one.

A kit root is any folder holding ``pmos.yaml``. It is resolved once per
command, in this order: an explicit ``--root``, the ``PMOS_ROOT`` environment
variable, then the working directory and its parents (at each level both
``pmos.yaml`` and a vendored ``pmos/pmos.yaml`` are looked for).

Ledger paths are resolved, not trusted: :meth:`Kit.ledger_path` refuses a
configured path that leaves the kit root, passes through a symlink, is a hard
link, or is the same file as another kind's ledger. That is what keeps a
verdict from being written into the acceptances ledger by a crafted path.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from pmos.assets import kit_source
from pmos.errors import BadInput, ConfigError, KitRootNotFound, SinkRefused
from pmos.paths import resolve_inside

CONFIG_NAME = "pmos.yaml"
ROOT_ENV = "PMOS_ROOT"


class LedgerKind(NamedTuple):
    """One kind of ledger: its config key, the schema of its records, its default file,
    the prefix of its record ids and the fields ``pmos ledger show`` tabulates."""

    name: str
    schema: str
    default_path: str
    id_prefix: str
    columns: tuple[str, ...] = ()


LEDGER_KINDS: dict[str, LedgerKind] = {
    k.name: k
    for k in (
        LedgerKind(
            "runs", "run", "state/runs.jsonl", "run", ("run_id", "initiative_id", "builder_model")
        ),
        LedgerKind(
            "evals",
            "verdict",
            "state/evals.jsonl",
            "ev",
            ("run_id", "verdict", "score", "evaluator_model", "flags"),
        ),
        LedgerKind(
            "acceptances",
            "acceptance",
            "state/acceptances.jsonl",
            "acc",
            ("run_id", "label", "by", "gate_verdict"),
        ),
        LedgerKind(
            "assessments",
            "assessment",
            "state/assessments.jsonl",
            "as",
            ("task_id", "run_id", "trigger", "attempt", "passed"),
        ),
        LedgerKind(
            "task-evals",
            "task-eval",
            "state/task-evals.jsonl",
            "te",
            ("task_id", "run_id", "overallScore", "band"),
        ),
        LedgerKind(
            "followups",
            "followup",
            "state/followups.jsonl",
            "fu",
            ("run_id", "title", "severity", "state", "suppressedReason"),
        ),
        LedgerKind(
            "tasks", "task", "state/tasks.jsonl", "tk", ("task_id", "event", "state", "title")
        ),
    )
}

DEFAULT_FAMILIES: dict[str, list[str]] = {
    "anthropic": ["claude", "anthropic"],
    "openai": ["gpt", "chatgpt", "openai", "o1", "o3", "o4"],
    "google": ["gemini", "google"],
    "meta": ["llama", "meta"],
    "mistral": ["mistral", "mixtral", "codestral"],
    "qwen": ["qwen"],
    "deepseek": ["deepseek"],
}


class Config(NamedTuple):
    """pmos.yaml, validated, with defaults filled in. Treat it as read-only."""

    ledgers: dict[str, str]
    rubric_dir: str = "planning/evals"
    default_rubric: str = "planning/evals/agent-run-eval-rubric.md"
    kappa_threshold: float = 0.60
    pass_fraction_window: int = 20
    goodhart_alarm: float = 0.90
    min_pairs: int = 20
    model_families: Mapping[str, list[str]] = DEFAULT_FAMILIES
    #: The whole parsed file, for sections that belong to other modules.
    raw: Mapping[str, Any] = {}


def load_config(path: Path) -> Config:
    import yaml

    from pmos import schemas
    from pmos.yamlio import load_yaml

    try:
        data = load_yaml(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not UTF-8 text: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must be a YAML mapping")
    problems = schemas.validate("config", data)
    if problems:
        lines = "\n".join(f"  - {p}" for p in problems)
        raise ConfigError(f"{path} is not a valid pmos config:\n{lines}")
    unknown = sorted(str(k) for k in data["ledgers"] if k not in LEDGER_KINDS)
    if unknown:
        raise ConfigError(
            f"{path}: unknown ledger kind(s) {', '.join(unknown)}; known: {', '.join(LEDGER_KINDS)}"
        )
    for key in ("pass_fraction_window", "min_pairs"):
        if key in data and type(data[key]) is not int:
            raise ConfigError(f"{path}: {key} must be a whole number, got {data[key]!r}")
    ledgers = {k.name: k.default_path for k in LEDGER_KINDS.values()}
    ledgers.update(data["ledgers"])
    known = {k: data[k] for k in Config._fields if k in data and k not in ("ledgers", "raw")}
    return Config(ledgers=ledgers, raw=data, **known)


class Kit:
    """An opened kit root: its folder and its configuration."""

    __slots__ = ("config", "root")

    def __init__(self, root: Path, config: Config) -> None:
        self.root = root
        self.config = config

    def __repr__(self) -> str:
        return f"Kit(root={self.root!r})"

    @classmethod
    def open(cls, root: Path) -> Kit:
        return cls(root, load_config(root / CONFIG_NAME))

    def path(self, relative: str) -> Path:
        return self.root / relative

    def ledger_path(self, kind: str) -> Path:
        """The configured ledger file of ``kind``, after every sink check."""
        if kind not in LEDGER_KINDS:
            raise BadInput(f"unknown ledger kind {kind!r}; known: {', '.join(LEDGER_KINDS)}")
        candidate = self._resolve_inside(kind, self.config.ledgers[kind])
        for other in LEDGER_KINDS:
            if other == kind:
                continue
            other_path = self._resolve_inside(other, self.config.ledgers[other])
            if other_path == candidate or _same_file(other_path, candidate):
                raise SinkRefused(
                    f"the {kind} ledger is configured as the same file as the {other} ledger "
                    f"({candidate}); each kind needs its own file"
                )
        try:
            st = candidate.lstat()
        except FileNotFoundError:
            if not candidate.parent.is_dir():
                raise SinkRefused(
                    f"{candidate.parent} does not exist; create the kit with 'pmos init'"
                ) from None
            return candidate
        if not stat.S_ISREG(st.st_mode):
            raise SinkRefused(f"{candidate} is not a regular file")
        if st.st_nlink > 1:
            raise SinkRefused(
                f"{candidate} has {st.st_nlink} hard links; a ledger must be reachable "
                "by one name only"
            )
        return candidate

    def check_target(self, kind: str, target: str | Path) -> Path:
        """Accept ``target`` only if it is the very file configured for ``kind``."""
        ledger = self.ledger_path(kind)
        given = Path(target)
        if not given.is_absolute():
            given = Path.cwd() / given
        if os.path.realpath(given) != str(ledger) or (
            given.exists() and not _same_file(given, ledger)
        ):
            raise SinkRefused(
                f"refusing to write a {kind} record to {target}: the {kind} ledger of this "
                f"kit is {ledger}"
            )
        if given.is_symlink():
            raise SinkRefused(f"refusing to write through the symlink {target}")
        return ledger

    def _resolve_inside(self, kind: str, configured: str) -> Path:
        return resolve_inside(self.root, configured, what=f"the {kind} ledger", for_writing=True)


def _same_file(a: Path, b: Path) -> bool:
    try:
        sa, sb = a.stat(), b.stat()
    except FileNotFoundError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def find_root(explicit: str | Path | None = None, cwd: Path | None = None) -> Path:
    """Resolve the kit root (see module docstring); raises with a how-to when none is found."""
    for source, value in (("--root", explicit), (ROOT_ENV, os.environ.get(ROOT_ENV))):
        if value:
            root = Path(value).expanduser()
            if not (root / CONFIG_NAME).is_file():
                raise KitRootNotFound(
                    f"{source} points at {root}, which has no {CONFIG_NAME}; "
                    f"create a kit there with 'pmos init {root}'"
                )
            return root.resolve()
    here = (cwd or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        for candidate in (folder, folder / "pmos"):
            if (candidate / CONFIG_NAME).is_file():
                return candidate
    raise KitRootNotFound(
        f"no kit root found: pass --root DIR, set {ROOT_ENV}, or run inside a folder with "
        f"{CONFIG_NAME}. Create one with 'pmos init DIR'."
    )


def open_kit(explicit: str | Path | None = None) -> Kit:
    return Kit.open(find_root(explicit))


# ---------------------------------------------------------------- init

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
