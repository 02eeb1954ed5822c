"""The example in skills/evaluator/SKILL.md is a verdict the writer accepts, as written."""

from __future__ import annotations

import json

import yaml

from pmos import markdown
from pmos.assets import kit_source

SKILL = kit_source() / "skills/evaluator/SKILL.md"


def example_blocks() -> dict[str, str]:
    """The skill's Example section: its yaml contract and its json verdict."""
    text = SKILL.read_text(encoding="utf-8")
    example = text[text.index("\n## Example\n") :]
    blocks = [b for b in markdown.parse(example).blocks if isinstance(b, markdown.CodeBlock)]
    found = {b.language: "\n".join(line for _, line in b.lines) for b in blocks}
    assert set(found) == {"yaml", "json"}, found.keys()
    return found


def test_the_example_verdict_is_accepted_for_its_registered_run(cli, kit_root):
    blocks = example_blocks()
    verdict = json.loads(blocks["json"])
    contract = kit_root / "contract.yaml"
    contract.write_text(blocks["yaml"], encoding="utf-8")
    registered = cli(
        "run",
        "register",
        "--run-id",
        verdict["run_id"],
        "--initiative-id",
        verdict["initiative_id"],
        "--builder-model",
        verdict["builder_model"],
        "--contract",
        str(contract),
    )
    assert registered.exit_code == 0, registered.output
    # The calibration cases the example anchored on, as the kit's exemplar log holds them.
    log = kit_root / "planning/evals/exemplars.yaml"
    entries = []
    for case, label in zip(verdict["exemplars"], ("fail", "pass"), strict=True):
        entry = {
            "case_id": case,
            "run_id": case.split("-override-")[0],
            "gate_verdict": "PASS",
            "pm_label": label,
            "override": label == "fail",
            "lesson": "an example case",
            "recorded_at": "2026-11-02T10:15:00Z",
        }
        entries.append(entry)
    log.write_text(json.dumps({"entries": entries}), encoding="utf-8")  # JSON is YAML
    result = cli("eval", "record", "--file", "-", "--json", input=blocks["json"])
    assert result.exit_code == 0, result.output
    stored = json.loads(result.stdout)
    assert stored["verdict"] == "FAIL"
    assert stored["criteria"] == verdict["criteria"]
    assert "flags" not in stored  # registered run, builder and evaluator of different families


def test_the_example_states_the_weighted_sum_it_claims():
    verdict = json.loads(example_blocks()["json"])
    total = sum(d["score"] * d["weight"] for d in verdict["dimensions"].values())
    assert abs(total - verdict["score"]) < 1e-9
    assert f"= {verdict['score']}" in SKILL.read_text(encoding="utf-8")


def test_the_example_contract_is_the_one_the_verdict_grades():
    blocks = example_blocks()
    contract = yaml.safe_load(blocks["yaml"])
    verdict = json.loads(blocks["json"])
    assert [c["id"] for c in contract["done_criteria"]] == [c["id"] for c in verdict["criteria"]]
