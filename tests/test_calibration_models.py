"""Calibration is per evaluator model (issue 26, item 1), through `pmos metrics`.

The headline decision is the current evaluator model's own: a model change
starts calibration again, whatever an earlier model's record was.
"""

from __future__ import annotations

import json

from board_support import parse_page, words
from test_metrics import seed_table

OLD, NEW = "gpt-5", "claude-opus-9"


def metrics(cli, *args):
    result = cli("metrics", "--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def two_models(kit):
    # 200 pairs of the old model at near-perfect agreement (kappa 0.98), then 30 of
    # the new one at low agreement (kappa = 2(15*6 - 3*6)/((21)(12) + (18)(9)) = 0.348).
    seed_table(kit, tp=100, fn=1, fp=1, tn=98, model=OLD, prefix="old")
    seed_table(kit, tp=15, fn=3, fp=6, tn=6, model=NEW, prefix="new")


def test_a_new_model_starts_calibration_again(cli, kit):
    two_models(kit)
    r = metrics(cli)
    assert r["model"] == NEW and r["model_source"] == "latest-verdict"
    assert r["calibrated"] is False
    assert r["calibration_reason"] == r["by_model"][NEW]["calibration_reason"]
    # The pooled statistics are still reported, and would have called it calibrated.
    assert r["pairs"] == 230
    assert r["by_model"][OLD]["calibrated"] is True
    assert r["by_model"][NEW]["calibrated"] is False
    assert r["labels_needed"] == r["by_model"][NEW]["labels_needed"]
    human = cli("metrics")
    assert human.exit_code == 0
    assert human.stdout.startswith("ADVISORY") and f"evaluator model {NEW}" in human.stdout


def test_the_policy_names_the_model(cli, kit, kit_root):
    two_models(kit)
    config = kit_root / "pmos.yaml"
    config.write_text(config.read_text() + f"calibration:\n  model: {OLD}\n")
    r = metrics(cli)
    assert (r["model"], r["model_source"], r["calibrated"]) == (OLD, "policy", True)
    config.write_text(config.read_text().replace(f"model: {OLD}", "model: never-used"))
    r = metrics(cli)
    assert (r["model"], r["calibrated"], r["labels_needed"]) == ("never-used", False, None)
    assert "no labelled pairs of this model yet" in r["calibration_reason"]
    assert "never-used" in r["undefined"]["labels_needed"]


def test_a_bad_policy_model_is_refused(cli, kit_root):
    config = kit_root / "pmos.yaml"
    config.write_text(config.read_text() + "calibration:\n  model: ''\n")
    result = cli("metrics", "--json")
    assert result.exit_code == 2 and "calibration" in result.stderr


def test_a_model_filter_makes_that_model_the_headline(cli, kit):
    two_models(kit)
    r = metrics(cli, "--model", OLD)
    assert (r["model"], r["model_source"], r["calibrated"], r["pairs"]) == (
        OLD,
        "scope",
        True,
        200,
    )


def test_one_model_alone_is_its_own_headline(cli, kit):
    seed_table(kit, tp=12, fn=1, fp=1, tn=11)
    r = metrics(cli)
    assert r["model"] == "gpt-5"
    assert r["calibrated"] == r["by_model"]["gpt-5"]["calibrated"]
    assert r["labels_needed"] == r["by_model"]["gpt-5"]["labels_needed"]


def test_no_verdict_no_model(cli):
    r = metrics(cli)
    assert (r["model"], r["model_source"], r["calibrated"]) == (None, None, False)


def test_the_board_banner_names_the_current_model(cli, kit, kit_root):
    two_models(kit)
    result = cli("board")
    assert result.exit_code == 0, result.output
    page = parse_page((kit_root / "state" / "board.html").read_text(encoding="utf-8"))
    banner = words(page.by_id("banner").text())
    assert banner.startswith("ADVISORY")
    assert f"The gate is ADVISORY for evaluator model {NEW}:" in banner


def test_the_decision_as_a_library_call_from_rows(kit):
    """What the merge gate calls with a revision's records: the current model's decision."""
    from pmos.calibration.judged import BLIND_FIELDS, LABEL_FIELDS, VERDICT_FIELDS
    from pmos.calibration.metrics import calibration_decision
    from pmos.store.read import records
    from pmos.store.rows import row_type

    two_models(kit)
    verdicts = records(kit.store, "evals", row=row_type("evals", VERDICT_FIELDS))
    labels = records(
        kit.store, "acceptances", row=row_type("acceptances", LABEL_FIELDS + BLIND_FIELDS)
    )
    decision = calibration_decision(verdicts, labels, kit.config)
    assert list(decision) == [
        "calibrated",
        "calibration_reason",
        "labels_needed",
        "model",
        "model_source",
    ]
    assert (decision["calibrated"], decision["model"]) == (False, NEW)
