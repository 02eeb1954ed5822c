"""The writers' rules applied again to stored records (issue 11.8): valid records
pass, forged ones are named with the rule they break.

Valid records come from the writers; forged ones are those records edited as a
hand-made ledger line would be (no ledger file is written by hand here).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from conftest import RUBRIC, good_verdict
from pmos.gate import writers
from pmos.gate.recheck import Context, stored_record_problems
from pmos.gate.versions import AddedByChange

CONTRACT = {
    "done_criteria": [
        {"id": "c1", "text": "the API answers", "test_method": "pytest"},
        {"id": "c2", "text": "the flag is documented", "test_method": "read README.md"},
    ]
}


def rules(kit, kind: str, record: dict[str, Any], *, order=None) -> set[str]:
    context = Context(kit, order=order) if order is not None else None
    return {v.rule for v in stored_record_problems(kit, kind, record, context=context)}


#: A version-1 record checked as one added to a kit of version-1 records only: the
#: rules of its own version, and nothing later than it (pmos.gate.versions).
LEGACY = AddedByChange(lambda kind: 1)


def stored_verdict(kit, **overrides) -> dict[str, Any]:
    return writers.record_verdict(kit, good_verdict(**overrides)).record


def test_records_the_writers_stored_pass(kit):
    writers.register_run(
        kit, run_id="run-1", initiative_id="init-1", builder_model="claude-x", contract=CONTRACT
    )
    run = writers.register_run(kit, run_id="run-2", initiative_id="i", builder_model="m").record
    full = stored_verdict(kit)
    short = writers.record_short_verdict(
        kit,
        run_id="run-1",
        initiative_id="init-1",
        verdict="PASS",
        score=0.9,
        rubric_path=RUBRIC,
        evaluator_model="gpt-5",
        standards="pass",
        criteria=[
            {"id": "c1", "result": "pass", "verified": True, "evidence": "tests/t.py::c1"},
            {"id": "c2", "result": "pass", "verified": True, "evidence": "tests/t.py::c2"},
        ],
    ).record
    skip = writers.record_short_verdict(
        kit, run_id="run-3", initiative_id="i", verdict="SKIPPED", skipped_reason="no time"
    ).record
    label = writers.record_acceptance(kit, run_id="run-1", label="pass", by="pm").record
    context = Context(kit)
    for kind, record in (
        ("runs", run),
        ("evals", full),
        ("evals", short),
        ("evals", skip),
        ("acceptances", label),
    ):
        assert stored_record_problems(kit, kind, record, context=context) == [], (kind, record)


def test_the_forged_pass_with_score_001_and_a_failed_spec_axis(kit):
    """The issue's reproduction: a hand-made PASS, score 0.01, spec axis fail."""
    forged = stored_verdict(kit)
    for dimension in forged["dimensions"].values():
        dimension["score"] = 0.01
    forged["score"] = 0.01
    forged["axes"]["spec"]["verdict"] = "fail"
    found = stored_record_problems(kit, "evals", forged)
    by_rule = {v.rule: v for v in found}
    assert {"spec-axis", "standards-axis"} <= set(by_rule)
    assert "below" in by_rule["standards-axis"].message or "threshold" in (
        by_rule["standards-axis"].message
    )
    short = writers.record_short_verdict(
        kit,
        run_id="run-9",
        initiative_id="i",
        verdict="FAIL",
        score=0.3,
        rubric_path=RUBRIC,
        evaluator_model="gpt-5",
        spec="fail",
        standards="fail",
    ).record
    short.update(
        verdict="PASS",
        score=0.01,
        axes={"spec": {"verdict": "fail"}, "standards": {"verdict": "pass"}},
    )
    assert {"standards-axis", "combine-rule"} <= rules(kit, "evals", short)


@pytest.mark.parametrize(
    ("edit", "rule"),
    [
        (lambda v: v.update(score=0.5), "score-weighted-sum"),
        (lambda v: v.update(verdict="FAIL"), "combine-rule"),
        (lambda v: v["axes"]["standards"].update(verdict="fail"), "standards-axis"),
        (lambda v: v["dimensions"]["verification"].update(weight=0.2), "rubric-dimensions"),
        (lambda v: v["dimensions"].pop("maintainability"), "rubric-dimensions"),
        (lambda v: v["dimensions"]["verification"].update(verified=False), "unverified-cap"),
        (
            lambda v: v["dimensions"]["verification"].update(evidence="could not run it"),
            "verified-admission",
        ),
        (lambda v: v["criteria"][0].update(verified=False), "criterion-unverified"),
        (lambda v: v.update(rubric_path="planning/evals/nope.md"), "rubric-path"),
        (lambda v: v.update(colour="blue"), "schema:additionalProperties"),
        (lambda v: v["criteria"].append(dict(v["criteria"][0])), "criteria-unique"),
    ],
)
def test_each_verdict_rule_is_applied_again(kit, edit, rule):
    forged = copy.deepcopy(stored_verdict(kit))
    edit(forged)
    assert rule in rules(kit, "evals", forged)


def test_the_registered_contract_is_graded_in_either_form(kit):
    writers.register_run(
        kit, run_id="run-1", initiative_id="init-1", builder_model="claude-x", contract=CONTRACT
    )
    full = stored_verdict(kit)
    assert rules(kit, "evals", full) == set()
    ungraded = copy.deepcopy(full)
    ungraded["criteria"] = ungraded["criteria"][:1]
    assert rules(kit, "evals", ungraded) == {"criteria-contract"}
    other = copy.deepcopy(full)
    other["initiative_id"] = "elsewhere"
    assert rules(kit, "evals", other) == {"run-match"}
    short = writers.record_short_verdict(
        kit,
        run_id="run-9",
        initiative_id="init-1",
        verdict="PASS",
        score=0.9,
        rubric_path=RUBRIC,
        evaluator_model="gpt-5",
        spec="pass",
        standards="pass",
    ).record
    short["run_id"] = "run-1"  # a short verdict with no criteria, moved onto the contract run
    assert rules(kit, "evals", short) == {"criteria-contract"}
    # A version 1 short verdict graded no criteria then, and is judged by version 1 rules
    # (in a kit of version 1 records; after a version 2 one it is version-forward).
    legacy = {**short, "schema_version": 1}
    assert rules(kit, "evals", legacy, order=LEGACY) == set()
    assert rules(kit, "evals", legacy) == {"version-forward"}  # outside git, after version 2


def test_version_1_verdicts_keep_version_1_rules(kit):
    old = copy.deepcopy(stored_verdict(kit))
    old["schema_version"] = 1
    for dimension in old["dimensions"].values():
        del dimension["verified"]
    for criterion in old["criteria"]:
        del criterion["verified"]
    assert rules(kit, "evals", old, order=LEGACY) == set()
    old["dimensions"]["verification"]["evidence"] = "not verified, sorry"
    assert rules(kit, "evals", old, order=LEGACY) == set()  # no admission rule before version 2
    old["dimensions"]["verification"]["evidence"] = "unverified"
    assert rules(kit, "evals", old, order=LEGACY) == {"unverified-cap"}  # score 0.9 > 0.5
    v2 = copy.deepcopy(old)
    v2["schema_version"] = 2
    assert "schema:required" in rules(kit, "evals", v2)


def test_run_rules(kit):
    first = writers.register_run(
        kit, run_id="run-1", initiative_id="i", builder_model="m", contract=CONTRACT
    ).record
    assert rules(kit, "runs", first) == set()
    again = {**first, "record_id": "run-forged"}
    assert rules(kit, "runs", again) == {"run-unique"}
    doubled = copy.deepcopy(first)
    doubled["contract"]["done_criteria"].append(dict(CONTRACT["done_criteria"][0]))
    assert "contract-unique" in rules(kit, "runs", doubled)


def test_label_rules(kit, kit_root):
    verdict = stored_verdict(kit)
    label = writers.record_acceptance(kit, run_id="run-1", label="pass", by="pm").record
    assert label["gate_record_id"] == verdict["record_id"]
    assert rules(kit, "acceptances", label) == set()
    assert rules(kit, "acceptances", {**label, "gate_record_id": "ev-none"}) == {"gate-record"}
    assert rules(kit, "acceptances", {**label, "gate_verdict": "FAIL"}) == {"gate-record"}
    assert rules(kit, "acceptances", {**label, "run_id": "run-2"}) == {"gate-record"}
    assert rules(kit, "acceptances", {**label, "gate_record_id": None}) == {"gate-record"}
    with (kit_root / "pmos.yaml").open("a", encoding="utf-8") as config:
        config.write("signing:\n  allowed_signers: allowed_signers\n  required: true\n")
    (kit_root / "allowed_signers").write_text("")
    from pmos.kit import open_kit

    signed_kit = open_kit(kit_root)
    found = stored_record_problems(signed_kit, "acceptances", label)
    assert [(v.rule, v.field) for v in found] == [("label-signature", "by")]
    assert "unsigned label" in found[0].message


def test_other_kinds_get_their_schema(kit):
    assert stored_record_problems(kit, "tasks", {"task_id": "t"})  # far from a task record
    assert stored_record_problems(kit, "evals", "not a record")
