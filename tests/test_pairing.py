"""The pairing rule: a label judges the verdict it names (issue 11, item 4).

Records come from the real writers. The store may hand records over in any
order (a packed layout need not be chronological), so one test feeds the
reader the same real records newest first: the pairs must not change.
"""

from __future__ import annotations

import numpy as np
import pytest

from pmos.calibration import pairs
from pmos.calibration.judged import Label, LatestLabels, Verdict, latest_verdicts
from pmos.calibration.metrics import compute_metrics, scored_pairs
from pmos.gate.latest import instant_key, per_run, verdicts_per_run
from pmos.gate.writers import record_verdict
from test_metrics import judge, label, metrics, seed_table


def test_a_label_stays_with_the_verdict_it_judged(cli, kit):
    # The reproduction: labelled fail against a FAIL, then given a later PASS.
    first = judge(kit, "r1", "FAIL")
    stored = label(kit, "r1", "fail")
    assert stored["gate_record_id"] == first["record_id"]
    judge(kit, "r1", "PASS")
    r = metrics(cli)
    assert r["confusion"] == {"tp": 0, "fn": 0, "fp": 0, "tn": 1}  # not a false positive
    assert r["labels_superseded"] == 1
    assert r["unlabeled_verdicts"] == 0
    label(kit, "r1", "pass")  # the PM judges the new verdict
    r = metrics(cli)
    assert r["confusion"] == {"tp": 1, "fn": 0, "fp": 0, "tn": 0}
    assert r["labels_superseded"] == 0


def test_a_label_given_before_any_judgement_judges_nothing(cli, kit):
    stored = label(kit, "r1", "pass")
    assert stored["gate_record_id"] is None
    assert metrics(cli)["labels_without_verdict"] == 1
    judge(kit, "r1", "PASS")
    r = metrics(cli)
    assert r["pairs"] == 0 and r["labels_without_verdict"] == 0
    assert r["labels_superseded"] == 1 and r["unlabeled_verdicts"] == 1


def test_a_skip_after_the_label_changes_nothing(cli, kit):
    judge(kit, "r1", "PASS")
    label(kit, "r1", "pass")
    judge(kit, "r1", "SKIPPED")
    r = metrics(cli)
    assert r["confusion"]["tp"] == 1 and r["labels_superseded"] == 0


def test_records_in_any_order_give_the_same_pairs(kit, monkeypatch):
    seed_table(kit, 3, 1, 1, 3)
    judge(kit, "r-tp-0", "FAIL")  # superseded
    label(kit, "late", "fail")
    judge(kit, "late", "PASS")  # judges nothing
    in_order = compute_metrics(kit)
    real = pairs.batches

    def newest_first(store, kind, **options):
        rows = [row for batch in real(store, kind, **options) for row in batch]
        return [rows[::-1]]

    monkeypatch.setattr(pairs, "batches", newest_first)
    shuffled = compute_metrics(kit)
    for key in ("confusion", "labels_superseded", "unlabeled_verdicts", "kappa", "kappa_ci95"):
        assert shuffled[key] == in_order[key], key
    assert in_order["labels_superseded"] == 2


def _row(verdict: Verdict):
    from types import SimpleNamespace as Row

    return Row(
        run_id="r1",
        verdict="PASS" if verdict.passed else "FAIL",
        evaluator_model=verdict.model,
        record_id=verdict.record_id,
        recorded_at=verdict.recorded_at,
        score=verdict.score,
        form="full" if verdict.full else "short",
    )


def _judged(*verdicts):
    """Run r1's verdicts, oldest first, as the calibration reader keeps them."""
    found = latest_verdicts([[_row(v) for v in verdicts]], window=1)
    return pairs.Verdicts(found, None, {})  # type: ignore[arg-type]


# PASS, score .9, then FAIL, score .3: both short verdicts of run r1.
R1 = hash("r1")
EARLY = Verdict("2026-01-01T00:00:00.000000Z", "ev-1", "gpt-5", False, True, 0.9, None, R1)
LATE = Verdict("2026-01-03T00:00:00.000000Z", "ev-2", "gpt-5", False, False, 0.3, None, R1)


def _label(at: str, passed: bool, gate_id: str | None) -> LatestLabels:
    return LatestLabels.of({"r1": Label(at, passed, gate_id, None, "acc-1")})


def test_a_label_naming_an_earlier_verdict_pairs_with_it():
    named = _label("2026-01-04T00:00:00.000000Z", False, "ev-1")
    paired = pairs.pair(_judged(EARLY, LATE), named, pairs.Scope(), None)
    assert paired.gate == [1] and paired.pm == [0] and paired.score == [0.9]
    assert paired.superseded == [1]


def test_a_label_naming_no_judged_verdict_judges_the_latest_before_it():
    """An older writer's label (no gate_record_id) or one naming a SKIPPED verdict."""
    judged = _judged(EARLY, LATE)
    after = _label("2026-01-04T00:00:00.000000Z", True, None)
    paired = pairs.pair(judged, after, pairs.Scope(), None)
    assert paired.gate == [0] and paired.superseded == [0]
    skip = _label("2026-01-04T00:00:00.000000Z", True, "ev-skip")
    assert pairs.pair(judged, skip, pairs.Scope(), None).gate == [0]
    before = _label("2026-01-02T00:00:00.000000Z", True, None)
    paired = pairs.pair(judged, before, pairs.Scope(), None)
    assert paired.gate == [] and paired.superseded == [1] and paired.unlabelled == [1]


def test_earlier_verdicts_keep_numbers_not_strings():
    judged = _judged(EARLY, LATE)
    assert judged.judged.verdict("r1") == LATE._replace(record_id=None)
    assert judged.judged.id_hashes.tolist() == [hash("ev-2")]
    assert judged.judged.earlier.ats is None
    earlier = judged.judged.earlier
    asked = np.array([hash("ev-1"), hash("ev-1"), hash("ev-2")])
    assert earlier.find(np.array([R1, hash("r2"), R1]), asked).tolist() == [
        0,
        -1,  # another run's
        -1,  # the latest, not superseded
    ]
    assert earlier.scores.tolist() == [0.9] and earlier.codes.tolist() == [1]  # gpt-5, short, pass


def test_the_store_keeps_the_latest_by_time_then_record_id():
    """Rows out of time order, and two at one instant: the answer is by meaning."""
    from types import SimpleNamespace as Row

    def verdict(at: str, record_id: str, word: str) -> Row:
        return Row(
            run_id="r1",
            verdict=word,
            evaluator_model="gpt-5",
            record_id=record_id,
            recorded_at=f"2026-01-0{at}T00:00:00.000000Z",
            score=0.5,
            form="short",
        )

    rows = [
        verdict("3", "ev-b", "FAIL"),
        verdict("1", "ev-z", "PASS"),
        verdict("3", "ev-a", "PASS"),
    ]
    found = latest_verdicts([rows], window=10)
    assert found.id_hashes.tolist() == [hash("ev-b")] and found.verdict("r1").passed is False
    assert len(found.earlier) == 2 and list(found.recent) == ["FAIL", "PASS", "PASS"]
    spans = per_run(rows)
    assert (spans["r1"].first.record_id, spans["r1"].latest.record_id) == ("ev-z", "ev-b")
    skip = verdict("4", "ev-c", "SKIPPED")
    both = verdicts_per_run([*rows, skip])["r1"]
    assert both.latest is skip and both.judged.record_id == "ev-b"


def test_scored_pairs_are_the_judged_verdicts(kit, verdict):
    record_verdict(kit, verdict)  # full form, score 0.9, PASS, run-1
    label(kit, "run-1", "pass")
    judge(kit, "r2", "FAIL")
    label(kit, "r2", "pass")
    judge(kit, "r2", "PASS")  # superseded: r2's pair stays the FAIL
    found = scored_pairs(kit)
    assert [(p.run_id, p.form, p.score, p.gate_pass, p.pm_pass) for p in found] == [
        ("r2", "short", 0.3, False, True),
        ("run-1", "full", 0.9, True, True),
    ]
    assert {p.evaluator_model for p in found} == {"gpt-5"}
    assert scored_pairs(kit, model="nobody") == []


@pytest.mark.parametrize("stamp", ["2026-01-01T00:00:00+00:00", "2026-01-01t00:00:00z"])
def test_other_rfc3339_layouts_are_ordered_as_instants(stamp):
    assert instant_key(stamp) == "2026-01-01T00:00:00.000000Z"
    assert instant_key("2026-01-01T01:00:00+01:00") == "2026-01-01T00:00:00.000000Z"


def test_reading_and_pairing_leave_the_garbage_collector_as_it_was(kit):
    """The collector waits while both ledgers are read and paired (nothing made there
    holds a cycle), and is as the caller had it afterwards: running, or paused."""
    import gc

    judge(kit, "r1", "PASS")
    label(kit, "r1", "pass")
    scope = pairs.Scope()
    assert gc.isenabled()
    assert pairs.read_and_pair(kit, scope, 10, None).gate == [1]
    assert gc.isenabled()
    gc.disable()
    try:
        assert pairs.read_and_pair(kit, scope, 10, None).gate == [1]
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_loose_labels_are_gathered_for_until_their_screening_is_recalled(cli, kit):
    """read_and_pair gathers the verdicts loose labels name only while some loose
    label's screening outcome is not in the cache (by the digest its file's name
    carries): a reading fills the cache, the next needs nothing gathered, and a
    label written since (or a verdict, which the outcomes were checked beside)
    makes it gather again. The report is the same either way."""
    from pmos.gate.screen import KitScreen
    from pmos.store.read import loose_recalled

    judge(kit, "r1", "PASS")
    label(kit, "r1", "pass")

    def recalled() -> bool:
        return loose_recalled(kit.store, "acceptances", KitScreen(kit))

    assert not recalled()  # nothing screened yet
    first = metrics(cli)
    assert recalled()
    assert metrics(cli) == first
    judge(kit, "r2", "FAIL")
    assert not recalled()  # the eval ledger changed: the outcomes are checked again
    metrics(cli)
    assert recalled()
    label(kit, "r2", "fail")
    assert not recalled()  # a label never screened
    after = metrics(cli)
    assert recalled() and after != first
