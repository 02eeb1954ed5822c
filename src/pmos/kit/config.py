"""pmos.yaml: reading and checking a kit's configuration.

The file is validated against ``schemas/config.schema.json`` and the defaults
are filled in here, once, so every other module reads a complete
:class:`Config` and never looks at the YAML itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from pmos import schemas
from pmos.errors import ConfigError
from pmos.store.registry import LEDGER_KINDS
from pmos.timestamps import day_text, rfc3339
from pmos.yamlio import load_yaml

CONFIG_NAME = "pmos.yaml"

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
    #: Calibration needs at least this many pairs of each PM label class.
    min_per_class: int = 10
    #: The lower end of TNR's 95% interval must reach this (0 turns the check off).
    min_tnr: float = 0.50
    #: sequential (default): the interval rule and kappa's alpha-spending bound,
    #: safe under repeated looks; interval: kappa's lower 95% bound must reach the
    #: threshold (safe for one reading only); point: the rule on kappa's point estimate.
    calibration_rule: str = "sequential"
    #: ``calibration.model``: the evaluator model whose own pairs decide the headline
    #: ``calibrated`` (None: the model of the latest judged verdict).
    calibration_model: str | None = None
    #: ``calibration.min_blind_labels``: blind pairs the current model needs.
    min_blind_labels: int = 0
    #: ``calibration.plan_pass_side_rate``: the labelling plan's share of pass-side
    #: runs asked for (1: no plan; :mod:`pmos.gate.plan`).
    plan_pass_side_rate: float = 1.0
    #: ``calibration.decision_probability``: labels_needed's chance of a decision.
    decision_probability: float = 0.8
    model_families: Mapping[str, list[str]] = DEFAULT_FAMILIES
    #: The whole parsed file, for sections that belong to other modules.
    raw: Mapping[str, Any] = {}


def load_config(path: Path) -> Config:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not UTF-8 text: {exc}") from None
    return parse_config(text, path)


def parse_config(text: str, path: Path | str) -> Config:
    """pmos.yaml's ``text`` checked and with defaults filled in; ``path`` names where
    it came from in errors (a file, or a committed revision such as ``main:pmos.yaml``)."""
    try:
        data = load_yaml(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must be a YAML mapping")
    _dates_as_text(data)
    problems = schemas.validate("config", data)
    if problems:
        lines = "\n".join(f"  - {p}" for p in problems)
        raise ConfigError(f"{path} is not a valid pmos config:\n{lines}")
    unknown = sorted(str(k) for k in data["ledgers"] if k not in LEDGER_KINDS)
    if unknown:
        raise ConfigError(
            f"{path}: unknown ledger kind(s) {', '.join(unknown)}; known: {', '.join(LEDGER_KINDS)}"
        )
    for key in ("pass_fraction_window", "min_pairs", "min_per_class"):
        if key in data and type(data[key]) is not int:
            raise ConfigError(f"{path}: {key} must be a whole number, got {data[key]!r}")
    ledgers = {k.name: k.default_path for k in LEDGER_KINDS.values()}
    ledgers.update(data["ledgers"])
    known = {k: data[k] for k in Config._fields if k in data and k not in ("ledgers", "raw")}
    section = data.get("calibration") or {}
    if "model" in section:
        known["calibration_model"] = section["model"]
    if "min_blind_labels" in section:
        if type(section["min_blind_labels"]) is not int:
            raise ConfigError(f"{path}: calibration.min_blind_labels must be a whole number")
        known["min_blind_labels"] = section["min_blind_labels"]
    for key in ("plan_pass_side_rate", "decision_probability"):
        if key in section:
            known[key] = float(section[key])
    return Config(ledgers=ledgers, raw=data, **known)


def _dates_as_text(data: dict[str, Any]) -> None:
    """YAML reads an unquoted ``required_since: 2026-12-01`` as a date: keep it as the
    text the schema describes, so it is checked and read one way quoted or not."""
    section = data.get("signing")
    if isinstance(section, dict):
        since = section.get("required_since")
        if isinstance(since, datetime):  # YAML: no offset is UTC, as rfc3339 takes it
            section["required_since"] = rfc3339(since)
        elif isinstance(since, date):
            section["required_since"] = day_text(since)
