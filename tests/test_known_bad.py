"""The shipped known-bad cases and `pmos known-bad seed`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
import yaml

import ledgerfiles
from conftest import DIMENSIONS, RUBRIC, ledger_bytes, write_json
from pmos.assets import kit_source
from pmos.gate.known_bad import load_case

CASES = kit_source() / "planning/evals/known-bad"
FOUR_PROBES = {
    "gate-does-not-gate",
    "defensive-code-hides-failure",
    "documented-not-in-effect",
    "sweep-clean-not-semantic",
}


def shipped_cases():
    cases = []
    for folder in sorted(p for p in CASES.iterdir() if p.is_dir()):
        case, problems = load_case(folder)
        assert problems == [], problems
        cases.append(case)
    return cases


def seed(cli) -> dict:
    result = cli("known-bad", "seed", "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_at_least_eight_cases_cover_every_required_defect_class():
    cases = shipped_cases()
    assert len(cases) >= 8
    probes = {c.expected["probe"] for c in cases}
    classes = {c.expected["defect_class"] for c in cases}
    assert probes >= FOUR_PROBES
    assert {"injected-instruction", "test-asserts-nothing", "swallowed-error"} <= classes
    for case in cases:
        assert case.expected["expected_verdict"] == "FAIL"
        assert case.expected["defect"]["problem"].strip()
        assert case.artifacts, case.case_id


def test_each_case_can_be_graded_fail_by_the_writer(cli, tmp_path):
    """The answer key and the contract agree: the verdict a sound gate reaches is storable."""
    seed(cli)
    for case in shipped_cases():
        failed = set(case.expected["failed_criteria"])
        verdict = {
            "run_id": case.run_id,
            "initiative_id": "known-bad",
            "rubric_path": RUBRIC,
            "evaluator_model": "gpt-5",
            "verdict": "FAIL",
            "score": 0.3,
            "note": "Spec: fail. Standards: fail.",
            "axes": {
                "spec": {"verdict": "fail", "rationale": "a criterion failed"},
                "standards": {"verdict": "fail", "rationale": "blocking defect"},
            },
            "criteria": [
                {
                    "id": c["id"],
                    "result": "fail" if c["id"] in failed else "pass",
                    "evidence": "read the artifact: artifact.diff",
                    "verified": True,
                }
                for c in case.contract["done_criteria"]
            ],
            "dimensions": {
                name: {
                    "score": 0.3,
                    "weight": w,
                    "note": "n",
                    "evidence": "artifact.diff:1",
                    "verified": True,
                    "axis": a,
                }
                for name, (w, a) in DIMENSIONS.items()
            },
            "defects": [
                {
                    "severity": case.expected["defect"]["severity"],
                    "where": case.expected["defect"]["where"],
                    "problem": case.expected["defect"]["problem"],
                    "fix": "fix it",
                }
            ],
        }
        path = write_json(tmp_path / f"{case.case_id}.json", verdict)
        result = cli("eval", "record", "--file", str(path))
        assert result.exit_code == 0, (case.case_id, result.output)


def test_seed_registers_each_case_and_labels_it_fail(cli, kit_root):
    data = seed(cli)
    cases = shipped_cases()
    run_ids = [f"known-bad-{c.case_id}" for c in cases]
    assert data["registered"] == run_ids
    assert data["labelled"] == run_ids
    assert {c["probe"] for c in data["cases"]} >= FOUR_PROBES
    runs = json.loads(cli("ledger", "show", "runs", "--json").stdout)
    assert [r["run_id"] for r in runs] == run_ids
    by_id = {c.case_id: c for c in cases}
    for run in runs:
        case = by_id[run["run_id"].removeprefix("known-bad-")]
        assert run["contract"] == case.contract
        assert run["initiative_id"] == "known-bad"
    labels = json.loads(cli("ledger", "show", "acceptances", "--json").stdout)
    assert {(a["run_id"], a["label"], a["by"]) for a in labels} == {
        (r, "fail", "seeded") for r in run_ids
    }
    # The answer key is named, never quoted, in the label's note.
    for acceptance in labels:
        case = by_id[acceptance["run_id"].removeprefix("known-bad-")]
        assert case.expected["defect"]["problem"] not in acceptance["note"]


def test_seeding_twice_registers_nothing_twice(cli, kit_root):
    seed(cli)
    before = ledger_bytes(kit_root)
    again = seed(cli)
    assert again["registered"] == [] and again["labelled"] == []
    assert all(not c["registered"] and not c["labelled"] for c in again["cases"])
    assert ledger_bytes(kit_root) == before
    human = cli("known-bad", "seed")
    assert human.exit_code == 0
    assert "0 run(s) registered, 0 labelled fail" in human.stdout


def test_a_run_registered_earlier_is_only_labelled(cli, kit_root):
    case = shipped_cases()[0]
    contract = kit_root / "c.yaml"
    shutil.copy(CASES / case.case_id / "contract.yaml", contract)
    result = cli(
        "run", "register", "--run-id", case.run_id, "--initiative-id", "known-bad",
        "--builder-model", "seeded", "--contract", str(contract),
    )  # fmt: skip
    assert result.exit_code == 0
    data = seed(cli)
    assert case.run_id not in data["registered"]
    assert case.run_id in data["labelled"]


def test_an_invalid_case_refuses_the_whole_seed(cli, kit_root):
    broken = kit_root / "planning/evals/known-bad/zz-broken"
    broken.mkdir()
    (broken / "contract.yaml").write_text("done_criteria: []\n", encoding="utf-8")
    (broken / "expected.yaml").write_text(
        "case_id: other-name\ntitle: t\nexpected_verdict: PASS\nprobe: vibes\n",
        encoding="utf-8",
    )
    before = ledger_bytes(kit_root)
    result = cli("known-bad", "seed")
    assert result.exit_code == 2
    assert "nothing was seeded" in result.stderr
    assert "zz-broken/contract.yaml" in result.stderr
    assert "expected_verdict" in result.stderr
    assert "holds no artifact" in result.stderr
    assert ledger_bytes(kit_root) == before


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace("case_id: ", "case_id: x"), "must equal the folder name"),
        (lambda t: t.replace("failed_criteria: [c1", "failed_criteria: [c9"), "'c9' is not in"),
    ],
)
def test_the_answer_key_must_match_its_folder_and_contract(tmp_path, edit, message):
    source = CASES / "export-test-asserts-nothing"
    folder = tmp_path / source.name
    shutil.copytree(source, folder)
    expected = folder / "expected.yaml"
    expected.write_text(edit(expected.read_text(encoding="utf-8")), encoding="utf-8")
    case, problems = load_case(folder)
    assert case is None
    assert any(message in p for p in problems), problems


def test_a_kit_without_the_folder_says_so(cli, kit_root):
    shutil.rmtree(kit_root / "planning/evals/known-bad")
    result = cli("known-bad", "seed")
    assert result.exit_code == 2
    assert "known_bad_dir" in result.stderr


def test_concurrent_seeds_register_and_label_each_case_once(kit_root):
    """Real processes seeding at once: each case is one run and one label, no more."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "pmos", "known-bad", "seed", "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    reports = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        reports.append(json.loads(out))
    run_ids = sorted(c.run_id for c in shipped_cases())
    for name in ("runs", "acceptances"):
        stored = ledgerfiles.stored(kit_root, name)
        assert sorted(record["run_id"] for record in stored) == run_ids, name
    # each case is reported labelled (and registered) by exactly one process
    assert sorted(r for report in reports for r in report["labelled"]) == run_ids
    assert sorted(r for report in reports for r in report["registered"]) == run_ids


@pytest.mark.parametrize(
    ("contract", "message"),
    [
        ("- id: c1\n  text: t\n  test_method: m\n", "[schema:type] contract: "),
        ("done_criteria: [c1, c2]\n", "[schema:type] contract/done_criteria/0: "),
        ("done_criteria: c1\n", "[schema:type] contract/done_criteria: "),
    ],
)
def test_a_malformed_contract_is_a_clean_error_and_nothing_is_seeded(
    cli, pmos, kit_root, contract, message
):
    folder = kit_root / "planning/evals/known-bad" / "export-test-asserts-nothing"
    (folder / "contract.yaml").write_text(contract, encoding="utf-8")
    before = ledger_bytes(kit_root)
    case, problems = load_case(folder)
    assert case is None and any(message in p for p in problems), problems
    result = cli("known-bad", "seed")
    assert result.exit_code == 2
    assert "nothing was seeded" in result.stderr and message in result.stderr
    process = pmos("known-bad", "seed")
    assert process.returncode == 2 and "Traceback" not in process.stderr
    assert ledger_bytes(kit_root) == before


def test_a_contract_with_a_duplicate_criterion_id_refuses_the_whole_seed(cli, kit_root):
    folder = kit_root / "planning/evals/known-bad" / "export-test-asserts-nothing"
    contract = folder / "contract.yaml"
    data = yaml.safe_load(contract.read_text(encoding="utf-8"))
    data["done_criteria"].append(dict(data["done_criteria"][0]))
    contract.write_text(yaml.safe_dump(data), encoding="utf-8")
    before = ledger_bytes(kit_root)
    result = cli("known-bad", "seed")
    assert result.exit_code == 2
    assert "nothing was seeded" in result.stderr and "[contract-unique]" in result.stderr
    assert ledger_bytes(kit_root) == before


@pytest.mark.parametrize("broken", ["edited record", "stray file"])
def test_a_broken_acceptances_ledger_does_not_block_seeding_and_verify_names_it(
    cli, kit_root, broken
):
    if broken == "edited record":
        bad = ledgerfiles.forge(
            kit_root,
            "acceptances",
            {"record_id": "acc-x", "recorded_at": "2026-01-01T00:00:00Z", "run_id": "x"},
        )
        ledgerfiles.edit(bad, b'"x"', b'"y"')
    else:
        bad = ledgerfiles.folder(kit_root, "acceptances") / "notes.txt"
        bad.write_text("garbage\n")
    # The bad file is left out by every reader, as verify reports it.
    assert cli("known-bad", "seed").exit_code == 0
    verify = cli("ledger", "verify")
    assert verify.exit_code == 1 and f"{bad}: " in verify.stdout
