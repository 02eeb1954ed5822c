"""Issue 25.7: one write or none. A writer that exits 2 leaves the kit byte for byte
as it was, whatever its side files are: a label and its override entry are stored
both or neither, and a ledger folder that is symlinked, outside the kit or not a
folder refuses the record before anything is written."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import judged_pass

OVERRIDES = Path("planning/evals/overrides")


def tree(*roots: Path) -> dict[str, object]:
    """Every file, folder and symlink under ``roots``: kind and content."""
    out: dict[str, object] = {}
    for root in roots:
        if not root.exists() and not root.is_symlink():
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            for name in dirnames + filenames:
                path = Path(dirpath) / name
                if path.is_symlink():
                    out[str(path)] = ("link", os.readlink(path))
                elif path.is_dir():
                    out[str(path)] = ("dir",)
                else:
                    out[str(path)] = ("file", path.read_bytes())
    return out


def override(cli, run: str = "r1"):
    return cli("accept", run, "--label", "fail", "--by", "ana", "--note", "missed the 404")


def test_an_override_stores_the_label_and_its_entry(cli, kit_root):
    judged_pass(cli)
    result = override(cli)
    assert result.exit_code == 0, result.output
    [entry] = list((kit_root / OVERRIDES).glob("*.yaml"))
    assert "r1" in entry.name
    assert not [p for p in (kit_root / OVERRIDES).iterdir() if p.name.startswith(".")]
    assert len(json.loads(cli("ledger", "show", "acceptances", "--json").stdout)) == 1


def _symlink_inside(kit_root: Path, outside: Path) -> None:
    (kit_root / "elsewhere").mkdir()
    (kit_root / OVERRIDES).symlink_to(kit_root / "elsewhere", target_is_directory=True)


def _symlink_outside(kit_root: Path, outside: Path) -> None:
    outside.mkdir()
    (kit_root / OVERRIDES).symlink_to(outside, target_is_directory=True)


def _configured_outside(kit_root: Path, outside: Path) -> None:
    outside.mkdir()
    config = kit_root / "pmos.yaml"
    config.write_text(
        config.read_text().replace(
            "override_dir: planning/evals/overrides", f"override_dir: ../{outside.name}"
        )
    )


def _a_file_in_the_way(kit_root: Path, outside: Path) -> None:
    (kit_root / OVERRIDES).write_text("not a folder\n")


def _parent_is_a_file(kit_root: Path, outside: Path) -> None:
    config = kit_root / "pmos.yaml"
    (kit_root / "blocked").write_text("a file where a folder should be\n")
    config.write_text(
        config.read_text().replace(
            "override_dir: planning/evals/overrides", "override_dir: blocked/overrides"
        )
    )


def _malformed_log(kit_root: Path, outside: Path) -> None:
    log = kit_root / "planning/evals/exemplars.yaml"
    log.write_text(log.read_text() + "\n- a case outside the entries list\n")


@pytest.mark.parametrize(
    "arrange",
    [
        _symlink_inside,
        _symlink_outside,
        _configured_outside,
        _a_file_in_the_way,
        _parent_is_a_file,
        _malformed_log,
    ],
)
def test_a_label_whose_override_cannot_be_logged_is_refused_and_nothing_is_written(
    cli, kit_root, tmp_path, arrange
):
    """The reproduction: accept exited 2 after storing the label when the override
    folder was a symlink or pointed outside the kit, and two retries stored two."""
    judged_pass(cli)
    if (kit_root / OVERRIDES).exists():
        shutil.rmtree(kit_root / OVERRIDES)
    outside = tmp_path / "outside"
    arrange(kit_root, outside)
    before = tree(kit_root, outside)
    for _ in range(3):  # retries store nothing either
        result = override(cli)
        assert result.exit_code == 2, result.output
        assert "override" in result.stderr or "exemplar log" in result.stderr
        assert tree(kit_root, outside) == before
    assert json.loads(cli("ledger", "show", "acceptances", "--json").stdout) == []


def test_a_label_that_is_refused_for_another_reason_leaves_no_override_behind(
    cli, kit_root, tmp_path
):
    """A label refused after its override entry was prepared (here: unsigned where
    signatures are required) takes the prepared entry and any folder made for it away."""
    judged_pass(cli)
    if (kit_root / OVERRIDES).exists():
        shutil.rmtree(kit_root / OVERRIDES)
    (kit_root / "allowed_signers").write_text("")
    with (kit_root / "pmos.yaml").open("a") as config:
        config.write("signing:\n  allowed_signers: allowed_signers\n  required: true\n")
    before = tree(kit_root)
    result = override(cli)
    assert result.exit_code == 2 and "label-signature" in result.stderr
    assert tree(kit_root) == before


@pytest.mark.parametrize("kind", ["runs", "evals", "acceptances"])
@pytest.mark.parametrize("how", ["symlink-inside", "symlink-outside", "file"])
def test_every_writer_refuses_a_ledger_folder_it_must_not_write(cli, kit_root, tmp_path, kind, how):
    judged_pass(cli, "r0")
    assert cli("accept", "r0", "--label", "pass", "--by", "ana").exit_code == 0
    folder = kit_root / "state" / kind
    outside = tmp_path / "outside"
    if how == "file":
        shutil.rmtree(folder)
        folder.write_text("not a folder\n")
    else:
        target = kit_root / "moved" if how == "symlink-inside" else outside
        shutil.move(str(folder), str(target))
        folder.symlink_to(target, target_is_directory=True)
    before = tree(kit_root, outside)
    writes = {
        "runs": (
            "run",
            "register",
            "--run-id",
            "r9",
            "--initiative-id",
            "i1",
            "--builder-model",
            "m",
        ),
        "evals": (
            "eval",
            "log",
            "r0",
            "i1",
            "0.9",
            "PASS",
            "planning/evals/agent-run-eval-rubric.md",
            "gpt-5",
            "--spec",
            "pass",
            "--standards",
            "pass",
            "--allow-unknown-run",
        ),
        "acceptances": ("accept", "r0", "--label", "fail", "--by", "ana", "--note", "no"),
    }
    result = cli(*writes[kind])
    assert result.exit_code == 2, result.output
    assert tree(kit_root, outside) == before
