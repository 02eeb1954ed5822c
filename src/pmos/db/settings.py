"""A kit's calibration settings as the database keeps them.

Each sync stores the kit's pmos.yaml with every default filled in, so the
views and ``pmos metrics --db --kit K`` use the settings the kit itself uses,
and ``pmos db migrate`` stores pmos's defaults as the team's settings (for
numbers over several kits). Both are turned back into the same
:class:`~pmos.kit.Config` the file readers get, so a setting pmos adds later
travels with no change here.
"""

from __future__ import annotations

from typing import Any

from pmos.assets import kit_source
from pmos.gate.rubric import load_rubric
from pmos.kit import Config

#: Config fields that are not settings of the numbers.
_NOT_SETTINGS = ("ledgers", "raw")


def settings_of(config: Config) -> dict[str, Any]:
    """``config`` as a JSON object: pmos.yaml's keys (ledgers left out), defaults filled in."""
    resolved = {name: getattr(config, name) for name in Config._fields if name not in _NOT_SETTINGS}
    raw = {key: value for key, value in config.raw.items() if key != "ledgers"}
    return {**raw, **{key: _plain(value) for key, value in resolved.items()}}


def default_settings() -> dict[str, Any]:
    """pmos's defaults, as a kit without any setting in pmos.yaml would have them
    (with the bundled default rubric's pass threshold)."""
    config = Config(ledgers={})
    settings = settings_of(config)
    settings["rubric_threshold"] = load_rubric(kit_source(), config.default_rubric).threshold
    return settings


def config_from(settings: dict[str, Any]) -> Config:
    """The :class:`Config` stored settings stand for (a missing key takes its default)."""
    known = {
        name: settings[name]
        for name in Config._fields
        if name in settings and name not in _NOT_SETTINGS
    }
    return Config(ledgers={}, raw=settings, **known)


def _plain(value: Any) -> Any:
    if isinstance(value, dict | list | str | int | float | bool) or value is None:
        return value
    return dict(value) if hasattr(value, "items") else value
