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
    # A tampered ledger is bad input, not "no debt".
    path = ledgerfiles.edit(ledgerfiles.holding(kit_root, "runs", b'"r1"'), b'"r1"', b'"r9"')
    broken = pmos("queue", cwd=kit_root)
    assert broken.returncode == 2
    assert f"{path}: " in broken.stderr and "does not match its digest" in broken.stderr
