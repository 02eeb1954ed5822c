"""A writer writes only to the configured ledger of its own kind.

A ledger is a folder (``state/evals/``); ``--ledger`` may name it, or the single
file an older kit had (``state/evals.jsonl``), and nothing else.

Attacks: a --ledger target that names another ledger through '..', a symlink
or a hard link; and a pmos.yaml whose ledger paths do the same, point into or
over another kind's folder, or at a file where a folder belongs.
"""

from __future__ import annotations

import json
import os

import pytest

import ledgerfiles
from conftest import REGISTER_R, good_verdict, ledger_bytes, write_json


@pytest.fixture
def verdict_file(tmp_path):
    return write_json(tmp_path / "v.json", good_verdict())


def record(cli, verdict_file, *extra: str):
    return cli("eval", "record", "--file", str(verdict_file), *extra)


def no_records_anywhere(kit_root) -> bool:
    return all(ledgerfiles.stored(kit_root, kind) == [] for kind in ledgerfiles.KINDS)


def test_own_ledger_named_any_honest_way_is_accepted(cli, kit_root, verdict_file):
    names = [
        "state/evals",
        "state/evals/",
        "state/../state/evals",
        str(kit_root / "state/evals"),
    ]
    for name in names:
        result = record(cli, verdict_file, "--ledger", name, "--allow-unknown-run")
        assert result.exit_code == 0, (name, result.stderr)
    assert len(ledgerfiles.stored(kit_root, "evals")) == len(names)


@pytest.mark.parametrize(
    "target",
    [
        "state/acceptances",
        "state/acceptances.jsonl",
        "state/../state/acceptances",
        "state/evals/../acceptances",
        "/tmp/evals",
        "/tmp/evals.jsonl",
        "../evals",
        "state/evals.jsonl.bak",
        "state/evals/evals.jsonl",
        "state/evals/.pmos-ledger",
        "state",
    ],
)
def test_other_targets_are_refused(cli, kit_root, verdict_file, target):
    before = ledger_bytes(kit_root)
    result = record(cli, verdict_file, "--ledger", target)
    assert result.exit_code == 2
    assert "refusing" in result.stderr
    assert ledger_bytes(kit_root) == before


@pytest.mark.parametrize(
    ("name", "points_at"),
    [
        ("state/link", "state/acceptances"),
        ("state/link.jsonl", "state/acceptances"),
        ("state/self", "state/evals"),
        ("state/self.jsonl", "state/evals.jsonl"),
    ],
)
def test_symlink_target_is_refused(cli, kit_root, verdict_file, name, points_at):
    (kit_root / name).symlink_to(kit_root / points_at)
    before = ledger_bytes(kit_root)
    result = record(cli, verdict_file, "--ledger", name)
    assert result.exit_code == 2, result.stdout
    assert "symlink" in result.stderr or "refusing" in result.stderr
    assert ledger_bytes(kit_root) == before
    assert no_records_anywhere(kit_root)


def test_hard_link_target_is_refused(cli, kit_root, verdict_file):
    # A folder cannot be hard-linked; a file in it can.
    os.link(kit_root / "state/acceptances/.pmos-ledger", kit_root / "state/marker.jsonl")
    before = ledger_bytes(kit_root)
    result = record(cli, verdict_file, "--ledger", "state/marker.jsonl")
    assert result.exit_code == 2
    assert ledger_bytes(kit_root) == before


def configure(kit_root, kind: str, path: str) -> None:
    text = (kit_root / "pmos.yaml").read_text()
    old = f"  {kind}: state/{kind}\n"
    assert old in text
    (kit_root / "pmos.yaml").write_text(text.replace(old, f"  {kind}: {path}\n"))


@pytest.mark.parametrize(
    "path",
    [
        "state/../state/acceptances",
        "state/acceptances",
        "state/acceptances.jsonl",
        "state/acceptances/evals",  # inside another kind's folder
        "state/acceptances/evals.jsonl",
        "state",  # a folder holding every other kind's folder
        "state/evals/../acceptances",
        "../evals",
        "../evals.jsonl",
        "/tmp/evals",
    ],
)
def test_config_cannot_point_a_ledger_at_another_kind_or_outside(cli, kit_root, verdict_file, path):
    configure(kit_root, "evals", path)
    before = ledger_bytes(kit_root)
    result = record(cli, verdict_file)
    assert result.exit_code == 2, result.stdout
    assert ledger_bytes(kit_root) == before
    assert not (kit_root.parent / "evals").exists()
    assert no_records_anywhere(kit_root)


def test_config_symlinked_ledger_folder_is_refused(cli, kit_root, verdict_file, tmp_path):
    ledgerfiles.folder(kit_root, "evals").joinpath(".pmos-ledger").unlink()
    ledgerfiles.folder(kit_root, "evals").joinpath(".gitignore").unlink()
    ledgerfiles.folder(kit_root, "evals").rmdir()
    (kit_root / "state/evals").symlink_to(kit_root / "state/acceptances")
    before = ledger_bytes(kit_root)
    result = record(cli, verdict_file)
    assert result.exit_code == 2 and "symlink" in result.stderr
    assert ledger_bytes(kit_root) == before
    assert ledgerfiles.stored(kit_root, "acceptances") == []
    assert cli("ledger", "show", "evals").exit_code == 2


def test_config_symlinked_state_folder_is_refused(cli, kit_root, verdict_file, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    (kit_root / "state").rename(elsewhere)
    (kit_root / "state").symlink_to(elsewhere)
    result = record(cli, verdict_file)
    assert result.exit_code == 2 and "symlink" in result.stderr
    assert sorted(p.name for p in (elsewhere / "evals").iterdir()) == [".gitignore", ".pmos-ledger"]


def test_a_ledger_folder_that_is_a_file_is_refused(cli, kit_root, verdict_file):
    folder = ledgerfiles.folder(kit_root, "evals")
    for name in (".pmos-ledger", ".gitignore"):
        (folder / name).unlink()
    folder.rmdir()
    folder.write_bytes(b"")
    before = ledger_bytes(kit_root)
    result = record(cli, verdict_file)
    assert result.exit_code == 2 and "is not a folder" in result.stderr
    assert ledger_bytes(kit_root) == before
    shown = cli("ledger", "show", "evals")
    assert shown.exit_code == 2 and "is not a folder" in shown.stderr


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
        "state/evals",
    )
    assert result.exit_code == 2
    result = cli(*REGISTER_R, "--ledger", "state/acceptances")
    assert result.exit_code == 2
    result = cli("eval", "log", "r", "i", "SKIPPED", "why", "--ledger", "state/acceptances")
    assert result.exit_code == 2
    assert ledger_bytes(kit_root) == before
    for target in ("state/acceptances", str(kit_root / "state/acceptances")):
        ok = cli(
            "accept",
            "r",
            "--label",
            "pass",
            "--by",
            "pm",
            "--allow-unknown-run",
            "--ledger",
            target,
            "--json",
        )
        assert ok.exit_code == 0 and json.loads(ok.stdout)["label"] == "pass"
    assert [r["label"] for r in ledgerfiles.stored(kit_root, "acceptances")] == ["pass", "pass"]
