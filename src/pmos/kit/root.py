"""The kit root: finding it and opening it.

A kit root is any folder holding ``pmos.yaml``. It is resolved once per
command, in this order: an explicit ``--root``, the ``PMOS_ROOT`` environment
variable, then the working directory and its parents (at each level both
``pmos.yaml`` and a vendored ``pmos/pmos.yaml`` are looked for). A kit's
ledgers are its :class:`~pmos.store.layout.Store`, reached as ``kit.store``.
"""

from __future__ import annotations

import os
from pathlib import Path

from pmos.errors import KitRootNotFound
from pmos.kit.config import CONFIG_NAME, Config, load_config
from pmos.store.layout import Store

ROOT_ENV = "PMOS_ROOT"


class Kit:
    """An opened kit root: its folder and its configuration.

    ``ledger_root`` (default ``root``) is where the ledger paths of ``config``
    are resolved: a kit judged under a policy materialised from a committed
    revision (``pmos sync``) reads its policy files from that copy and its
    records from the working tree.
    """

    __slots__ = ("_ledger_root", "_store", "config", "root")

    def __init__(self, root: Path, config: Config, *, ledger_root: Path | None = None) -> None:
        self.root = root
        self.config = config
        self._ledger_root = root if ledger_root is None else ledger_root
        self._store: Store | None = None

    def __repr__(self) -> str:
        return f"Kit(root={self.root!r})"

    @classmethod
    def open(cls, root: Path) -> Kit:
        return cls(root, load_config(root / CONFIG_NAME))

    def path(self, relative: str) -> Path:
        return self.root / relative

    @property
    def records_written(self) -> int:
        """How many records this kit's writers appended in this process."""
        return 0 if self._store is None else self._store.written

    @property
    def store(self) -> Store:
        """The kit's ledgers (see :mod:`pmos.store`)."""
        if self._store is None:
            self._store = Store(self._ledger_root, self.config.ledgers)
        return self._store


def find_root(explicit: str | Path | None = None, cwd: Path | None = None) -> Path:
    """Resolve the kit root (see module docstring); raises with a how-to when none is found."""
    return locate_root(explicit, cwd)[0]


#: How :func:`locate_root` found a kit: named by --root or PMOS_ROOT, or by searching
#: the working directory and its parents.
SEARCHED = "search"


def locate_root(explicit: str | Path | None = None, cwd: Path | None = None) -> tuple[Path, str]:
    """The kit root and how it was found (``--root``, ``PMOS_ROOT`` or :data:`SEARCHED`):
    a command that writes to a kit it found by searching says which one it was."""
    for source, value in (("--root", explicit), (ROOT_ENV, os.environ.get(ROOT_ENV))):
        if value:
            root = Path(value).expanduser()
            if not (root / CONFIG_NAME).is_file():
                raise KitRootNotFound(
                    f"{source} points at {root}, which has no {CONFIG_NAME}; "
                    f"create a kit there with 'pmos init {root}'"
                )
            return root.resolve(), source
    here = (cwd or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        for candidate in (folder, folder / "pmos"):
            if (candidate / CONFIG_NAME).is_file():
                return candidate, SEARCHED
    raise KitRootNotFound(
        f"no kit root found: pass --root DIR, set {ROOT_ENV}, or run inside a folder with "
        f"{CONFIG_NAME}. Create one with 'pmos init DIR'."
    )


def open_kit(explicit: str | Path | None = None) -> Kit:
    return Kit.open(find_root(explicit))
