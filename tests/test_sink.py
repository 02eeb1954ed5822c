"""A writer writes only to the configured ledger of its own kind.

Attacks: a --ledger target that names another ledger through '..', a symlink
or a hard link; and a pmos.yaml whose ledger paths do the same.
"""

from __future__ import annotations

import json
import os

import pytest

from conftest import REGISTER_R, good_verdict, ledger_bytes, write_json


@pytest.fixture
def verdict_file(tmp_path):
    return write_json(tmp_path / "v.json", good_verdict())


def record(cli, verdict_file, *extra: str):
    return cli("eval", "record", "--file", str(verdict_file), *extra)


def test_own_ledger_named_any_honest_way_is_accepted(cli, kit_root, verdict_file):
    assert record(cli, verdict_file, "--ledger", "state/evals.jsonl").exit_code == 0
    assert record(cli, verdict_file, "--ledger", "state/../state/evals.jsonl").exit_code == 0
    absolute = str(kit_root / "state/evals.jsonl")
    assert record(cli, verdict_file, "--ledger", absolute).exit_code == 0


@pytest.mark.parametrize(
    "target",
    [
        "state/acceptances.jsonl",
        "state/../state/acceptances.jsonl",
        "/tmp/evals.jsonl",
        "state/evals.jsonl.bak",
    ],
)
def test_other_targets_are_refused(cli, kit_root, verdict_file, target):
    before = ledger_bytes(kit_root)
    result = record(cli, verdict_file, "--ledger", target)
    assert result.exit_code == 2
    assert "refusing" in result.stderr
    assert ledger_bytes(kit_root) == before


def test_symlink_target_is_refused(cli, kit_root, verdict_file):
    (kit_root / "state/link.jsonl").symlink_to(kit_root / "state/acceptances.jsonl")
    (kit_root / "state/self.jsonl").symlink_to(kit_root / "state/evals.jsonl")
    before = ledger_bytes(kit_root)
    for name in ("state/link.jsonl", "state/self.jsonl"):
        result = record(cli, verdict_file, "--ledger", name)
        assert result.exit_code == 2, name
    assert (kit_root / "state/acceptances.jsonl").read_bytes() == b""
    assert ledger_bytes(kit_root) == before


def test_hard_link_target_is_refused(cli, kit_root, verdict_file):
    os.link(kit_root / "state/acceptances.jsonl", kit_root / "state/hard.jsonl")
    result = record(cli, verdict_file, "--ledger", "state/hard.jsonl")
    assert result.exit_code == 2
    assert (kit_root / "state/acceptances.jsonl").read_bytes() == b""


def configure(kit_root, kind: str, path: str) -> None:
    text = (kit_root / "pmos.yaml").read_text()
    old = f"  {kind}: state/{kind}.jsonl"
    assert old in text
    (kit_root / "pmos.yaml").write_text(text.replace(old, f"  {kind}: {path}"))


@pytest.mark.parametrize(
    "path",
    [
        "state/../state/acceptances.jsonl",
        "state/acceptances.jsonl",
        "../evals.jsonl",
        "/tmp/evals.jsonl",
    ],
)
def test_config_cannot_point_a_ledger_at_another_kind_or_outside(cli, kit_root, verdict_file, path):
    configure(kit_root, "evals", path)
    before = ledger_bytes(kit_root)
    result = record(cli, verdict_file)
    assert result.exit_code == 2
    assert ledger_bytes(kit_root) == before


def test_config_symlinked_ledger_is_refused(cli, kit_root, verdict_file):
    os.remove(kit_root / "state/evals.jsonl")
    (kit_root / "state/evals.jsonl").symlink_to(kit_root / "state/acceptances.jsonl")
    result = record(cli, verdict_file)
    assert result.exit_code == 2 and "symlink" in result.stderr
    assert (kit_root / "state/acceptances.jsonl").read_bytes() == b""


def test_config_symlinked_state_folder_is_refused(cli, kit_root, verdict_file, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    (kit_root / "state").rename(elsewhere)
    (kit_root / "state").symlink_to(elsewhere)
    result = record(cli, verdict_file)
    assert result.exit_code == 2 and "symlink" in result.stderr


def test_config_hard_linked_ledger_is_refused(cli, kit_root, verdict_file):
    os.remove(kit_root / "state/evals.jsonl")
    os.link(kit_root / "state/acceptances.jsonl", kit_root / "state/evals.jsonl")
    result = record(cli, verdict_file)
    assert result.exit_code == 2
    assert "hard link" in result.stderr or "same file" in result.stderr
    assert (kit_root / "state/acceptances.jsonl").read_bytes() == b""


def test_every_writer_checks_its_target(cli, kit_root):
    before = ledger_bytes(kit_root)
    result = cli(
        "accept",
        "r",
        "--label",
        "pass",
        "--by",
        "pm",
        "--allow-unknown-run",
        "--ledger",
        "state/evals.jsonl",
    )
    assert result.exit_code == 2
    result = cli(
        *REGISTER_R,
        "--ledger",
        "state/acceptances.jsonl",
    )
    assert result.exit_code == 2
    result = cli("eval", "log", "r", "i", "SKIPPED", "why", "--ledger", "state/acceptances.jsonl")
    assert result.exit_code == 2
    assert ledger_bytes(kit_root) == before
    ok = cli(
        "accept",
        "r",
        "--label",
        "pass",
        "--by",
        "pm",
        "--allow-unknown-run",
        "--ledger",
        "state/acceptances.jsonl",
        "--json",
    )
    assert ok.exit_code == 0 and json.loads(ok.stdout)["label"] == "pass"
