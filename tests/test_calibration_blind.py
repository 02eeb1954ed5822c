"""Blind labels (issue 26, item 5): `pmos label next --blind` shows a run without the
verdict, `pmos accept --blind` marks the label, metrics reports agreement on blind
labels beside the rest, and calibration.min_blind_labels can require some."""

from __future__ import annotations

import json

from pmos.gate.writers import record_acceptance, record_short_verdict, register_run
from test_metrics import judge, metrics, seed_table


def label_next(cli, *args):
    result = cli("label", "next", "--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_label_next_blind_shows_the_run_without_the_verdict(cli, kit):
    contract = {
        "done_criteria": [
            {"id": "c1", "text": "the endpoint returns 404", "test_method": "call it"}
        ]
    }
    register_run(kit, run_id="r1", initiative_id="init-1", builder_model="m", contract=contract)
    assert label_next(cli)["run_id"] is None
    assert "nothing to label" in cli("label", "next").stdout
    record = record_short_verdict(
        kit,
        run_id="r1",
        initiative_id="init-1",
        verdict="FAIL",
        score=0.2,
        rubric_path="planning/evals/agent-run-eval-rubric.md",
        evaluator_model="gpt-5",
        standards="fail",
        criteria=[{"id": "c1", "result": "fail", "verified": True, "evidence": "contract.yaml"}],
    ).record
    seen = label_next(cli)
    assert (seen["run_id"], seen["blind"], seen["waiting"]) == ("r1", False, 1)
    assert seen["verdict"]["verdict"] == "FAIL"
    assert seen["verdict"]["record_id"] == record["record_id"]
    assert seen["contract"] == contract
    blind = label_next(cli, "--blind")
    assert blind["verdict"] is None and blind["blind"] is True
    assert blind["contract"] == contract
    assert blind["accept_command"].endswith("--blind")
    human = cli("label", "next", "--blind")
    assert human.exit_code == 0
    assert "c1: the endpoint returns 404" in human.stdout
    assert "FAIL" not in human.stdout and "gate verdict" not in human.stdout
    assert "gate verdict: FAIL" in cli("label", "next").stdout
    # The blind label, then nothing is left to label.
    result = cli("accept", "r1", "--label", "fail", "--by", "pm-alex", "--blind", "--json")
    assert result.exit_code == 0, result.output
    stored = json.loads(cli("ledger", "show", "acceptances", "--json").stdout)
    assert stored[-1]["blind"] is True
    assert label_next(cli)["run_id"] is None


def test_a_label_is_blind_only_when_asked(cli, kit):
    judge(kit, "r1", "PASS")
    assert cli("accept", "r1", "--label", "pass", "--by", "pm-alex").exit_code == 0
    stored = json.loads(cli("ledger", "show", "acceptances", "--json").stdout)
    assert "blind" not in stored[-1]


def test_metrics_report_blind_agreement_beside_the_rest(cli, kit):
    seed_table(kit, tp=12, fn=1, fp=1, tn=11)  # seen labels
    for i in range(4):  # four blind labels: two agree, two do not
        run = f"blind-{i}"
        judge(kit, run, "PASS" if i % 2 == 0 else "FAIL")
        record_acceptance(kit, run_id=run, label="pass" if i < 2 else "fail", by="pm", blind=True)
    r = metrics(cli)
    assert r["pairs"] == 29 and r["blind_pairs"] == 4
    # Blind: (PASS, pass), (FAIL, pass), (PASS, fail), (FAIL, fail): p_o 2/4, kappa 0.
    assert r["blind_observed_agreement"] == 0.5 and r["blind_kappa"] == 0.0
    assert r["by_model"]["gpt-5"]["blind_pairs"] == 4
    assert r["min_blind_labels"] == 0


def test_min_blind_labels_is_required_before_calibrated(cli, kit, kit_root):
    seed_table(kit, tp=100, fn=1, fp=1, tn=98)
    assert metrics(cli)["calibrated"] is True
    config = kit_root / "pmos.yaml"
    config.write_text(config.read_text() + "calibration:\n  min_blind_labels: 2\n")
    r = metrics(cli)
    assert r["calibrated"] is False and r["min_blind_labels"] == 2
    assert r["calibration_reason"].startswith("only 0 blind label(s) among the pairs")
    for i in range(2):
        judge(kit, f"b{i}", "PASS")
        record_acceptance(kit, run_id=f"b{i}", label="pass", by="pm", blind=True)
    r = metrics(cli)
    assert r["calibrated"] is True and r["blind_pairs"] == 2
    config.write_text(config.read_text().replace("min_blind_labels: 2", "min_blind_labels: -1"))
    assert cli("metrics", "--json").exit_code == 2
