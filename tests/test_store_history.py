"""Append-only against history: `ledger verify --since REV`, `--checkpoint FILE`, packing.

Deleting a recorded record, editing one and recomputing every digest and name,
or dropping a pack are each reported (exit 1, the record named); adding
records, packing and re-packing are not.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import REGISTER_R, Cli
from ledgerfiles import forge, pack_files, pack_of, record_files, run_record, stored
from pmos.store.digest import record_digest
from test_store_git import git


@pytest.fixture
def repo(kit_root: Path) -> Path:
    """The throw-away kit, committed to a git repository of its own."""
    git(kit_root, "init", "-q", "-b", "main")
    git(kit_root, "add", "-A")
    git(kit_root, "commit", "-q", "-m", "kit")
    return kit_root


def commit(repo: Path, message: str = "records") -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD").stdout.strip()


def record_some(cli: Cli, runs: list[str]) -> None:
    for run in runs:
        assert cli(*REGISTER_R[:3], run, *REGISTER_R[4:]).exit_code == 0
        assert cli("accept", run, "--label", "pass", "--by", "pm").exit_code == 0


def verify_since(cli: Cli, reference: str):
    result = cli("ledger", "verify", "--since", reference, "--json")
    return result.exit_code, json.loads(result.stdout)


def test_history_that_only_grew_passes(cli, repo):
    record_some(cli, ["r1", "r2"])
    base = commit(repo)
    record_some(cli, ["r3"])
    assert cli("ledger", "pack").exit_code == 0
    commit(repo, "pack")
    record_some(cli, ["r4"])
    assert cli("ledger", "pack", "runs").exit_code == 0  # re-pack: folds into a new pack
    commit(repo, "re-pack")
    code, report = verify_since(cli, base)
    assert code == 0, report
    assert report["since"]["missing"] == [] and report["since"]["reference_kind"] == "git"
    human = cli("ledger", "verify", "--since", base)
    assert "every record is still there, unchanged" in human.stdout


def test_a_deleted_record_is_named(cli, repo):
    record_some(cli, ["r1", "r2"])
    base = commit(repo)
    victim = record_files(repo, "acceptances")[0]
    label = stored(repo, "acceptances")[0]
    victim.unlink()
    code, report = verify_since(cli, base)
    assert code == 1
    [gone] = report["since"]["missing"]
    assert gone["kind"] == "acceptances" and gone["record_id"] == label["record_id"]
    assert gone["changed"] is False


def test_an_edit_with_every_digest_recomputed_is_named(cli, repo):
    """The forger flips a fail label to pass and recomputes its digest and file name:
    every file checks out, and only history shows it."""
    assert cli(*REGISTER_R).exit_code == 0
    assert cli("accept", "r", "--label", "fail", "--by", "pm").exit_code == 0
    base = commit(repo)
    [path] = record_files(repo, "acceptances")
    [label] = stored(repo, "acceptances")
    path.unlink()
    forge(repo, "acceptances", {**label, "label": "pass"})
    assert cli("ledger", "verify").exit_code == 0  # the files alone look fine
    code, report = verify_since(cli, base)
    assert code == 1
    [changed] = report["since"]["missing"]
    assert changed["record_id"] == label["record_id"] and changed["changed"] is True
    assert changed["digest"] == record_digest(label)


def january(*runs: str) -> list[dict]:
    """Run records of January 2026 (a closed month), as a writer would have made them."""
    out = []
    for i, run in enumerate(runs):
        record = run_record(run)
        record["recorded_at"] = f"2026-01-0{i + 1}T00:00:00.000000Z"
        out.append(record)
    return out


def test_a_dropped_pack_is_reported(cli, repo):
    pack_of(repo, "runs", january("r1", "r2", "r3"))
    base = commit(repo)
    [pack] = pack_files(repo, "runs")
    pack.unlink()
    code, report = verify_since(cli, base)
    assert code == 1
    assert sorted(m["kind"] for m in report["since"]["missing"]) == ["runs"] * 3


def test_a_checkpoint_file_catches_the_same_and_passes_growth(cli, repo, tmp_path):
    record_some(cli, ["r1", "r2"])
    out = tmp_path / "checkpoint.json"
    made = cli("ledger", "checkpoint", "--out", str(out), "--json")
    assert made.exit_code == 0, made.stderr
    summary = json.loads(made.stdout)
    assert summary["records"] == 4 and len(summary["digest"]) == 64
    data = json.loads(out.read_text())
    assert sorted(data["kinds"]["runs"].values()) == sorted(
        r["record_id"] for r in stored(repo, "runs")
    )
    record_some(cli, ["r3"])
    assert cli("ledger", "pack").exit_code == 0
    result = cli("ledger", "verify", "--checkpoint", str(out), "--json")
    report = json.loads(result.stdout)
    assert result.exit_code == 0 and report["since"]["reference_kind"] == "checkpoint"
    for path in record_files(repo, "acceptances") + pack_files(repo, "acceptances"):
        path.unlink()
    result = cli("ledger", "verify", "--checkpoint", str(out), "--json")
    report = json.loads(result.stdout)
    assert result.exit_code == 1
    assert {m["kind"] for m in report["since"]["missing"]} == {"acceptances"}
    # --since takes a revision only: the checkpoint's path is not one.
    result = cli("ledger", "verify", "--since", str(out))
    assert result.exit_code == 2 and "not a revision" in result.stderr


def test_an_edited_checkpoint_is_refused(cli, repo, tmp_path):
    record_some(cli, ["r1"])
    out = tmp_path / "checkpoint.json"
    assert cli("ledger", "checkpoint", "--out", str(out)).exit_code == 0
    data = json.loads(out.read_text())
    data["kinds"]["runs"] = {}
    out.write_text(json.dumps(data))
    result = cli("ledger", "verify", "--checkpoint", str(out))
    assert result.exit_code == 2 and "does not match its records" in result.stderr


@pytest.mark.parametrize("reference", ["no-such-revision", "--all", ""])
def test_an_unknown_reference_is_bad_input(cli, repo, reference):
    result = cli("ledger", "verify", "--since", reference)
    assert result.exit_code == 2
    assert "not a git revision" in result.stderr or "not a revision" in result.stderr


def test_since_outside_git_says_to_use_a_checkpoint(cli, kit_root):
    result = cli("ledger", "verify", "--since", "HEAD~1")
    assert result.exit_code == 2
    assert "git" in result.stderr


def test_a_broken_ledger_is_not_compared(cli, repo):
    record_some(cli, ["r1"])
    base = commit(repo)
    [path] = record_files(repo, "runs")
    path.write_bytes(path.read_bytes().replace(b'"r1"', b'"r9"'))
    result = cli("ledger", "verify", "--since", base)
    assert result.exit_code == 1
    assert "does not match its digest" in result.stdout
    assert "not compared while the ledgers have problems" in result.stdout


def test_packs_made_on_two_clones_fold_into_one(cli, repo):
    """Two packs of one month that share records (two branches packed) are read once
    and folded into one."""
    records = january("r1", "r2", "r3")
    pack_of(repo, "runs", records[:2])
    pack_of(repo, "runs", records)
    assert len(pack_files(repo, "runs")) == 2
    runs = json.loads(cli("ledger", "show", "runs", "--json").stdout)
    assert [r["run_id"] for r in runs] == ["r1", "r2", "r3"]
    assert cli("ledger", "verify").exit_code == 0
    assert cli("ledger", "pack", "runs").exit_code == 0
    assert len(pack_files(repo, "runs")) == 1
    assert [r["run_id"] for r in stored(repo, "runs")] == ["r1", "r2", "r3"]


def test_a_stray_file_in_a_ledger_folder_is_left_out_and_named(cli, kit_root):
    stray = kit_root / "state" / "evals" / "notes.txt"
    stray.write_text("hi")
    result = cli("metrics", "--json")
    assert result.exit_code == 0
    (left_out,) = json.loads(result.stdout)["excluded_records"]
    assert left_out["file"] == str(stray) and "a file pmos did not write" in left_out["problem"]
    verify = cli("ledger", "verify")
    assert verify.exit_code == 1 and f"{stray}: {left_out['problem']}" in verify.stdout


def test_since_reads_history_recursively_and_a_missing_blob_is_a_clean_error(cli, repo):
    pack_of(repo, "runs", january("r1", "r2"))
    record_some(cli, ["r3"])
    base = commit(repo)
    code, report = verify_since(cli, base)
    assert code == 0 and report["since"]["missing"] == []
    [loose] = record_files(repo, "runs")
    blob = git(repo, "rev-parse", f"{base}:{loose.relative_to(repo)}").stdout.strip()
    objects = repo / ".git" / "objects"
    (objects / blob[:2] / blob[2:]).unlink()  # a damaged (or partial) clone
    result = cli("ledger", "verify", "--since", base)
    assert result.exit_code == 2, result.stdout
    assert "missing from this repository" in result.stderr and "Traceback" not in result.stderr


def test_a_vanished_ledger_folder_is_refused_not_read_as_empty(cli, kit_root):
    record_some(cli, ["r1"])
    shutil.rmtree(kit_root / "state" / "acceptances")
    for command in (("metrics", "--json"), ("queue", "--json")):
        result = cli(*command)
        assert result.exit_code == 2, command
        assert "ledger folder is missing" in result.stderr
    result = cli("accept", "r1", "--label", "pass", "--by", "pm")
    assert result.exit_code == 2 and "missing" in result.stderr
    assert not (kit_root / "state" / "acceptances").exists()
    assert cli("ledger", "verify").exit_code == 1


def test_a_forged_record_that_breaks_a_writer_rule_is_named_by_verify(cli, kit_root):
    """Issue 11's reproduction: a hand-made verdict, correctly sealed, that no writer
    would accept (PASS with score 0.01 and a failed spec axis). Every file checks
    out; re-applying the writer's rules names the record and the rule."""
    from conftest import good_verdict

    assert cli(*REGISTER_R).exit_code == 0
    verdict = good_verdict(run_id="r", initiative_id="i")
    assert cli("eval", "record", "--file", "-", input=json.dumps(verdict)).exit_code == 0
    [stored_verdict] = stored(kit_root, "evals")
    forged = {
        **stored_verdict,
        "record_id": stored_verdict["record_id"][:-8] + "f0f0f0f0",
        "score": 0.01,
        "axes": {**stored_verdict["axes"], "spec": {"verdict": "fail", "rationale": "x"}},
    }
    path = forge(kit_root, "evals", forged)
    for options in ((), ("--schema",)):  # a loose record is always checked
        result = cli("ledger", "verify", *options, "--json")
        assert result.exit_code == 1
        [evals] = [r for r in json.loads(result.stdout)["ledgers"] if r["kind"] == "evals"]
        named = [p for p in evals["problems"] if p["file"] == str(path)]
        assert named and all(p["problem"].startswith("rule: ") for p in named)
        assert any("score" in p["problem"] for p in named)
    human = cli("ledger", "verify", "--schema")
    assert f"{path}: rule: " in human.stdout
    # In a pack, the record is screened just the same (nothing in a pack vouches).
    path.unlink()
    pack = pack_of(kit_root, "evals", [forged])
    for _ in range(2):  # the second time from the screening cache
        result = cli("ledger", "verify", "--json")
        assert result.exit_code == 1
        [evals] = [r for r in json.loads(result.stdout)["ledgers"] if r["kind"] == "evals"]
        named = [p for p in evals["problems"] if p["file"] == str(pack)]
        assert named and all(p["problem"].startswith("rule: ") and p["line"] == 2 for p in named)


def test_a_checkpoint_never_overwrites_a_kit_file_or_a_file_of_the_users(cli, kit_root, tmp_path):
    files = {p: p.read_bytes() for p in kit_root.rglob("*") if p.is_file()}
    for inside in (kit_root / "pmos.yaml", kit_root / "checkpoint.json"):
        refused = cli("ledger", "checkpoint", "--out", str(inside))
        assert refused.exit_code == 2 and "inside the kit" in refused.stderr
    assert {p: p.read_bytes() for p in kit_root.rglob("*") if p.is_file()} == files
    notes = tmp_path / "notes.txt"
    notes.write_text("mine\n")
    refused = cli("ledger", "checkpoint", "--out", str(notes))
    assert refused.exit_code == 2 and "not a pmos checkpoint" in refused.stderr
    assert notes.read_text() == "mine\n"
    out = tmp_path / "checkpoint.json"
    assert cli("ledger", "checkpoint", "--out", str(out)).exit_code == 0
    assert cli("ledger", "checkpoint", "--out", str(out)).exit_code == 0  # an earlier one
