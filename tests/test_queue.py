"""`pmos queue`: verification debt (exit 1) and acceptance debt."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import ledgerfiles
from pmos.calibration.queue import compute_queue, human_age
from pmos.gate.writers import register_run
from test_metrics import judge, label


def register(kit, run, initiative="init-1"):
    return register_run(kit, run_id=run, initiative_id=initiative, builder_model="claude-sonnet-4")


def queue(cli):
    result = cli("queue", "--json")
    return result.exit_code, json.loads(result.stdout)


def test_empty_kit_owes_nothing(cli):
    code, q = queue(cli)
    assert code == 0
    assert q["verification_debt"] == [] and q["acceptance_debt"] == []


def test_registered_run_without_verdict_is_verification_debt(cli, kit):
    register(kit, "r1", "alpha")
    code, q = queue(cli)
    assert code == 1
    [debt] = q["verification_debt"]
    assert debt["run_id"] == "r1" and debt["initiative_id"] == "alpha"
    assert debt["status"] == "no-verdict" and debt["skipped_reason"] is None
    assert debt["registered"] is True
    assert 0 <= debt["age_seconds"] < 3600 and debt["age"].endswith(("s", "m"))


def test_skipped_verdict_keeps_the_debt_with_its_reason(cli, kit):
    register(kit, "r1")
    judge(kit, "r1", "SKIPPED")
    code, q = queue(cli)
    assert code == 1
    [debt] = q["verification_debt"]
    assert debt["status"] == "skipped" and debt["skipped_reason"] == "evaluator unavailable"
    assert q["acceptance_debt"] == []


def test_verdict_clears_verification_debt_and_opens_acceptance_debt(cli, kit):
    register(kit, "r1")
    judge(kit, "r1", "FAIL")
    code, q = queue(cli)
    assert code == 0 and q["verification_debt"] == []
    [owed] = q["acceptance_debt"]
    assert owed["run_id"] == "r1" and owed["verdict"] == "FAIL"
    label(kit, "r1", "fail")
    code, q = queue(cli)
    assert code == 0 and q["acceptance_debt"] == []


def test_a_later_skip_reopens_verification_debt(cli, kit):
    register(kit, "r1")
    judge(kit, "r1", "PASS")
    judge(kit, "r1", "SKIPPED")  # the latest verdict is a skip
    code, q = queue(cli)
    assert code == 1
    assert [d["run_id"] for d in q["verification_debt"]] == ["r1"]
    # It was judged once and not labelled, so the PM owes it too.
    assert [d["verdict"] for d in q["acceptance_debt"]] == ["PASS"]


def test_unregistered_judged_run_is_acceptance_debt_aged_from_its_first_verdict(cli, kit):
    first = judge(kit, "ghost", "PASS")
    judge(kit, "ghost", "FAIL")
    code, q = queue(cli)
    assert code == 0
    [owed] = q["acceptance_debt"]
    assert owed["registered"] is False and owed["age_from"] == first["recorded_at"]
    assert owed["verdict"] == "FAIL"


def test_age_counts_from_registration(kit):
    run = register(kit, "r1").record
    registered = datetime.fromisoformat(run["recorded_at"])
    q = compute_queue(kit, now=registered + timedelta(hours=2, minutes=5))
    [debt] = q.verification_debt
    assert debt["age_seconds"] == 2 * 3600 + 300
    assert debt["age"] == "2h 05m"
    assert debt["age_from"] == run["recorded_at"]


def test_oldest_debt_first(kit):
    register(kit, "z-first")
    register(kit, "a-second")  # registered later: younger, though it sorts first by name
    now = datetime.now(UTC) + timedelta(days=1)
    q = compute_queue(kit, now=now)
    assert [d["run_id"] for d in q.verification_debt] == ["z-first", "a-second"]


def test_human_age():
    assert human_age(42) == "42s"
    assert human_age(125) == "2m"
    assert human_age(3 * 86400 + 4 * 3600 + 59) == "3d 04h"
    assert human_age(-5) == "0s"


def test_human_output_lists_both_debts(cli, kit):
    register(kit, "r1")
    register(kit, "r2")
    judge(kit, "r2", "PASS")
    result = cli("queue")
    assert result.exit_code == 1
    assert "verification debt: 1 run(s)" in result.stdout
    assert "acceptance debt: 1 run(s)" in result.stdout
    assert "no-verdict" in result.stdout


def test_exit_codes_as_a_real_process(pmos, kit, kit_root):
    clean = pmos("queue", cwd=kit_root)
    assert clean.returncode == 0, clean.stderr
    register(kit, "r1")
    owed = pmos("queue", "--json", cwd=kit_root)
    assert owed.returncode == 1
    assert json.loads(owed.stdout)["verification_debt"][0]["run_id"] == "r1"
    judge(kit, "r1", "PASS")
    assert pmos("queue", cwd=kit_root).returncode == 0
    # A tampered record does not count (the run it named is unknown now), and
    # verify names it with the reason every reader leaves it out for.
    path = ledgerfiles.edit(ledgerfiles.holding(kit_root, "runs", b'"r1"'), b'"r1"', b'"r9"')
    assert pmos("queue", cwd=kit_root).returncode == 0
    verify = pmos("ledger", "verify", cwd=kit_root)
    assert verify.returncode == 1
    assert f"{path}: " in verify.stdout and "does not match its digest" in verify.stdout


# ------------------------------------------------- every run the kit knows of (issue 11.3)


def test_skip_of_an_unregistered_run_is_verification_debt(cli, kit, pmos, kit_root):
    # The reproduction: metrics counted the skip, the queue said nothing and exited 0.
    judge(kit, "ghost", "SKIPPED")
    code, q = queue(cli)
    assert code == 1
    [debt] = q["verification_debt"]
    assert (debt["run_id"], debt["registered"], debt["status"]) == ("ghost", False, "skipped")
    assert debt["initiative_id"] == "init-1"
    assert pmos("queue", cwd=kit_root).returncode == 1
    judge(kit, "ghost", "PASS")
    code, q = queue(cli)
    assert code == 0 and q["verification_debt"] == []


def test_a_labelled_run_without_a_verdict_is_verification_debt(cli, kit):
    label(kit, "only-labelled", "pass")
    code, q = queue(cli)
    assert code == 1
    [debt] = q["verification_debt"]
    assert (debt["run_id"], debt["status"], debt["registered"]) == (
        "only-labelled",
        "no-verdict",
        False,
    )
    assert debt["initiative_id"] is None
    assert "unregistered" in cli("queue").stdout


def test_a_verdict_newer_than_the_label_reopens_acceptance_debt(cli, kit):
    register(kit, "r1")
    judge(kit, "r1", "FAIL")
    label(kit, "r1", "fail")
    assert queue(cli)[1]["acceptance_debt"] == []
    newer = judge(kit, "r1", "PASS")
    code, q = queue(cli)
    assert code == 0
    [owed] = q["acceptance_debt"]
    assert (owed["verdict"], owed["record_id"], owed["label_superseded"]) == (
        "PASS",
        newer["record_id"],
        True,
    )
    assert "label judged an older verdict" in cli("queue").stdout
    label(kit, "r1", "pass")
    assert queue(cli)[1]["acceptance_debt"] == []


def test_seeded_runs_are_calibration_debt_not_verification_debt(cli, kit, pmos, kit_root):
    assert cli("known-bad", "seed").exit_code == 0
    register(kit, "known-bad-lookalike", "real-initiative")  # a real run: not seeded
    code, q = queue(cli)
    assert code == 1
    assert [d["run_id"] for d in q["verification_debt"]] == ["known-bad-lookalike"]
    judge(kit, "known-bad-lookalike", "PASS", initiative="real-initiative")
    code, q = queue(cli)
    assert code == 0 and q["verification_debt"] == []
    seeded = [d["run_id"] for d in q["calibration_debt"]]
    assert seeded and all(r.startswith("known-bad-") for r in seeded)
    assert all(d["status"] == "no-verdict" for d in q["calibration_debt"])
    human = cli("queue")
    assert human.exit_code == 0
    assert f"calibration debt: {len(seeded)} seeded run(s)" in human.stdout
    strict = pmos("queue", "--include-calibration", cwd=kit_root)
    assert strict.returncode == 1, strict.stdout
    from pmos.gate.writers import record_short_verdict
    from pmos.store.lookup import find_run

    for run in seeded:
        contract = find_run(kit.store, run)["contract"]
        record_short_verdict(
            kit,
            run_id=run,
            initiative_id="known-bad",
            verdict="FAIL",
            score=0.3,
            rubric_path="planning/evals/agent-run-eval-rubric.md",
            evaluator_model="gpt-5",
            standards="fail",
            criteria=[
                {"id": c["id"], "result": "fail", "verified": True, "evidence": "artifact.diff"}
                for c in contract["done_criteria"]
            ],
        )
    code, q = queue(cli)
    assert q["calibration_debt"] == []
    assert cli("queue", "--include-calibration").exit_code == 0
