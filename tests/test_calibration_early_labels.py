"""Seeded cases and early labels count (issue 26, item 3).

A seeded known-bad case's answer key pairs with the case's judged verdicts
whenever they come, reported apart (``seeded_pairs``) and never in the PM's
classes; a PM label written before a run's first judged verdict judged no
verdict, so the run goes back to the acceptance queue. ``pmos queue`` and
``pmos metrics`` agree on that debt in every order of events.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from pmos.calibration.metrics import compute_metrics
from pmos.calibration.queue import compute_queue
from pmos.gate.known_bad import load_cases
from pmos.gate.writers import record_acceptance, record_short_verdict, register_run
from pmos.kit import open_kit
from test_metrics import judge, label, metrics, seed_table

RUBRIC = "planning/evals/agent-run-eval-rubric.md"


def queue(cli) -> dict:
    result = cli("queue", "--json")
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def judge_case(kit, case, word: str) -> None:
    """A short-form verdict on a seeded case, grading its contract's criteria."""
    failed = set(case.expected["failed_criteria"]) if word == "FAIL" else set()
    record_short_verdict(
        kit,
        run_id=case.run_id,
        initiative_id="known-bad",
        verdict=word,
        score=0.3 if word == "FAIL" else 0.9,
        rubric_path=RUBRIC,
        evaluator_model="gpt-5",
        standards="fail" if word == "FAIL" else "pass",
        # Each grade cites the case's contract file as its evidence (a verified
        # grade must cite something pmos can check).
        criteria=[
            {
                "id": c["id"],
                "result": "fail" if c["id"] in failed else "pass",
                "verified": True,
                "evidence": "contract.yaml",
            }
            for c in case.contract["done_criteria"]
        ],
    )


def test_seeded_cases_pair_with_their_later_verdicts_and_are_reported_apart(cli, kit):
    assert cli("known-bad", "seed").exit_code == 0
    cases = load_cases(kit)
    assert len(cases) >= 8
    # The gate judges every case after seeding: FAIL, except the first it misses.
    for i, case in enumerate(cases):
        judge_case(kit, case, "PASS" if i == 0 else "FAIL")
    seed_table(kit, tp=20)
    r = metrics(cli)
    assert (r["seeded_pairs"], r["seeded_caught"]) == (len(cases), len(cases) - 1)
    # Never in the PM's classes: 20 pass pairs and no negative class yet.
    assert r["pairs"] == 20 and r["confusion"]["tn"] == r["confusion"]["fp"] == 0
    assert r["calibrated"] is False and "no negative class yet" in r["calibration_reason"]
    assert r["labels_superseded"] == 0 and r["acceptance_debt"] == 0
    assert r["by_model"]["gpt-5"]["seeded_pairs"] == len(cases)
    assert queue(cli)["acceptance_debt"] == []
    # A later verdict of a case pairs with its answer key in turn.
    judge_case(kit, cases[0], "FAIL")
    r = metrics(cli)
    assert (r["seeded_pairs"], r["seeded_caught"], r["acceptance_debt"]) == (
        len(cases),
        len(cases),
        0,
    )


def test_a_label_before_the_first_verdict_puts_the_run_back_in_the_queue(cli, kit):
    stored = label(kit, "r1", "pass")
    assert stored["gate_record_id"] is None
    assert queue(cli)["acceptance_debt"] == []  # nothing judged: nothing owed
    verdict = judge(kit, "r1", "PASS")
    r = metrics(cli)
    assert (r["pairs"], r["acceptance_debt"], r["labels_superseded"]) == (0, 1, 1)
    [owed] = queue(cli)["acceptance_debt"]
    assert (owed["run_id"], owed["record_id"], owed["label_superseded"]) == (
        "r1",
        verdict["record_id"],
        True,
    )
    assert "label judged an older verdict or none" in cli("queue").stdout
    label(kit, "r1", "pass")  # the PM labels again, now seeing the verdict
    r = metrics(cli)
    assert (r["pairs"], r["acceptance_debt"], r["labels_superseded"]) == (1, 0, 0)
    assert queue(cli)["acceptance_debt"] == []


def test_a_pm_label_on_a_seeded_case_is_the_pms(cli, kit):
    assert cli("known-bad", "seed").exit_code == 0
    case = load_cases(kit)[0]
    judge_case(kit, case, "FAIL")
    record_acceptance(kit, run_id=case.run_id, label="fail", by="pm-alex")
    r = metrics(cli)
    assert (r["pairs"], r["confusion"]["tn"], r["seeded_pairs"]) == (1, 1, 0)


# ---------------------------------------------------------------- any order of events

RUNS = ("a", "b", "known-bad-p")
EVENTS = st.lists(
    st.tuples(
        st.sampled_from(["register", "verdict", "label", "supersede"]),
        st.sampled_from(RUNS),
        st.sampled_from(["PASS", "FAIL", "SKIPPED"]),
        st.booleans(),
    ),
    min_size=1,
    max_size=12,
)


def _apply(kit, events) -> dict[str, bool]:
    """Write the events through the library writers; return the expected debt per run:
    judged, and not labelled since its latest judged verdict (a seeded answer key
    judges whatever comes)."""
    registered: set[str] = set()
    judged: set[str] = set()
    judged_after_label: dict[str, bool] = {}
    labelled_by: dict[str, str] = {}
    for kind, run, word, flag in events:
        initiative = "known-bad" if run.startswith("known-bad-") else "init-1"
        if kind == "register":
            if run not in registered:
                register_run(kit, run_id=run, initiative_id=initiative, builder_model="m")
                registered.add(run)
        elif kind in ("verdict", "supersede"):
            if kind == "supersede" and run not in judged:
                continue  # a newer verdict supersedes only a judged run's
            if kind == "supersede" and word == "SKIPPED":
                word = "FAIL"
            judge(kit, run, word, initiative=initiative)
            if word != "SKIPPED":
                judged.add(run)
                judged_after_label[run] = True
        else:
            by = "seeded" if run.startswith("known-bad-") and flag else "pm-alex"
            record_acceptance(kit, run_id=run, label="pass" if flag else "fail", by=by)
            labelled_by[run] = by
            judged_after_label[run] = False
    return {
        run: run in judged
        and (run not in labelled_by or (labelled_by[run] != "seeded" and judged_after_label[run]))
        for run in RUNS
    }


@settings(max_examples=20)
@given(events=EVENTS)
def test_queue_and_metrics_agree_in_every_order(kit_template, events):
    with tempfile.TemporaryDirectory(dir="/dev/shm" if Path("/dev/shm").is_dir() else None) as d:
        root = Path(d) / "kit"
        kit_template.copy_to(root)
        kit = open_kit(root)
        expected = _apply(kit, events)
        owed = {item["run_id"] for item in compute_queue(kit).acceptance_debt}
        report = compute_metrics(kit)
        assert owed == {run for run, debt in expected.items() if debt}
        assert report["acceptance_debt"] == len(owed)
        assert sum(m["acceptance_debt"] for m in report["by_model"].values()) == len(owed)
