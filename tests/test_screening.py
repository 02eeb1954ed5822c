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

from conftest import good_verdict
from ledgerfiles import forge

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
