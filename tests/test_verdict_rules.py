"""Every rule the verdict writer enforces: a valid and a violating case each.

Violating cases also check that no ledger byte changed.
"""

from __future__ import annotations

from typing import Any

import pytest

import ledgerfiles
from conftest import DIMENSIONS, REGISTER_R, RUBRIC, good_verdict, ledger_bytes, write_json
from pmos.errors import RecordRejected
from pmos.gate import writers
from pmos.store.append import WRITER_FIELDS


def accept(kit, verdict: dict[str, Any]) -> dict[str, Any]:
    return writers.record_verdict(kit, verdict).record


def reject(kit, verdict: Any, rule: str, field: str | None = None) -> RecordRejected:
    before = ledger_bytes(kit.root)
    with pytest.raises(RecordRejected) as info:
        writers.record_verdict(kit, verdict)
    found = {(v.rule, v.field) for v in info.value.violations}
    assert any(r == rule and (field is None or f == field) for r, f in found), found
    assert ledger_bytes(kit.root) == before
    return info.value


def with_scores(verdict: dict[str, Any], score: float) -> dict[str, Any]:
    for dim in verdict["dimensions"].values():
        dim["score"] = score
    verdict["score"] = score
    return verdict


# ------------------------------------------------------------ rubric


def test_rubric_path_must_resolve_inside_the_kit(kit, tmp_path):
    accept(kit, good_verdict())
    reject(kit, good_verdict(rubric_path="planning/evals/nope.md"), "rubric-path", "rubric_path")
    reject(kit, good_verdict(rubric_path="../outside.md"), "rubric-path")
    reject(kit, good_verdict(rubric_path="/etc/passwd"), "rubric-path")


def test_dimensions_must_equal_the_rubrics(kit):
    accept(kit, good_verdict())
    missing = good_verdict()
    del missing["dimensions"]["maintainability"]
    reject(kit, missing, "rubric-dimensions", "dimensions/maintainability")
    extra = good_verdict()
    extra["dimensions"]["vibes"] = dict(extra["dimensions"]["verification"])
    reject(kit, extra, "rubric-dimensions", "dimensions/vibes")
    weight = good_verdict()
    weight["dimensions"]["verification"]["weight"] = 0.2
    weight["dimensions"]["test_quality"]["weight"] = 0.1
    reject(kit, weight, "rubric-dimensions", "dimensions/verification/weight")
    axis = good_verdict()
    axis["dimensions"]["verification"]["axis"] = "standards"
    reject(kit, axis, "rubric-dimensions", "dimensions/verification/axis")


# ------------------------------------------------------------ score


def test_score_is_the_weighted_sum_within_tolerance(kit):
    accept(kit, good_verdict(score=0.904))  # 0.9 +- 0.005 is accepted
    reject(kit, good_verdict(score=0.91), "score-weighted-sum", "score")
    reject(kit, good_verdict(score=0.5), "score-weighted-sum")


def test_score_out_of_range_is_a_schema_violation(kit):
    reject(kit, good_verdict(score=1.2), "schema:maximum", "score")
    reject(kit, good_verdict(score=-0.1), "schema:minimum", "score")


def test_unverified_dimension_scores_at_most_half(kit):
    ok = good_verdict()
    ok["dimensions"]["verification"].update(score=0.5, verified=False, evidence="no CI access")
    ok["score"] = round(0.9 - 0.15 * 0.4, 6)
    stored = accept(kit, ok)
    assert stored["schema_version"] == 2
    assert stored["dimensions"]["verification"]["verified"] is False
    bad = good_verdict()
    # The cap holds whatever the wording: the evidence says nothing of verification.
    bad["dimensions"]["verification"].update(score=0.6, verified=False, evidence="src/a.py:3")
    bad["score"] = round(0.9 - 0.15 * 0.3, 6)
    reject(kit, bad, "unverified-cap", "dimensions/verification/score")


ADMISSIONS = [
    "Unverified: could not run the benchmark",
    "not verified",
    "NOT VERIFIED against the spec",
    "could not run the test suite",
    "Couldn't run it locally",
    "the migration was not tested",
    "unable to reproduce the failure",
]


@pytest.mark.parametrize("evidence", ADMISSIONS)
def test_evidence_admitting_no_verification_needs_verified_false(kit, evidence):
    # The reproduction: evidence admitting no check, scored 1.0, was accepted.
    bad = good_verdict()
    bad["dimensions"]["verification"].update(score=1.0, evidence=evidence)
    bad["score"] = round(0.9 + 0.15 * 0.1, 6)
    error = reject(kit, bad, "verified-admission", "dimensions/verification/verified")
    assert "set verified: false" in str(error)
    missing = good_verdict()
    del missing["dimensions"]["verification"]["verified"]
    missing["dimensions"]["verification"]["evidence"] = evidence
    error = reject(kit, missing, "verified-admission", "dimensions/verification/verified")
    assert "is missing" in str(error)
    ok = good_verdict()
    ok["dimensions"]["verification"].update(score=0.5, verified=False, evidence=evidence)
    ok["score"] = round(0.9 - 0.15 * 0.4, 6)
    accept(kit, ok)


@pytest.mark.parametrize(
    "evidence",
    ["tests/test_api.py:12 verified by running it", "run_tests.sh passed", "unverifiable-ish.py:3"],
)
def test_evidence_that_admits_nothing_is_accepted(kit, evidence):
    ok = good_verdict()
    ok["dimensions"]["verification"]["evidence"] = evidence
    accept(kit, ok)


def test_verified_is_required_of_every_dimension_and_criterion(kit):
    no_dim = good_verdict()
    del no_dim["dimensions"]["maintainability"]["verified"]
    reject(kit, no_dim, "schema:required", "dimensions/maintainability/verified")
    no_crit = good_verdict()
    del no_crit["criteria"][0]["verified"]
    reject(kit, no_crit, "schema:required", "criteria/0/verified")
    reject(kit, good_verdict(schema_version=1), "writer-owned-field", "schema_version")


def test_an_unverified_criterion_is_graded_fail(kit):
    bad = good_verdict()
    bad["criteria"][1].update(verified=False, evidence="could not run the docs build")
    reject(kit, bad, "criterion-unverified", "criteria/1/result")
    criterion_admits = good_verdict()
    criterion_admits["criteria"][0]["evidence"] = "not verified"
    reject(kit, criterion_admits, "verified-admission", "criteria/0/verified")
    ok = good_verdict(verdict="FAIL")
    ok["criteria"][1].update(result="fail", verified=False, evidence="could not run the build")
    ok["axes"]["spec"]["verdict"] = "fail"
    accept(kit, ok)


# ------------------------------------------------------------ combine rule


def defect(severity: str) -> dict[str, str]:
    return {"severity": severity, "where": "src/a.py:3", "problem": "p", "fix": "f"}


def criteria(*results: str) -> list[dict[str, str]]:
    return [
        {"id": f"c{i}", "result": r, "evidence": "src/a.py:1", "verified": True}
        for i, r in enumerate(results, 1)
    ]


COMBINE_CASES = [
    # criteria, defects, score, spec, standards, verdict
    (("pass", "pass"), [], 0.9, "pass", "pass", "PASS"),
    (("pass",), [defect("low"), defect("nit")], 0.9, "pass", "pass", "PASS"),
    (("pass",), [defect("should-fix")], 0.9, "pass", "pass", "PASS-WITH-FINDINGS"),
    (("pass", "fail"), [], 0.9, "fail", "pass", "FAIL"),
    (("pass",), [defect("must-fix")], 0.9, "pass", "fail", "FAIL"),
    (("pass",), [defect("critical")], 0.9, "pass", "fail", "FAIL"),
    (("pass",), [], 0.6, "pass", "fail", "PASS-WITH-FINDINGS"),
    (("pass",), [defect("should-fix")], 0.6, "pass", "fail", "PASS-WITH-FINDINGS"),
    (("fail",), [defect("critical")], 0.3, "fail", "fail", "FAIL"),
]


def build(crit, defects, score, spec, standards, verdict) -> dict[str, Any]:
    v = with_scores(good_verdict(), score)
    v["criteria"] = criteria(*crit)
    v["defects"] = defects
    v["axes"]["spec"]["verdict"] = spec
    v["axes"]["standards"]["verdict"] = standards
    v["verdict"] = verdict
    return v


@pytest.mark.parametrize(
    ("crit", "defects", "score", "spec", "standards", "verdict"), COMBINE_CASES
)
def test_combine_rule_accepts_the_derived_verdict(
    kit, crit, defects, score, spec, standards, verdict
):
    stored = accept(kit, build(crit, defects, score, spec, standards, verdict))
    assert stored["verdict"] == verdict


@pytest.mark.parametrize(
    ("crit", "defects", "score", "spec", "standards", "verdict"), COMBINE_CASES
)
def test_combine_rule_rejects_any_other_verdict(
    kit, crit, defects, score, spec, standards, verdict
):
    for other in {"PASS", "PASS-WITH-FINDINGS", "FAIL"} - {verdict}:
        error = reject(
            kit, build(crit, defects, score, spec, standards, other), "combine-rule", "verdict"
        )
        assert f"declared {other}" in str(error) and f"give {verdict}" in str(error)


def test_declared_axes_must_match_the_derived_ones(kit):
    v = build(("pass", "fail"), [], 0.9, "pass", "pass", "FAIL")
    error = reject(kit, v, "spec-axis", "axes/spec/verdict")
    assert "declared pass, derived fail" in str(error)
    v = build(("pass",), [defect("must-fix")], 0.9, "pass", "pass", "FAIL")
    reject(kit, v, "standards-axis", "axes/standards/verdict")
    v = build(("pass",), [], 0.6, "pass", "pass", "PASS-WITH-FINDINGS")
    error = reject(kit, v, "standards-axis")
    assert "declared pass, derived fail" in str(error)


# ------------------------------------------------------------ SKIPPED


def skipped(**extra: Any) -> dict[str, Any]:
    return {
        "run_id": "run-1",
        "initiative_id": "init-1",
        "verdict": "SKIPPED",
        "score": None,
        "skipped_reason": "builder never pushed the branch",
        **extra,
    }


def test_skipped_needs_a_reason_and_a_null_score(kit):
    stored = accept(kit, skipped())
    assert stored["score"] is None and "axes" not in stored
    reject(
        kit,
        {k: v for k, v in skipped().items() if k != "skipped_reason"},
        "schema:required",
        "skipped_reason",
    )
    reject(kit, skipped(skipped_reason="   "), "schema:pattern", "skipped_reason")
    reject(kit, skipped(score=0.4), "schema:type", "score")


@pytest.mark.parametrize("field", ["axes", "criteria", "dimensions", "defects"])
def test_skipped_carries_no_judgment(kit, field):
    judged = good_verdict()
    reject(kit, skipped(**{field: judged.get(field, [])}), "schema:not")


def test_skipped_reason_only_on_skipped(kit):
    reject(kit, good_verdict(skipped_reason="why"), "schema:not")


# ------------------------------------------------------------ identifiers


@pytest.mark.parametrize("field", ["run_id", "initiative_id", "evaluator_model"])
@pytest.mark.parametrize("bad", ["", "   ", "x" * 201, "run\x1b[31m", "a\nb", "tab\there"])
def test_identifiers_are_bounded_and_printable(kit, field, bad):
    reject(
        kit,
        good_verdict(**{field: bad}),
        "schema:" + ("maxLength" if len(bad) > 200 else "minLength" if bad == "" else "pattern"),
        field,
    )


def test_identifier_of_200_characters_is_accepted(kit):
    accept(kit, good_verdict(run_id="r" * 200))


# ------------------------------------------------------------ evaluator model


def test_evaluator_model_is_required_except_on_skipped(kit):
    v = good_verdict()
    del v["evaluator_model"]
    reject(kit, v, "schema:required", "evaluator_model")
    accept(kit, skipped())


# ------------------------------------------------------------ flags


def test_same_family_builder_and_evaluator_is_flagged(kit):
    writers.register_run(
        kit, run_id="run-1", initiative_id="init-1", builder_model="anthropic/claude-sonnet-4"
    )
    written = writers.record_verdict(kit, good_verdict(evaluator_model="claude-opus-4@2025"))
    assert written.record["flags"] == ["same-family"]
    assert any("cross-family spot-check" in w for w in written.warnings)
    cross = writers.record_verdict(kit, good_verdict(evaluator_model="gpt-5"))
    assert "flags" not in cross.record and cross.warnings == []


def test_builder_model_in_the_verdict_is_used_for_unregistered_runs(kit):
    written = writers.record_verdict(
        kit, good_verdict(builder_model="gemini-2.5-pro", evaluator_model="gemini-3")
    )
    assert written.record["flags"] == ["unregistered-run", "same-family"]


def test_family_map_comes_from_pmos_yaml(kit_root):
    from pmos.kit import open_kit

    custom = (
        (kit_root / "pmos.yaml")
        .read_text()
        .replace("model_families:", "model_families:\n  house: [acme]", 1)
    )
    (kit_root / "pmos.yaml").write_text(custom)
    written = writers.record_verdict(
        open_kit(kit_root), good_verdict(builder_model="acme-1", evaluator_model="acme-2")
    )
    assert "same-family" in written.record["flags"]


def test_unregistered_run_is_flagged_with_a_warning(kit):
    written = writers.record_verdict(kit, good_verdict())
    assert written.record["flags"] == ["unregistered-run"]
    assert any("never registered" in w for w in written.warnings)
    writers.register_run(kit, run_id="run-2", initiative_id="init-1", builder_model="llama-4")
    written = writers.record_verdict(kit, good_verdict(run_id="run-2"))
    assert "flags" not in written.record


# ------------------------------------------------------------ run and contract


def test_verdict_must_match_the_registered_run(kit):
    writers.register_run(kit, run_id="run-1", initiative_id="init-1", builder_model="gpt-5")
    reject(kit, good_verdict(initiative_id="other"), "run-match", "initiative_id")
    reject(kit, good_verdict(builder_model="llama-4"), "run-match", "builder_model")
    accept(kit, good_verdict(builder_model="gpt-5", evaluator_model="claude-opus-4"))


def test_criteria_must_be_the_contracts(kit):
    contract = {
        "done_criteria": [
            {"id": "c1", "text": "t", "test_method": "m"},
            {"id": "c2", "text": "t", "test_method": {"type": "test", "command": "pytest"}},
        ]
    }
    writers.register_run(
        kit, run_id="run-1", initiative_id="init-1", builder_model="gpt-5", contract=contract
    )
    accept(kit, good_verdict(evaluator_model="claude-opus-4"))
    v = good_verdict(evaluator_model="claude-opus-4", criteria=criteria("pass"))
    error = reject(kit, v, "criteria-contract", "criteria")
    assert "'c2' is not graded" in str(error)
    v = good_verdict(evaluator_model="claude-opus-4", criteria=criteria("pass", "pass", "pass"))
    reject(kit, v, "criteria-contract")


def test_duplicate_criteria_are_rejected(kit):
    v = good_verdict(
        criteria=[{"id": "c1", "result": "pass", "evidence": "src/a.py:1", "verified": True}] * 2
    )
    reject(kit, v, "criteria-unique")


def test_run_ids_register_once(kit):
    writers.register_run(kit, run_id="r", initiative_id="i", builder_model="m")
    with pytest.raises(RecordRejected, match="run-unique"):
        writers.register_run(kit, run_id="r", initiative_id="i", builder_model="m")


def test_contract_shape_is_validated(kit, cli, tmp_path):
    bad = tmp_path / "contract.yaml"
    bad.write_text("done_criteria:\n  - id: c1\n    text: t\n")
    before = ledger_bytes(kit.root)
    result = cli(
        *REGISTER_R,
        "--contract",
        str(bad),
    )
    assert result.exit_code == 2
    assert "contract/done_criteria/0/test_method" in result.stderr
    bad.write_text("done_criteria: [\n")
    result = cli(
        *REGISTER_R,
        "--contract",
        str(bad),
    )
    assert result.exit_code == 2 and "not valid YAML" in result.stderr
    assert ledger_bytes(kit.root) == before


def register_with(cli, tmp_path, ids: list[str]):
    contract = {"done_criteria": [{"id": i, "text": "t", "test_method": "m"} for i in ids]}
    path = write_json(tmp_path / "contract.json", contract)
    return cli(*REGISTER_R, "--contract", str(path))


def test_contract_criterion_ids_are_unique(kit, cli, tmp_path):
    before = ledger_bytes(kit.root)
    result = register_with(cli, tmp_path, ["c1", "c2", "c1"])
    assert result.exit_code == 2
    assert "[contract-unique] contract/done_criteria: criterion id 'c1'" in result.stderr
    assert ledger_bytes(kit.root) == before
    with pytest.raises(RecordRejected) as info:
        writers.register_run(
            kit,
            run_id="r",
            initiative_id="i",
            builder_model="m",
            contract={"done_criteria": [{"id": "c1", "text": "t", "test_method": "m"}] * 2},
        )
    assert [(v.rule, v.field) for v in info.value.violations] == [
        ("contract-unique", "contract/done_criteria")
    ]
    assert ledger_bytes(kit.root) == before
    assert register_with(cli, tmp_path, ["c1", "c2"]).exit_code == 0


@pytest.mark.slow
def test_a_large_contract_names_each_repeated_id_once(kit, cli, tmp_path):
    """Issue 16 item 10: the check is one pass (benchmarks/contract.py times it)."""
    ids = [f"c{i}" for i in range(20_000)] + ["c5", "c17", "c5"]
    before = ledger_bytes(kit.root)
    result = register_with(cli, tmp_path, ids)
    assert result.exit_code == 2
    assert result.stderr.count("[contract-unique]") == 2
    assert "criterion id 'c17' appears more than once" in result.stderr
    assert "criterion id 'c5' appears more than once" in result.stderr
    assert ledger_bytes(kit.root) == before
    assert register_with(cli, tmp_path, ids[:20_000]).exit_code == 0


# ------------------------------------------------------------ writer-owned fields


@pytest.mark.parametrize("field", WRITER_FIELDS)
def test_writer_owned_fields_cannot_be_supplied(kit, field):
    reject(kit, good_verdict(**{field: "x"}), "writer-owned-field", field)


def test_unknown_fields_are_rejected(kit):
    reject(kit, good_verdict(colour="blue"), "schema:additionalProperties")
    v = good_verdict()
    v["dimensions"]["verification"]["confidence"] = 1
    reject(kit, v, "schema:additionalProperties", "dimensions/verification")


def test_every_violation_is_reported_at_once(kit, cli, tmp_path):
    v = good_verdict(score=0.95, verdict="FAIL")
    v["dimensions"]["verification"].update(score=0.9, verified=False, evidence="no access")
    path = write_json(tmp_path / "v.json", v)
    result = cli("eval", "record", "--file", str(path))
    assert result.exit_code == 2
    for rule in ("unverified-cap", "score-weighted-sum", "combine-rule"):
        assert f"[{rule}]" in result.stderr


def test_a_rejection_with_json_lists_every_violation_on_stdout(kit, cli, tmp_path):
    """--json: a program reads the refusal, rule by rule, where it reads a success."""
    import json

    v = good_verdict(score=0.95, verdict="FAIL")
    v["dimensions"]["verification"].update(score=0.9, verified=False, evidence="no access")
    path = write_json(tmp_path / "v.json", v)
    before = ledger_bytes(kit.root)
    result = cli("eval", "record", "--file", str(path), "--json")
    assert result.exit_code == 2
    error = json.loads(result.stdout)
    assert error["error"] == "record-rejected" and error["kind"] == "verdict"
    rules = {(e["rule"], e["field"]) for e in error["violations"]}
    assert {"unverified-cap", "score-weighted-sum", "combine-rule"} <= {r for r, _ in rules}
    assert all(set(e) == {"rule", "field", "message"} for e in error["violations"])
    assert "[combine-rule]" in result.stderr  # the human lines stay on stderr
    assert ledger_bytes(kit.root) == before
    # Without --json nothing but the record id ever goes to stdout.
    assert cli("eval", "record", "--file", str(path)).stdout == ""


def test_short_form_and_run_rejections_print_the_same_json_object(kit, cli, tmp_path):
    import json

    result = cli(
        "eval",
        "log",
        "r",
        "i",
        "0.5",
        "PASS",
        RUBRIC,
        "m",
        "--spec",
        "pass",
        "--standards",
        "pass",
        "--json",
    )
    assert result.exit_code == 2
    assert json.loads(result.stdout)["kind"] == "verdict"
    contract = write_json(
        tmp_path / "c.json",
        {
            "done_criteria": [
                {"id": "c1", "text": "a", "test_method": "b"},
                {"id": "c1", "text": "a", "test_method": "b"},
            ]
        },
    )
    result = cli(*REGISTER_R, "--contract", str(contract), "--json")
    assert result.exit_code == 2
    error = json.loads(result.stdout)
    assert error["kind"] == "run" and error["violations"][0]["rule"] == "contract-unique"


def test_non_object_and_bad_json_input(kit, cli, tmp_path):
    assert cli("eval", "record", "--file", "-", input="[1, 2]").exit_code == 2
    result = cli("eval", "record", "--file", "-", input="{not json")
    assert result.exit_code == 2 and "not valid JSON" in result.stderr
    result = cli("eval", "record", "--file", "-", input='{"score": NaN}')
    assert result.exit_code == 2
    result = cli("eval", "record", "--file", str(tmp_path / "missing.json"))
    assert result.exit_code == 2 and "cannot read" in result.stderr


def test_stdin_input_and_json_output(kit, cli):
    import json

    result = cli(
        "eval",
        "record",
        "--file",
        "-",
        "--json",
        "--allow-unknown-run",
        input=json.dumps(good_verdict()),
    )
    assert result.exit_code == 0, result.stderr
    stored = json.loads(result.stdout)
    assert stored["schema_version"] == 2 and stored["recorded_at"].endswith("Z")
    assert stored["pass_fraction"] == "unknown"
    assert ledgerfiles.stored(kit.root, "evals") == [stored]  # what was printed is what is stored


def test_dimension_table_matches_default_rubric(kit):
    from pmos.gate.rubric import load_rubric

    rubric = load_rubric(kit.root, "planning/evals/agent-run-eval-rubric.md")
    assert {d.name: (d.weight, d.axis) for d in rubric.dimensions} == DIMENSIONS
