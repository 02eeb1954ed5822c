"""`pmos metrics --by week|month|N`: periods oldest first, and drift."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pmos.calibration.periods import Period, assign_periods, parse_by
from test_metrics import metrics, seed_table

ROOT = Path(__file__).resolve().parents[1]


def test_parse_by():
    assert parse_by("week") == "week" and parse_by(" Month ") == "month"
    assert parse_by("50") == 50
    for bad in ("0", "-3", "fortnight", "1.5", ""):
        with pytest.raises(ValueError, match="week, month or a whole number"):
            parse_by(bad)


def test_calendar_periods_by_hand():
    ats = [
        "2026-12-31T23:59:59.000000Z",  # Thursday: ISO week 2026-W53
        "2027-01-04T00:00:00.000000Z",  # Monday: 2027-W01
        "2026-11-30T10:00:00.000000Z",  # Monday: 2026-W49
    ]
    index, periods = assign_periods(ats, ["a", "b", "c"], "week")
    assert [p.name for p in periods] == ["2026-W49", "2026-W53", "2027-W01"]
    assert index == [1, 2, 0]
    assert periods[1] == Period("2026-W53", "2026-12-28T00:00:00Z", "2027-01-04T00:00:00Z")
    index, periods = assign_periods(ats, ["a", "b", "c"], "month")
    assert [p.name for p in periods] == ["2026-11", "2026-12", "2027-01"]
    assert periods[1] == Period("2026-12", "2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z")


def test_runs_of_n_follow_verdict_time_then_id():
    ats = ["2026-01-03T00:00:00.000000Z", "2026-01-01T00:00:00.000000Z"] + [
        "2026-01-02T00:00:00.000000Z"
    ] * 2
    index, periods = assign_periods(ats, ["w", "x", "z", "y"], 2)
    # Order: x (Jan 1), y, z (Jan 2, by id), w (Jan 3).
    assert index == [1, 0, 1, 0]
    assert periods == [
        Period("runs 1-2", "2026-01-01T00:00:00.000000Z", "2026-01-02T00:00:00.000000Z"),
        Period("runs 3-4", "2026-01-02T00:00:00.000000Z", "2026-01-03T00:00:00.000000Z"),
    ]


def test_periods_and_drift_in_metrics(cli, kit):
    seed_table(kit, 10, 0, 0, 10, prefix="good")  # perfect agreement first
    seed_table(kit, 0, 10, 10, 0, prefix="bad")  # then total disagreement
    r = metrics(cli, "--by", "20")
    names = [p["period"] for p in r["periods"]]
    assert names == ["runs 1-20", "runs 21-40"]
    first, second = r["periods"]
    assert list(first) == [
        "period",
        "start",
        "end",
        "pairs",
        "kappa",
        "kappa_ci95",
        "tpr",
        "tnr",
        "pass_fraction",
    ]
    assert first["kappa"] == 1.0 and second["kappa"] == -1.0
    assert first["pass_fraction"] == 0.5 and second["pass_fraction"] == 0.5
    assert first["start"] <= first["end"] <= second["start"]
    # Calibrated at pair 20 (perfect agreement, ten of each class): the baseline. The
    # CUSUM: p0 = 1/22, p1 = 0.4 * 0.5 = 0.2, each disagreement adds log(0.2/p0) =
    # 1.48, so the sixth (pair 26) crosses 8.
    assert r["drift"] is True
    basis = r["drift_basis"]
    assert (basis["baseline_pairs"], basis["baseline_start_pair"]) == (20, 1)
    assert basis["baseline_kappa"] == 1.0 and basis["alarm_disagreement"] == 0.2
    assert (basis["alarm_at_pair"], basis["recalibrated"]) == (26, False)
    assert r["by_model"]["gpt-5"]["drift"] is True
    human = cli("metrics", "--by", "20")
    assert "runs 21-40" in human.stdout and "drift: YES since pair 26" in human.stdout


def test_no_drift_when_agreement_holds(cli, kit):
    seed_table(kit, 10, 0, 0, 10, prefix="a")
    seed_table(kit, 9, 1, 1, 9, prefix="b")
    r = metrics(cli, "--by", "20")
    assert r["drift"] is False


def test_without_by_there_are_no_periods_and_drift_needs_a_baseline(cli, kit):
    seed_table(kit, 3, 0, 0, 3)
    r = metrics(cli)
    assert r["periods"] is None
    assert r["drift"] is None and r["drift_basis"] is None
    assert r["undefined"]["drift"] == "the gate has not been calibrated yet: no baseline"
    week = metrics(cli, "--by", "week")
    assert len(week["periods"]) == 1 and week["periods"][0]["pairs"] == 6


@pytest.mark.parametrize("bad", ["0", "fortnight", "-1"])
def test_a_bad_by_is_refused(cli, bad):
    result = cli("metrics", "--by", bad)
    assert result.exit_code == 2 and "--by" in result.stderr


@pytest.mark.slow
def test_the_simulation_meets_its_targets_in_a_reduced_run():
    """benchmarks/calibration_sim.py at n = 20 (exact): coverage >= 93% in every cell
    of the grid, false calibration <= 5%; the full run is in calibration-method.md."""
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "calibration_sim.py"),
            "--quick",
            "--no-timing",
            "--check",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "MISSED" not in done.stdout
    assert done.stdout.count("false calibration ok") == 2
    assert done.stdout.count("false calibration under repeated looks ok") == 2
    assert done.stdout.count("false calibration under the plan ok") == 4
    assert done.stdout.count("  ok") >= 6
