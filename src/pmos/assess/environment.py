"""The environment check and reviewer commands get: a minimal one.

A reviewer command is an outward channel (it sends its prompt to a model
service) that reads untrusted material; a check command runs the assessed
work's own code. Neither needs the assessor's cloud keys or tokens, so they
get only the variables a shell and a toolchain need to work, plus the names
pmos.yaml allows explicitly::

    assess:
      env_allow: [ANTHROPIC_API_KEY, "NPM_CONFIG_*"]

An entry is a variable name, or a prefix ending in ``*``. Everything else in
pmos's own environment (``AWS_SECRET_ACCESS_KEY``, ``GITHUB_TOKEN``, ...) is
left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Passed to every command: what a shell, locale handling and temp files need.
BASE_NAMES = frozenset(
    {"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TERM"}
)
#: Prefixes passed to every command (locale categories).
BASE_PREFIXES = ("LC_",)


def env_allow(config: Mapping[str, Any]) -> tuple[str, ...]:
    """pmos.yaml ``assess.env_allow`` (its shape is checked by the config schema)."""
    section = config.get("assess") or {}
    return tuple(section.get("env_allow", ()))


def _allowed(name: str, allow: tuple[str, ...]) -> bool:
    if name in BASE_NAMES or name.startswith(BASE_PREFIXES):
        return True
    for entry in allow:
        if entry.endswith("*"):
            if name.startswith(entry[:-1]):
                return True
        elif name == entry:
            return True
    return False


def command_env(environ: Mapping[str, str], allow: tuple[str, ...]) -> dict[str, str]:
    """The variables of ``environ`` a check or reviewer command may see."""
    return {k: v for k, v in environ.items() if _allowed(k, allow)}
