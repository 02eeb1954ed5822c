"""The board's optional dependencies, checked before anything is read or written.

matplotlib draws the charts and Jinja2 lays out and escapes the page; neither
is needed by the rest of pmos, so they live in the ``board`` extra and a kit
without them says how to install them instead of failing half-way.
"""

from __future__ import annotations

import importlib

from pmos.errors import BadInput

#: The modules the board imports, and the PyPI distribution that provides each.
REQUIRED = (("matplotlib", "matplotlib"), ("jinja2", "Jinja2"))
INSTALL_HINT = "pip install 'pmos[board]'"


class BoardExtraMissing(BadInput):
    """The ``board`` extra is not installed; exit 2 with the command that fixes it."""


def require_extra() -> None:
    """Import every module of the ``board`` extra, or say which are missing and how to fix it."""
    missing = []
    for module, distribution in REQUIRED:
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(distribution)
    if missing:
        raise BoardExtraMissing(
            f"pmos board needs the optional 'board' extra ({', '.join(missing)} "
            f"not installed); install it with: {INSTALL_HINT}"
        )
