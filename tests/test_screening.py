"""Readers leave out records that break a writer rule, and say which (issue 11.8).

A record file written by hand carries a valid digest: the store cannot tell it
from a writer's. What tells them apart is the writers' rules, applied again by
every reader that lights a gate: metrics, the queue, the exemplars and score
collect leave such a record out and list it under ``excluded_records``. Packs
record the outcome of that check when they are made; readers trust it while
its basis (the rules' version, the kit files they read) holds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson

from conftest import good_verdict
from ledgerfiles import forge, pack_files, stored
from pmos.gate.screen import RULES_VERSION, KitScreen
from pmos.kit import open_kit
from pmos.store import lines, packs
from pmos.store.screening import Checked

REGISTER = ("run", "register", "--run-id", "r", "--initiative-id", "i", "--builder-model", "m")


def _record_verdict(cli, run: str) -> dict[str, Any]:
    verdict = good_verdict(run_id=run, initiative_id="i")
    result = cli(
        "eval", "record", "--file", "-", "--json", "--allow-unknown-run", input=json.dumps(verdict)
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _forged_pass(kit_root: Path, cli) -> dict[str, Any]:
    """The issue's reproduction: a sealed PASS with score 0.01 and a failed spec axis."""
    real = _record_verdict(cli, "r-real")
    forged = {k: v for k, v in real.items() if k != "digest"}
    forged.update(
        run_id="r",
        record_id=real["record_id"][:-8] + "f0f0f0f0",
        score=0.01,
        axes={**real["axes"], "spec": {"verdict": "fail", "rationale": "x"}},
    )
    forge(kit_root, "evals", forged)
    return forged


def _ids(items: list[dict[str, Any]]) -> set[str]:
    return {item["record_id"] for item in items}


def test_a_hand_made_verdict_lights_nothing(cli, kit_root):
    assert cli(*REGISTER).exit_code == 0
    forged = _forged_pass(kit_root, cli)
    for run in ("r", "r-real"):
        assert cli("accept", run, "--label", "pass", "--by", "pm").exit_code == 0
    metrics = json.loads(cli("metrics", "--json").stdout)
    # The valid twin (r-real) is counted; the forged verdict is not, so r's label
    # has no verdict to judge.
    assert metrics["pairs"] == 1 and metrics["labels_without_verdict"] == 1
    [excluded] = metrics["excluded_records"]
    assert excluded["record_id"] == forged["record_id"] and excluded["kind"] == "evals"
    assert excluded["rule"] in {"spec-axis", "standards-axis", "score-weighted-sum"}
    human = cli("metrics").stdout
    assert "excluded records: 1" in human and forged["record_id"] in human
    # A forged verdict does not clear the run's verification debt.
    queue = cli("queue", "--json")
    assert queue.exit_code == 1
    data = json.loads(queue.stdout)
    assert [d["run_id"] for d in data["verification_debt"]] == ["r"]
    assert _ids(data["excluded_records"]) == {forged["record_id"]}
    # Nor does it count as a calibration anchor or a score input.
    exemplars = json.loads(cli("exemplars", "--json").stdout)
    assert "r" not in {a["run_id"] for a in exemplars["anchors"]}
    assert _ids(exemplars["excluded_records"]) == {forged["record_id"]}
    collected = json.loads(cli("score", "collect", "--run-id", "r", "--json").stdout)
    assert _ids(collected["excluded_records"]) == {forged["record_id"]}


def test_a_kit_of_writers_records_excludes_nothing(cli, kit_root):
    assert cli(*REGISTER).exit_code == 0
    _record_verdict(cli, "r")
    assert cli("accept", "r", "--label", "pass", "--by", "pm").exit_code == 0
    assert json.loads(cli("metrics", "--json").stdout)["excluded_records"] == []
    assert json.loads(cli("queue", "--json").stdout)["excluded_records"] == []
    assert cli("ledger", "pack").exit_code == 0
    assert cli("ledger", "verify").exit_code == 0
    assert json.loads(cli("metrics", "--json").stdout)["pairs"] == 1


def test_a_pack_records_the_outcome_and_readers_use_it(cli, kit_root):
    assert cli(*REGISTER).exit_code == 0
    forged = _forged_pass(kit_root, cli)
    assert cli("ledger", "pack", "evals").exit_code == 0
    [pack] = pack_files(kit_root, "evals")
    header = orjson.loads(pack.read_bytes().split(b"\n", 1)[0])
    [[number, record_id, _rule, problem]] = header["checked"]["failed"]
    assert record_id == forged["record_id"] and problem
    assert [r["record_id"] for r in stored(kit_root, "evals")][number - 1] == record_id
    metrics = json.loads(cli("metrics", "--json").stdout)
    assert _ids(metrics["excluded_records"]) == {forged["record_id"]}
    assert metrics["excluded_records"][0]["file"] == str(pack)
    # Editing a file the rules read (the rubric) voids the recorded outcome: the
    # readers check the pack's records themselves, with the same answer.
    rubric = kit_root / "planning/evals/agent-run-eval-rubric.md"
    rubric.write_text(rubric.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert not KitScreen(open_kit(kit_root)).holds(header["checked"]["basis"])
    metrics = json.loads(cli("metrics", "--json").stdout)
    assert _ids(metrics["excluded_records"]) == {forged["record_id"]}


def _claiming_pack(kit_root: Path, basis: dict[str, str]) -> str:
    """Replace the evals pack by one of the same records whose header claims that
    its first (valid) record failed a rule; the record's id."""
    [pack] = pack_files(kit_root, "evals")
    records = pack.read_bytes().splitlines(keepends=True)[1:]
    entries = []
    for line in records:
        body, digest = lines.split(line[:-1])
        entries.append((packs.key_of(orjson.loads(body)), digest, line))
    record_id = orjson.loads(records[0])["record_id"]
    claim = Checked(basis, {1: (record_id, "claimed", "by hand")})
    made = packs.write_pack(pack.parent, "evals", entries, claim)
    if made != pack:
        pack.unlink()
    return record_id


def test_readers_trust_a_recorded_outcome_only_while_its_basis_holds(cli, kit_root):
    """What a hand-made pack can and cannot do: its header's claim that a record
    failed is believed while the claim's basis matches this kit (so it can hide a
    record, never add one), and ignored once it does not; 'verify --schema'
    checks every record whatever a pack says."""
    assert cli(*REGISTER).exit_code == 0
    _record_verdict(cli, "r")
    assert cli("ledger", "pack", "evals").exit_code == 0
    kit = open_kit(kit_root)
    screen = KitScreen(kit)
    screen.problems("evals", stored(kit_root, "evals")[0])  # reads the rubric: in the basis
    record_id = _claiming_pack(kit_root, screen.basis())
    excluded = json.loads(cli("metrics", "--json").stdout)["excluded_records"]
    assert [(e["record_id"], e["rule"]) for e in excluded] == [(record_id, "claimed")]
    assert cli("ledger", "verify").exit_code == 1  # the claim is reported
    assert cli("ledger", "verify", "--schema").exit_code == 0  # the record is sound
    stale = {**screen.basis(), "rules": RULES_VERSION + "-old"}
    _claiming_pack(kit_root, stale)
    assert json.loads(cli("metrics", "--json").stdout)["excluded_records"] == []
    assert cli("ledger", "verify").exit_code == 0
