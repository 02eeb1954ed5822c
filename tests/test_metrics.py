"""`pmos metrics` on real ledgers written by the validated writers.

Every expected number is computed by hand in the comment beside it (or cited
from a publication), never by calling the code under test.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

import ledgerfiles
from pmos.calibration.metrics import REPORT_KEYS
from pmos.gate import pass_fraction
from pmos.gate.writers import record_acceptance, record_short_verdict

RUBRIC = "planning/evals/agent-run-eval-rubric.md"


def judge(kit, run, verdict, *, model="gpt-5", initiative="init-1"):
    """Write a verdict through the short-form writer (what `pmos eval log` does)."""
    if verdict == "SKIPPED":
        return record_short_verdict(
            kit,
            run_id=run,
            initiative_id=initiative,
            verdict="SKIPPED",
            skipped_reason="evaluator unavailable",
            evaluator_model=model,
        ).record
    passing = verdict != "FAIL"
    return record_short_verdict(
        kit,
        run_id=run,
        initiative_id=initiative,
        verdict=verdict,
        score=0.9 if passing else 0.3,
        rubric_path=RUBRIC,
        evaluator_model=model,
        spec="pass" if passing else "fail",
        standards="pass" if passing else "fail",
    ).record


def label(kit, run, value):
    return record_acceptance(kit, run_id=run, label=value, by="pm-alex").record


def seed_table(kit, tp=0, fn=0, fp=0, tn=0, *, model="gpt-5", initiative="init-1", prefix="r"):
    """One run per pair; every other gate pass is PASS-WITH-FINDINGS (also pass-side)."""
    cells = (("tp", True, "pass", tp), ("fn", False, "pass", fn))
    cells += (("fp", True, "fail", fp), ("tn", False, "fail", tn))
    for cell, gate_pass, pm, count in cells:
        for i in range(count):
            run = f"{prefix}-{cell}-{i}"
            verdict = ("PASS" if i % 2 == 0 else "PASS-WITH-FINDINGS") if gate_pass else "FAIL"
            judge(kit, run, verdict, model=model, initiative=initiative)
            label(kit, run, pm)


def metrics(cli, *args):
    result = cli("metrics", "--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


#: The keys of the report before issue 12: every one must stay (additive changes only).
OLD_KEYS = [
    "pairs",
    "short_form_pairs",
    "confusion",
    "observed_agreement",
    "kappa",
    "kappa_ci95",
    "kappa_ci_method",
    "tpr",
    "tnr",
    "pabak",
    "ac1",
    "pass_fraction",
    "pass_fraction_window",
    "goodhart_alarm",
    "kappa_threshold",
    "calibrated",
    "calibration_reason",
    "skipped",
    "unlabeled_verdicts",
    "labels_without_verdict",
    "corrected_pass_rate",
    "by_model",
    "undefined",
]


def documented_keys(command: str) -> list[str]:
    """The top-level keys json-keys.yaml gives ``command``, in its order: the one list of
    meanings the JSON reference is generated from (scripts/gen-reference.py)."""
    text = (Path(__file__).resolve().parents[1] / "docs/reference/json-keys.yaml").read_text()
    keys = yaml.safe_load(text)[command]["keys"]
    return [key for key in keys if "." not in key and "[]" not in key]


#: The report's keys, in output order, as documented: json-keys.yaml lists them in
#: that order, so the code, its output and the reference must agree on it.
KEYS = documented_keys("metrics")


def test_every_earlier_key_is_kept_in_its_order():
    assert len(KEYS) == len(set(KEYS)) > len(OLD_KEYS)
    assert [k for k in KEYS if k in OLD_KEYS] == OLD_KEYS
    assert list(REPORT_KEYS) == KEYS


# (tp, fn, fp, tn) -> hand-computed p_o, kappa, TPR, TNR, PABAK, AC1, calibrated.
# p_e = (gate_pass * pm_pass + gate_fail * pm_fail) / n^2; AC1 uses
# pi = (gate_pass + pm_pass) / 2n and p_e = 2 pi (1 - pi); PABAK = 2 p_o - 1.
CASES = {
    # p_o 18/20, p_e (10*10 + 10*10)/400 = .5, kappa .4/.5; pi .5 so AC1 = kappa.
    # Not calibrated: kappa .8 over 20 pairs has a lower 95% bound far below .6.
    "balanced": ((9, 1, 1, 9), 0.9, 0.8, 0.9, 0.9, 0.8, 0.8, False),
    # Feinstein & Cicchetti 1990, second table: p_o .85, p_e (90*85 + 10*15)/1e4
    # = .78, kappa .07/.22 (published 0.32); TPR 80/85, TNR 5/15; pi = 175/200,
    # AC1 p_e = 2 * .875 * .125 = .21875, AC1 = .63125/.78125.
    "prevalence paradox": (
        (80, 5, 10, 5),
        0.85,
        0.07 / 0.22,
        80 / 85,
        5 / 15,
        0.7,
        0.63125 / 0.78125,
        False,
    ),
    # p_o 1, p_e (12*12 + 8*8)/400 = .52, kappa 1; AC1 (1 - .48)/(1 - .48) = 1.
    # Not calibrated: only 8 PM fail labels, min_per_class is 10.
    "perfect agreement": ((12, 0, 0, 8), 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, False),
    # p_o 1, p_e (10*10 + 10*10)/400 = .5, kappa 1: calibrated, since kappa's
    # interval has a lower end (above .6) even at perfect agreement.
    "perfect agreement, ten each": ((10, 0, 0, 10), 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, True),
    # p_o 0, p_e (5*5 + 5*5)/100 = .5, kappa -.5/.5 = -1; AC1 pi .5: -1.
    "perfect disagreement": ((0, 5, 5, 0), 0.0, -1.0, 0.0, 0.0, -1.0, -1.0, False),
    # Every verdict and label pass: kappa and TNR undefined; AC1 pi 1, p_e 0: 1.
    "all pass": ((6, 0, 0, 0), 1.0, None, 1.0, None, 1.0, 1.0, False),
    # Feinstein & Cicchetti 1990, first table (published kappa 0.70): p_o .85,
    # p_e (49*46 + 51*54)/1e4 = .5008, kappa .3492/.4992; TPR 40/46, TNR 45/54;
    # pi 95/200 = .475, AC1 p_e .49875, AC1 = .35125/.50125.
    "textbook 2x2": (
        (40, 6, 9, 45),
        0.85,
        0.3492 / 0.4992,
        40 / 46,
        45 / 54,
        0.7,
        0.35125 / 0.50125,
        False,  # kappa .70 over 100 pairs: its lower 95% bound is below .6
    ),
    # Only the gate is constant (passes everything): p_o 15/20, p_e (20*15 + 0*5)/400
    # = .75 = p_o, kappa exactly 0 (defined); TNR 0/5; pi 35/40 = .875, AC1
    # p_e = .21875, AC1 = .53125/.78125.
    "gate always passes": ((15, 0, 5, 0), 0.75, 0.0, 1.0, 0.0, 0.5, 0.53125 / 0.78125, False),
}


def approx_or_none(value):
    return None if value is None else pytest.approx(value, abs=1e-6)


@pytest.mark.parametrize("name", list(CASES))
def test_hand_computed_ledgers(cli, kit, name):
    (tp, fn, fp, tn), p_o, kappa, tpr, tnr, pabak, ac1, calibrated = CASES[name]
    seed_table(kit, tp, fn, fp, tn)
    r = metrics(cli)
    assert list(r) == KEYS
    assert r["pairs"] == tp + fn + fp + tn
    assert r["confusion"] == {"tp": tp, "fn": fn, "fp": fp, "tn": tn}
    assert r["observed_agreement"] == approx_or_none(p_o)
    assert r["kappa"] == approx_or_none(kappa)
    assert r["tpr"] == approx_or_none(tpr)
    assert r["tnr"] == approx_or_none(tnr)
    assert r["pabak"] == approx_or_none(pabak)
    assert r["ac1"] == approx_or_none(ac1)
    assert r["calibrated"] is calibrated
    assert r["kappa_threshold"] == 0.6
    assert "Dirichlet posterior" in r["kappa_ci_method"]
    assert r["kappa_point_meets_threshold"] is (None if kappa is None else kappa >= 0.6)
    if kappa is not None:  # the interval exists wherever kappa does, perfect agreement too
        low, high = r["kappa_ci95"]
        assert -1.0 <= low <= kappa + 1e-6 and kappa - 1e-6 <= high <= 1.0
    # The same pairs, one model: by_model repeats the statistics.
    assert list(r["by_model"]) == ["gpt-5"]
    per_model = r["by_model"]["gpt-5"]
    for key in ("pairs", "confusion", "kappa", "kappa_ci95", "tpr", "tpr_ci95", "tnr", "tnr_ci95"):
        assert per_model[key] == r[key]
    for key in ("pabak", "ac1", "calibrated", "calibration_reason", "labels_needed"):
        assert per_model[key] == r[key]
    text = json.dumps(r)
    assert "NaN" not in text and "Infinity" not in text


def test_published_kappas_round_to_the_published_values(cli, kit):
    seed_table(kit, 40, 6, 9, 45, prefix="a")  # Feinstein & Cicchetti table A: 0.70
    assert round(metrics(cli)["kappa"], 2) == 0.70


def test_all_pass_names_every_undefined_statistic(cli, kit):
    seed_table(kit, tp=6)
    r = metrics(cli)
    assert r["kappa"] is None and r["kappa_ci95"] is None and r["tnr"] is None
    assert "chance agreement is 1" in r["undefined"]["kappa"]
    assert "negative class" in r["undefined"]["tnr"]
    assert "kappa_ci95" in r["undefined"]
    assert "tpr" not in r["undefined"]
    assert r["calibrated"] is False
    assert r["calibration_reason"].startswith("no negative class yet: TNR is undefined")
    assert "only 6 pair(s), at least 20 are needed" in r["calibration_reason"]


def test_balanced_table_is_not_calibrated_on_its_point_estimate(cli, kit):
    seed_table(kit, 9, 1, 1, 9)
    r = metrics(cli)
    low, high = r["kappa_ci95"]
    assert low < 0.6 < 0.8 < high  # kappa .8, but 20 pairs cannot pin it above .6
    assert r["kappa_point_meets_threshold"] is True and r["calibrated"] is False
    assert r["calibration_reason"].startswith(
        f"the lower end of kappa's 95% interval, {low:.3f}, is below the threshold 0.60 "
        "(kappa 0.800); kappa's bound for repeated looks,"
    )


def test_perfect_disagreement_cannot_be_corrected(cli, kit):
    seed_table(kit, 0, 5, 5, 0)
    judge(kit, "unlabelled-1", "PASS")
    r = metrics(cli)
    # The posterior interval exists at kappa = -1 too, and is not zero-width.
    low, high = r["kappa_ci95"]
    assert low == -1.0 < high < 0.0
    assert r["unlabeled_verdicts"] == 1
    assert r["corrected_pass_rate"] is None
    assert "TPR + TNR = 0 <= 1" in r["undefined"]["corrected_pass_rate"]
    assert "the lower end of kappa's 95% interval, -1.000, is below" in r["calibration_reason"]
    assert r["labels_needed"] is None
    assert "cannot at the current agreement: kappa -1.000" in r["undefined"]["labels_needed"]


def test_one_constant_side_gives_kappa_zero_with_an_interval(cli, kit):
    seed_table(kit, 15, 0, 5, 0)  # the gate passes everything
    judge(kit, "open-1", "PASS")
    r = metrics(cli)
    assert r["kappa"] == 0.0
    low, high = r["kappa_ci95"]
    assert low < 0.0 < high
    # TNR 0/5: Wilson gives [0, 1.96^2/(5 + 1.96^2)] = [0, 0.434482].
    assert r["tnr_ci95"] == [0.0, pytest.approx(3.841459 / 8.841459, abs=1e-6)]
    # TNR is 0 and TPR 1: TPR + TNR = 1, a gate that separates nothing.
    assert "TPR + TNR = 1 <= 1" in r["undefined"]["corrected_pass_rate"]


def test_corrected_pass_rate_by_hand(cli, kit):
    seed_table(kit, 9, 1, 1, 9)  # TPR .9, TNR .9
    for i, verdict in enumerate(["PASS", "PASS", "PASS-WITH-FINDINGS", "FAIL"]):
        judge(kit, f"open-{i}", verdict)
    r = metrics(cli)
    crp = r["corrected_pass_rate"]
    # apparent 3/4; Rogan-Gladen (.75 + .9 - 1) / (.9 + .9 - 1) = .65 / .8
    assert crp["apparent_pass_rate"] == 0.75
    assert crp["value"] == pytest.approx(0.8125)
    assert crp["unlabeled_runs"] == 4
    low, high = crp["ci95"]
    assert 0.0 <= low <= crp["value"] <= high <= 1.0
    assert "seed" in crp["method"] and "Rogan-Gladen" in crp["method"]
    assert metrics(cli)["corrected_pass_rate"] == crp  # seeded: the same every time
    assert "corrected_pass_rate" not in r["undefined"]


def test_nothing_unlabelled_means_no_corrected_rate(cli, kit):
    seed_table(kit, 9, 1, 1, 9)
    r = metrics(cli)
    assert r["corrected_pass_rate"] is None
    assert "no unlabelled runs" in r["undefined"]["corrected_pass_rate"]


def test_empty_kit(cli):
    r = metrics(cli)
    assert r["pairs"] == 0 and r["kappa"] is None and r["pass_fraction"] is None
    assert r["calibrated"] is False and r["calibration_reason"] == "no labelled pairs yet."
    assert r["by_model"] == {}
    assert set(r["undefined"]) >= {"kappa", "tpr", "tnr", "pabak", "ac1", "pass_fraction"}


# ---------------------------------------------------------------- superseding and SKIPPED


def test_reevaluation_supersedes_the_earlier_verdict(cli, kit):
    judge(kit, "r1", "FAIL")
    judge(kit, "r1", "PASS")  # re-evaluated: the gate now passes it
    label(kit, "r1", "pass")
    judge(kit, "r2", "PASS")
    judge(kit, "r2", "FAIL")  # re-evaluated: now fails
    label(kit, "r2", "fail")
    r = metrics(cli)
    assert r["pairs"] == 2
    assert r["confusion"] == {"tp": 1, "fn": 0, "fp": 0, "tn": 1}


def test_pm_changing_a_label_supersedes_it(cli, kit):
    judge(kit, "r1", "PASS")
    label(kit, "r1", "pass")
    judge(kit, "r2", "FAIL")
    label(kit, "r2", "fail")
    assert metrics(cli)["confusion"] == {"tp": 1, "fn": 0, "fp": 0, "tn": 1}
    label(kit, "r1", "fail")  # the PM changes their mind
    assert metrics(cli)["confusion"] == {"tp": 0, "fn": 0, "fp": 1, "tn": 1}


def test_skipped_verdicts_are_left_out_of_pairs(cli, kit):
    judge(kit, "r1", "PASS")
    judge(kit, "r1", "SKIPPED")  # a later skip does not erase the judgement
    label(kit, "r1", "pass")
    judge(kit, "r2", "SKIPPED")  # only skipped: no pair
    label(kit, "r2", "fail")
    judge(kit, "r3", "SKIPPED")
    label(kit, "r4", "pass")  # labelled, never judged
    judge(kit, "r5", "FAIL")  # judged, never labelled
    r = metrics(cli)
    assert r["pairs"] == 1
    assert r["confusion"] == {"tp": 1, "fn": 0, "fp": 0, "tn": 0}
    assert r["skipped"] == 2  # r2 and r3
    assert r["labels_without_verdict"] == 2  # r2 (skipped only) and r4
    assert r["unlabeled_verdicts"] == 1  # r5
    assert r["by_model"]["gpt-5"]["skipped"] == 2


def test_skipped_verdicts_do_not_count_in_the_pass_fraction(cli, kit):
    judge(kit, "r1", "PASS")
    judge(kit, "r2", "FAIL")
    for i in range(5):
        judge(kit, f"s{i}", "SKIPPED")
    r = metrics(cli, "--window", "2")
    assert r["pass_fraction"] == 0.5
    assert r["pass_fraction_window"] == 2


# ---------------------------------------------------------------- per model and filters


def test_by_model_follows_the_verdict_the_label_judged(cli, kit):
    seed_table(kit, 3, 1, 0, 2, model="gpt-5", prefix="g")
    seed_table(kit, 2, 0, 2, 0, model="claude-opus-4", prefix="c")
    judge(kit, "g-tp-0", "FAIL", model="claude-opus-4")  # re-judged after the PM's label
    r = metrics(cli)
    gpt, claude = r["by_model"]["gpt-5"], r["by_model"]["claude-opus-4"]
    # The label judged gpt-5's PASS: it stays paired with it, superseded.
    assert gpt["confusion"] == {"tp": 3, "fn": 1, "fp": 0, "tn": 2}
    assert gpt["labels_superseded"] == 1 and claude["labels_superseded"] == 0
    assert r["labels_superseded"] == 1
    label(kit, "g-tp-0", "pass")  # the PM labels the new verdict: now claude's pair
    r = metrics(cli)
    gpt, claude = r["by_model"]["gpt-5"], r["by_model"]["claude-opus-4"]
    assert gpt["confusion"] == {"tp": 2, "fn": 1, "fp": 0, "tn": 2}
    assert claude["confusion"] == {"tp": 2, "fn": 1, "fp": 2, "tn": 0}
    assert r["confusion"] == {"tp": 4, "fn": 2, "fp": 2, "tn": 2}
    assert r["labels_superseded"] == 0
    # gpt-5: p_o 4/5, p_e (2*3 + 3*2)/25 = .48, kappa .32/.52
    assert gpt["kappa"] == pytest.approx(0.32 / 0.52, abs=1e-6)
    # claude: TNR 0/2; p_o 2/5, p_e (4*3 + 1*2)/25 = .56, kappa -.16/.44
    assert claude["tnr"] == 0.0
    assert claude["kappa"] == pytest.approx(-0.16 / 0.44, abs=1e-6)
    only = metrics(cli, "--model", "claude-opus-4")
    assert list(only["by_model"]) == ["claude-opus-4"]
    assert only["confusion"] == claude["confusion"]


def test_initiative_filter(cli, kit):
    seed_table(kit, 2, 0, 0, 1, initiative="alpha", prefix="a")
    seed_table(kit, 0, 1, 1, 0, initiative="beta", prefix="b")
    label(kit, "never-judged", "pass")
    assert metrics(cli, "--initiative", "alpha")["confusion"] == {
        "tp": 2,
        "fn": 0,
        "fp": 0,
        "tn": 1,
    }
    beta = metrics(cli, "--initiative", "beta")
    assert beta["confusion"] == {"tp": 0, "fn": 1, "fp": 1, "tn": 0}
    assert beta["labels_without_verdict"] == 0  # the unregistered label has no initiative
    assert metrics(cli, "--initiative", "gamma")["pairs"] == 0


def test_since_filter(cli, kit):
    seed_table(kit, 2, 0, 0, 0, prefix="old")
    cut = datetime.now(UTC)
    seed_table(kit, 0, 0, 0, 3, prefix="new")
    r = metrics(cli, "--since", cut.isoformat())
    assert r["confusion"] == {"tp": 0, "fn": 0, "fp": 0, "tn": 3}
    assert r["pass_fraction"] == 0.0  # only the new verdicts are in scope
    assert metrics(cli, "--since", "2000-01-01")["pairs"] == 5
    tomorrow = (cut + timedelta(days=1)).date().isoformat()
    assert metrics(cli, "--since", tomorrow)["pairs"] == 0


@pytest.mark.parametrize("bad", ["yesterday", "2026-13-01", "2026-02-30", ""])
def test_since_rejects_a_bad_date(cli, bad):
    result = cli("metrics", "--since", bad)
    assert result.exit_code == 2
    assert "since" in result.stderr and "not a date" in result.stderr


@pytest.mark.parametrize("bad", ["0", "-3"])
def test_window_must_be_at_least_one(cli, bad):
    result = cli("metrics", "--window", bad)
    assert result.exit_code == 2
    assert "window" in result.stderr


def test_window_rejects_a_non_number(cli):
    assert cli("metrics", "--window", "many").exit_code == 2


# ---------------------------------------------------------------- pass fraction and alarm


def test_goodhart_alarm_needs_a_full_window(cli, kit):
    for i in range(19):
        judge(kit, f"r{i}", "PASS")
    r = metrics(cli)
    assert r["pass_fraction"] == 1.0 and r["goodhart_alarm"] is False  # 19 of 20
    judge(kit, "r19", "PASS-WITH-FINDINGS")
    assert metrics(cli)["goodhart_alarm"] is True
    judge(kit, "r20", "FAIL")
    judge(kit, "r21", "FAIL")
    r = metrics(cli)
    assert r["pass_fraction"] == 0.9  # 18 of the last 20: still at the 0.90 alarm level
    assert r["goodhart_alarm"] is True
    judge(kit, "r22", "FAIL")
    r = metrics(cli)
    assert r["pass_fraction"] == 0.85 and r["goodhart_alarm"] is False
    assert metrics(cli, "--window", "3")["pass_fraction"] == 0.0


def test_metrics_pass_fraction_is_the_writer_disclosure(cli, kit):
    for i, verdict in enumerate(["PASS", "FAIL", "SKIPPED", "PASS-WITH-FINDINGS", "FAIL"] * 5):
        judge(kit, f"r{i}", verdict)
    shown = metrics(cli)["pass_fraction"]
    assert shown == pass_fraction.recent_pass_fraction(kit.store, kit.config.pass_fraction_window)
    # The next verdict discloses, as it stood before it, the same number.
    assert judge(kit, "next", "PASS")["pass_fraction"] == shown
    # 20 judged (SKIPPED excluded) of which PASS and PWF are 10.
    assert shown == 0.5


# ---------------------------------------------------------------- output and failure


def test_human_output_has_banner_until_calibrated(cli, kit):
    seed_table(kit, tp=3)
    result = cli("metrics")
    assert result.exit_code == 0
    assert "ADVISORY" in result.stdout and "no negative class yet" in result.stdout
    assert "tp 3" in result.stdout and "evaluator model" in result.stdout
    assert "kappa: every verdict and every PM label is pass" in result.stdout
    seed_table(kit, 27, 0, 0, 12, prefix="more")
    calibrated = cli("metrics")
    assert "ADVISORY" not in calibrated.stdout
    assert "calibrated" in calibrated.stdout


def test_a_tampered_record_is_left_out_with_the_reason_verify_gives(cli, kit, kit_root):
    seed_table(kit, 2, 0, 0, 1)
    path = ledgerfiles.record_files(kit_root, "acceptances")[1]
    expected = "does not match its digest: the record was edited"
    ledgerfiles.edit(path, b'"label":"pass"', b'"label":"fail"')
    result = cli("metrics", "--json")
    assert result.exit_code == 0
    report = json.loads(result.stdout)
    (left_out,) = [e for e in report["excluded_records"] if e["file"] == str(path)]
    assert expected in left_out["problem"]
    assert report["pairs"] == 2  # the edited label counts neither as fail nor as pass
    verify = cli("ledger", "verify")
    assert verify.exit_code == 1
    assert f"{path}: " in verify.stdout and left_out["problem"] in verify.stdout


def test_window_is_bounded(cli, kit_root):
    assert cli("metrics", "--window", "1000000", "--json").exit_code == 0
    result = cli("metrics", "--window", "99999999999999999999")
    assert result.exit_code == 2
    config = kit_root / "pmos.yaml"
    config.write_text(
        config.read_text().replace(
            "pass_fraction_window: 20", "pass_fraction_window: 99999999999999999999"
        )
    )
    result = cli("eval", "log", "r", "i", "SKIPPED", "why")
    assert result.exit_code == 2 and "pass_fraction_window" in result.stderr
