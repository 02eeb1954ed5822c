"""Where the kit's bundled files (schemas, default rubric, skills, scripts) live.

In a wheel they are packaged under ``pmos/_kit``; in a source checkout or an
editable install they are the repository's own top-level folders. Resolving the
location once here keeps every other module ignorant of how pmos was installed.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from pmos.errors import PmosError


@cache
def kit_source() -> Path:
    """The folder that holds the kit's bundled ``schemas/``, ``planning/`` and friends."""
    packaged = Path(__file__).resolve().parent / "_kit"
    if (packaged / "schemas").is_dir():
        return packaged
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "schemas").is_dir() and (checkout / "pyproject.toml").is_file():
        return checkout
    raise PmosError(
        "pmos is installed without its bundled kit files (schemas/, planning/); reinstall pmos"
    )


def schema_dir() -> Path:
    return kit_source() / "schemas"
