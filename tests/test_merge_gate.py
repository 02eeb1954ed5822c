"""`pmos gate`: whether a change may merge, judged by the rules of the branch it merges into.

Every test works in a product repository with a bare origin, a kit at
product/pmos, a PM signing with a real ssh-keygen key and feature branches,
with git's default settings; records are made through the real CLI writers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import RUBRIC
from gate_support import PM, Product, git, keygen, make_product


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("keys")
    return {name: keygen(folder, name) for name in ("pm", "evaluator")}


@pytest.fixture
def product(tmp_path, keys, cli, monkeypatch) -> Product:
    made = make_product(tmp_path, keys, cli)
    monkeypatch.setenv("PMOS_ROOT", str(made.kit))
    monkeypatch.chdir(made.repo)
    made.branch("feature")
    return made


def honest_run(product: Product, run: str = "r1") -> None:
    product.register(run)
    product.verdict(run)
    product.label(run)


def test_a_passing_verdict_with_a_signed_pm_pass_label_may_merge(product):
    honest_run(product)
    product.commit()
    code, report = product.gate("--base", "origin/main")
    assert code == 0, report["reasons"]
    assert report["decision"] == "may-merge"
    [run] = report["runs"]
    assert run["run_id"] == "r1" and run["decision"] == "pass" and run["mode"] == "advisory"
    assert run["verdict"] == "PASS" and run["label"] == "pass"


def reasons(report) -> str:
    return "\n".join(report["reasons"])


def test_a_fail_verdict_may_not_merge(product):
    product.register("r1")
    product.verdict("r1", "FAIL")
    product.commit()
    code, report = product.gate("--base", "origin/main")
    assert code == 1
    assert "its latest judged verdict" in reasons(report) and "is FAIL" in reasons(report)
    assert report["runs"][0]["decision"] == "fail"


def pm_fail_label(product) -> dict:
    """A run judged PASS whose PM label is ``fail``, committed; the gate's report."""
    product.register("r1")
    product.verdict("r1")
    product.label("r1", "fail")
    product.commit()
    code, report = product.gate("--base", "origin/main")
    assert code == 1
    assert "the PM labelled it fail" in reasons(report)
    return report


def test_a_pm_fail_label_may_not_merge(product):
    pm_fail_label(product)


def test_the_gate_judges_the_committed_bytes_whatever_the_checkout_holds(product):
    committed = pm_fail_label(product)
    # A build step rewrites the checkout: the label now says pass, the runs are gone.
    [label] = (product.kit / "state/acceptances").rglob("*.json")
    text = label.read_bytes()
    assert b'"label":"fail"' in text
    label.write_bytes(text.replace(b'"label":"fail"', b'"label":"pass"'))
    for path in (product.kit / "state/runs").rglob("*.json"):
        path.unlink()
    code, report = product.gate("--base", "origin/main")
    assert code == 1
    assert report["runs"] == committed["runs"] and report["reasons"] == committed["reasons"]


def test_an_unlabelled_run_needs_a_pm_label_while_the_gate_is_advisory(product):
    product.register("r1")
    product.verdict("r1")
    product.commit()
    code, report = product.gate("--base", "origin/main")
    assert code == 1
    assert "needs a PM pass label" in reasons(report)
    assert "advisory for 'gpt-5'" in reasons(report)


def test_an_unregistered_run_and_a_skipped_verdict_may_not_merge(product):
    # An unregistered run's verdict is written only when asked for (a typo otherwise).
    product.verdict("r1", "PASS", "gpt-5", "shop", "--allow-unknown-run")
    product.label("r1")
    product.register("r2")
    product.verdict("r2")
    product.label("r2")
    product.ok("eval", "log", "r2", "shop", "SKIPPED", "no time to judge", RUBRIC, "gpt-5")
    product.commit()
    code, report = product.gate("--base", "origin/main")
    assert code == 1
    text = reasons(report)
    assert "run r1: not registered" in text
    assert "run r2: its latest verdict" in text and "is SKIPPED" in text


def test_the_evaluators_key_added_to_allowed_signers_is_a_policy_change(product, keys):
    """The evaluator adds its own key for the PM's principal and labels its run."""
    product.edit(".pmos/allowed_signers", f"{PM} {public_key(keys['evaluator'])}\n", append=True)
    product.register("r1")
    product.verdict("r1")
    product.label("r1", key="evaluator")
    product.commit()
    code, report = product.gate("--base", "origin/main")
    assert code == 1
    assert [c["path"] for c in report["policy_changes"]["changed"]] == [".pmos/allowed_signers"]
    assert report["policy_changes"]["approved"] is False
    text = reasons(report)
    assert "policy change not approved: .pmos/allowed_signers" in text
    # The label is checked against the base's allowed signers, which never listed the key.
    assert "does not allow to sign as 'ana@example.com'" in text


def public_key(key: Path) -> str:
    return " ".join(key.with_suffix(".pub").read_text().split()[:2])


def test_signing_required_turned_off_is_a_policy_change_and_unsigned_labels_still_fail(product):
    config = product.kit / "pmos.yaml"
    config.write_text(config.read_text().replace("required: true", "required: false"))
    product.register("r1")
    product.verdict("r1")
    product.label("r1", key=None)
    product.commit()
    code, report = product.gate("--base", "origin/main")
    assert code == 1
    text = reasons(report)
    assert "policy change not approved: pmos.yaml" in text
    assert "unsigned label" in text


def test_lowered_thresholds_are_a_policy_change(product):
    config = product.kit / "pmos.yaml"
    text = config.read_text().replace("kappa_threshold: 0.60", "kappa_threshold: 0.0")
    config.write_text(text.replace("min_pairs: 20", "min_pairs: 1"))
    honest_run(product)
    product.commit()
    code, report = product.gate("--base", "origin/main")
    assert code == 1
    assert "policy change not approved: pmos.yaml" in reasons(report)


def test_a_rubric_with_threshold_zero_added_is_a_policy_change(product):
    rubric = product.kit / "planning/evals/agent-run-eval-rubric.md"
    lenient = rubric.read_text().replace("threshold: 0.", "threshold: 0.0 #", 1)
    product.edit("planning/evals/lenient-rubric.md", lenient)
    honest_run(product)
    product.commit()
    code, report = product.gate("--base", "origin/main")
    assert code == 1
    changed = report["policy_changes"]["changed"]
    assert changed == [
        {
            "path": "planning/evals/lenient-rubric.md",
            "change": "added",
            "sha256": changed[0]["sha256"],
        }
    ]
    assert "policy change not approved" in reasons(report)


def test_a_hand_written_override_anchor_is_a_policy_change(product):
    product.edit("planning/evals/overrides/r9.yaml", "# an override nobody made\n")
    honest_run(product)
    product.commit()
    code, report = product.gate("--base", "origin/main")
    assert code == 1
    assert [c["path"] for c in report["policy_changes"]["changed"]] == [
        "planning/evals/overrides/r9.yaml"
    ]


def test_a_pm_approved_policy_change_may_merge(product):
    config = product.kit / "pmos.yaml"
    config.write_text(config.read_text().replace("min_pairs: 20", "min_pairs: 30"))
    honest_run(product)
    product.ok(
        "policy", "approve", "--by", PM, "--sign-key", str(product.keys["pm"]),
        "--base", "origin/main", "--note", "more pairs before calibration",
    )  # fmt: skip
    product.commit()
    code, report = product.gate("--base", "origin/main")
    assert code == 0, report["reasons"]
    assert report["policy_changes"]["approved"] is True
    [approval] = report["policy_changes"]["approvals"]
    assert approval["valid"] and approval["by"] == PM


def test_a_policy_approval_signed_by_another_key_does_not_count(product, keys):
    config = product.kit / "pmos.yaml"
    config.write_text(config.read_text().replace("min_pairs: 20", "min_pairs: 1"))
    product.edit(".pmos/allowed_signers", f"{PM} {public_key(keys['evaluator'])}\n", append=True)
    honest_run(product)
    product.ok("policy", "approve", "--by", PM, "--sign-key", str(keys["evaluator"]))
    product.commit()
    code, report = product.gate("--base", "origin/main")
    assert code == 1
    assert report["policy_changes"]["approved"] is False
    # Checked in full under the base's policy, the approval breaks its signature rule.
    assert "[policy-signature]" in reasons(report) and "does not allow" in reasons(report)


def test_an_approval_of_other_content_does_not_count(product):
    config = product.kit / "pmos.yaml"
    config.write_text(config.read_text().replace("min_pairs: 20", "min_pairs: 30"))
    product.ok("policy", "approve", "--by", PM, "--sign-key", str(product.keys["pm"]))
    config.write_text(config.read_text().replace("min_pairs: 30", "min_pairs: 1"))
    honest_run(product)
    product.commit()
    code, report = product.gate("--base", "origin/main")
    assert code == 1
    [approval] = report["policy_changes"]["approvals"]
    assert "does not state the content at head of pmos.yaml" in approval["problem"]


def test_moving_the_acceptances_ledger_is_a_policy_change_and_loses_records(product):
    honest_run(product, "r0")
    product.commit()
    git(product.repo, "push", "-q", "origin", "HEAD:main")
    git(product.repo, "fetch", "-q", "origin")
    git(product.repo, "checkout", "-q", "-b", "move", "origin/main")
    git(product.repo, "mv", "pmos/state/acceptances", "pmos/state/labels")
    config = product.kit / "pmos.yaml"
    config.write_text(
        config.read_text().replace("acceptances: state/acceptances", "acceptances: state/labels")
    )
    product.commit()
    code, report = product.gate("--base", "origin/main")
    assert code == 1
    text = reasons(report)
    assert "policy change not approved: pmos.yaml" in text
    assert "present at base is missing at head" in text


def test_moving_the_kit_with_git_mv_may_not_merge(product):
    honest_run(product, "r0")
    product.commit()
    git(product.repo, "push", "-q", "origin", "HEAD:main")
    git(product.repo, "fetch", "-q", "origin")
    git(product.repo, "checkout", "-q", "-b", "move", "origin/main")
    (product.repo / "tools").mkdir()
    git(product.repo, "mv", "pmos", "tools/pmos")
    product.commit()
    code, report = product.gate("--base", "origin/main")
    assert code == 1
    text = reasons(report)
    assert "the kit moved from pmos to (nowhere)" in text
    assert "present at base is missing at head" in text


def test_a_first_adoption_may_merge_and_says_so(tmp_path, keys, cli, monkeypatch):
    repo = tmp_path / "shop"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "d@example.com")
    git(repo, "config", "user.name", "D")
    (repo / "app.py").write_text("x = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "app")
    from pmos.kit import init_kit

    init_kit(repo / "pmos")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "adopt pmos")
    monkeypatch.setenv("PMOS_ROOT", str(repo / "pmos"))
    monkeypatch.chdir(repo)
    import json

    result = cli("gate", "--base", "HEAD~1", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["first_adoption"] is True
    assert "first adoption" in report["notes"][0]


# ---------------------------------------------------------------- hand-made records


def hand_made_label(product: Product) -> tuple[dict, bytes, str]:
    """An unsigned PM pass label, made without a writer but with a correct digest."""
    from pmos.store import lines
    from pmos.store.append import record_meta

    record = {
        **record_meta("acceptances"),
        "run_id": "r1",
        "initiative_id": "shop",
        "label": "pass",
        "by": PM,
        "gate_verdict": "PASS",
        "gate_record_id": product.verdict_id,
    }
    line, digest = lines.encode(record)
    return record, line, digest


@pytest.mark.parametrize("how", ["loose", "pack-claiming-it-passed"])
def test_a_hand_made_record_is_checked_in_full_whatever_it_claims(product, how):
    import hashlib

    from pmos.store.append import loose_name

    product.register("r1")
    product.verdict_id = product.verdict("r1")
    record, line, digest = hand_made_label(product)
    folder = product.kit / "state/acceptances"
    if how == "loose":
        (folder / loose_name(record, digest)).write_bytes(line)
    else:
        key = [record["recorded_at"], record["record_id"]]
        header = (
            f'{{"pmos_pack":1,"kind":"acceptances","records":1,"first":{json.dumps(key)},"last":{json.dumps(key)},'
            '"checked":{"basis":{"rules":"pmos-rules-2"},"failed":[]}}\n'
        )
        data = header.encode() + line
        (folder / f"pack-{hashlib.sha256(data).hexdigest()}.jsonl").write_bytes(data)
    product.commit()
    code, report = product.gate("--base", "origin/main")
    assert code == 1
    text = reasons(report)
    assert f"the added acceptances record {record['record_id']} breaks a rule" in text
    assert "unsigned label" in text
    assert "run r1: needs a PM pass label" in text  # the hand-made label does not count


def test_an_added_record_may_not_reuse_a_record_id_of_the_base(product):
    honest_run(product, "r0")
    product.commit()
    git(product.repo, "push", "-q", "origin", "HEAD:main")
    git(product.repo, "fetch", "-q", "origin")
    git(product.repo, "checkout", "-q", "-b", "edit", "origin/main")
    [path] = [p for p in (product.kit / "state/runs").rglob("*.json")]
    run = json.loads(path.read_bytes())
    del run["digest"]
    run["builder_model"] = "someone-else"
    from pmos.store import lines
    from pmos.store.append import loose_name

    line, digest = lines.encode(run)
    path.unlink()
    (path.parent / loose_name(run, digest)).write_bytes(line)
    product.commit()
    code, report = product.gate("--base", "origin/main")
    assert code == 1
    text = reasons(report)
    assert f"the runs record {run['record_id']} present at base was changed at head" in text
    assert "reuses a record id present at base" in text


# ---------------------------------------------------------------- known-bad runs


def test_seeded_runs_of_the_base_cases_are_reported_as_seeded(product):
    product.ok("known-bad", "seed")
    product.commit()
    code, report = product.gate("--base", "origin/main")
    assert code == 0, report["reasons"]
    assert report["runs"] and all(r["decision"] == "seeded" for r in report["runs"])


def test_a_known_bad_name_that_matches_no_base_case_is_an_ordinary_run(product):
    product.ok(
        "run",
        "register",
        "--run-id",
        "known-bad-real-work",
        "--initiative-id",
        "known-bad",
        "--builder-model",
        "claude-x",
    )
    product.verdict("known-bad-real-work", "FAIL", initiative="known-bad")
    # A run named after a base case but registered otherwise is ordinary too.
    product.ok(
        "run",
        "register",
        "--run-id",
        "known-bad-session-ttl-documented-only",
        "--initiative-id",
        "known-bad",
        "--builder-model",
        "claude-x",
    )
    product.commit()
    code, report = product.gate("--base", "origin/main")
    assert code == 1
    runs = {r["run_id"]: r for r in report["runs"]}
    assert not runs["known-bad-real-work"]["seeded"]
    assert "is FAIL" in " ".join(runs["known-bad-real-work"]["reasons"])
    assert not runs["known-bad-session-ttl-documented-only"]["seeded"]
    assert "has no verdict" in runs["known-bad-session-ttl-documented-only"]["reasons"]


LENIENT = (
    "kappa_threshold: 0.5\nmin_pairs: 4\nmin_per_class: 2\nmin_tnr: 0\ncalibration_rule: point\n"
)


def lenient_base(product: Product) -> None:
    """The base's policy calibrates on a handful of pairs (committed on main)."""
    config = product.kit / "pmos.yaml"
    text = config.read_text()
    for key in ("kappa_threshold", "min_pairs", "min_per_class", "min_tnr", "calibration_rule"):
        text = (
            "\n".join(line for line in text.splitlines() if not line.startswith(key + ":")) + "\n"
        )
    config.write_text(text + LENIENT)


def to_main(product: Product, branch: str = "next") -> None:
    product.commit("on main")
    git(product.repo, "push", "-q", "origin", "HEAD:main")
    git(product.repo, "fetch", "-q", "origin")
    git(product.repo, "checkout", "-q", "-b", branch, "origin/main")


def test_seeded_labels_never_count_toward_calibration(product, cli):
    lenient_base(product)
    for run in ("p1", "p2"):
        honest_run(product, run)
    for run in ("known-bad-x1", "known-bad-x2"):
        product.ok(
            "run",
            "register",
            "--run-id",
            run,
            "--initiative-id",
            "known-bad",
            "--builder-model",
            "seeded",
        )
        product.verdict(run, "FAIL", initiative="known-bad")
        product.ok("accept", run, "--label", "fail", "--by", "seeded")
    # Seeded labels are answer keys: pmos metrics pairs them apart and never counts
    # them toward the PM's classes...
    metrics = json.loads(product.ok("metrics", "--json").stdout)
    assert metrics["seeded_pairs"] == 2
    assert metrics["by_model"]["gpt-5"]["calibrated"] is False
    to_main(product)
    product.register("r1")
    product.verdict("r1")
    product.commit()
    code, report = product.gate("--base", "origin/main")
    # ... and neither does the gate, so the run still needs the PM's label.
    assert code == 1
    assert report["calibration"]["by_model"]["gpt-5"]["calibrated"] is False
    assert report["calibration"]["seeded_labels_excluded"] == 2
    assert report["runs"][0]["mode"] == "advisory"
    assert "needs a PM pass label" in reasons(report)


def calibrated_base(product: Product) -> None:
    lenient_base(product)
    for run in ("p1", "p2"):
        honest_run(product, run)
    for run in ("f1", "f2"):
        product.register(run)
        product.verdict(run, "FAIL")
        product.label(run, "fail")
    to_main(product)


def test_while_calibrated_a_passing_verdict_is_enough(product):
    calibrated_base(product)
    product.register("r1")
    product.verdict("r1")
    product.commit()
    code, report = product.gate("--base", "origin/main")
    assert code == 0, report["reasons"]
    assert report["calibration"]["by_model"]["gpt-5"]["calibrated"] is True
    assert report["runs"][0]["mode"] == "calibrated"


def memo_entries(folder: Path) -> list[Path]:
    return sorted(folder.rglob("gate-calibration/*.json"))


def test_the_calibration_at_a_base_is_remembered_outside_the_work_tree(product, tmp_path):
    """The calibration at a base is a function of the base's objects and of pmos's
    code: a second gate of the same base takes it from this machine's memo (kept in
    the cache folder, never in the repository), and a memo that cannot be read is a
    miss, computed again."""
    calibrated_base(product)
    product.register("r1")
    product.verdict("r1")
    product.commit()
    code, first = product.gate("--base", "origin/main")
    assert code == 0 and first["runs"][0]["mode"] == "calibrated"
    cache = tmp_path / "pmos-cache"
    [entry] = memo_entries(cache)
    assert not memo_entries(product.repo)
    remembered = json.loads(entry.read_bytes())
    assert remembered["base_commit"] == first["base"]["commit"]
    assert remembered["by_model"] == first["calibration"]["by_model"]
    # What the memo says is what a second gate of the same base reports (shown here
    # by an entry this test rewrote: only this machine's cache folder can hold one).
    remembered["by_model"]["gpt-5"] = {"calibrated": False, "reason": "as remembered"}
    entry.write_bytes(json.dumps(remembered).encode())
    code, second = product.gate("--base", "origin/main")
    assert second["calibration"]["by_model"]["gpt-5"]["reason"] == "as remembered"
    assert code == 1 and second["runs"][0]["mode"] == "advisory"
    # A memo that is not a whole entry is a miss: computed again, and remembered again.
    for spoiled in (b"{not json", b"[]", json.dumps({**remembered, "format": 0}).encode()):
        entry.write_bytes(spoiled)
        code, again = product.gate("--base", "origin/main")
        assert code == 0 and again["calibration"] == first["calibration"]
        assert json.loads(entry.read_bytes())["by_model"] == first["calibration"]["by_model"]


def test_another_base_is_never_answered_from_an_earlier_bases_memo(product):
    """The memo is keyed by the base commit: a base whose labels say otherwise is
    calibrated afresh."""
    calibrated_base(product)
    product.register("r1")
    product.verdict("r1")
    product.commit()
    code, report = product.gate("--base", "origin/main")
    assert code == 0 and report["calibration"]["by_model"]["gpt-5"]["calibrated"] is True
    git(product.repo, "checkout", "-q", "-b", "disagree", "origin/main")
    for run in ("d1", "d2", "d3"):  # the evaluator passes what the PM fails
        product.register(run)
        product.verdict(run)
        product.label(run, "fail")
    to_main(product, "later")
    product.register("r2")
    product.verdict("r2")
    product.commit()
    code, report = product.gate("--base", "origin/main")
    assert report["calibration"]["by_model"]["gpt-5"]["calibrated"] is False
    assert code == 1 and report["runs"][0]["mode"] == "advisory"


def test_a_cache_folder_inside_the_work_tree_is_never_a_memo(product, monkeypatch):
    monkeypatch.setenv("PMOS_CACHE_DIR", str(product.repo / ".cache"))
    calibrated_base(product)
    product.register("r1")
    product.verdict("r1")
    product.commit()
    for _ in range(2):
        code, report = product.gate("--base", "origin/main")
        assert code == 0 and report["runs"][0]["mode"] == "calibrated"
    assert not memo_entries(product.repo)


def test_the_policy_can_always_require_the_label(product):
    product.edit("pmos.yaml", "gate:\n  require_label: true\n", append=True)
    calibrated_base(product)
    product.register("r1")
    product.verdict("r1")
    product.commit()
    code, report = product.gate("--base", "origin/main")
    assert code == 1
    assert "the policy requires one (gate.require_label)" in reasons(report)


def test_the_policy_can_require_a_contract(product, tmp_path):
    product.edit("pmos.yaml", "gate:\n  require_contract: true\n", append=True)
    to_main(product)
    honest_run(product)
    product.commit()
    code, report = product.gate("--base", "origin/main")
    assert code == 1
    assert "registered without a contract" in reasons(report)


# ---------------------------------------------------------------- usage and output


def test_base_defaults_to_the_merge_base_with_origins_default_branch(product, cli):
    honest_run(product)
    product.commit()
    code, report = product.gate()
    assert code == 0, report["reasons"]
    assert report["base"]["commit"] == git(product.repo, "rev-parse", "origin/main")
    git(product.repo, "remote", "set-head", "origin", "-d")
    result = cli("gate", "--json")
    assert result.exit_code == 2
    assert "--base is needed" in result.output


@pytest.mark.parametrize("revision", ["no-such-branch", "--output=x"])
def test_an_unknown_revision_is_a_usage_error(product, cli, revision):
    result = cli("gate", "--base", revision)
    assert result.exit_code == 2
    assert "names no commit" in result.output or "is not a git revision" in result.output


def test_the_summary_is_written_and_appended_to_the_job_summary(
    product, cli, tmp_path, monkeypatch
):
    product.register("r1")
    product.verdict("r1", "FAIL")
    product.commit()
    step = tmp_path / "step-summary.md"
    step.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    out = tmp_path / "gate.md"
    result = cli("gate", "--base", "origin/main", "--summary", str(out))
    assert result.exit_code == 1
    text = out.read_text()
    assert text.startswith("## pmos gate: may not merge")
    assert "| r1 | fail | advisory | gpt-5 | FAIL | - |" in text
    assert step.read_text() == "earlier step\n" + text
    assert "MAY NOT MERGE" in result.stdout and "r1" in result.stdout


def _shape(value, prefix=""):
    """Every key path of a JSON value (list items merged), for comparing shapes."""
    found = set()
    if isinstance(value, dict):
        for key, item in value.items():
            path = f"{prefix}.{key}"
            found.add(path)
            found |= _shape(item, path if prefix != ".calibration.by_model" else prefix + ".*")
    elif isinstance(value, list):
        for item in value:
            found |= _shape(item, prefix + "[]")
    return found


def test_the_reference_page_shows_what_the_gate_prints(product, tmp_path):
    """docs/reference/gate.md's examples come from this scenario: a passing run, a
    failing one, and an unapproved change to pmos.yaml."""
    import re

    page = (Path(__file__).parents[1] / "docs/reference/gate.md").read_text()
    shown = json.loads(re.search(r"```json\n(.*?)\n```", page, re.S).group(1))
    shown_md = re.search(r"```markdown\n(.*?)\n```", page, re.S).group(1)
    product.register("checkout-42")
    product.verdict("checkout-42")
    product.label("checkout-42")
    product.register("checkout-43")
    product.verdict("checkout-43", "FAIL")
    config = product.kit / "pmos.yaml"
    config.write_text(config.read_text().replace("min_pairs: 20", "min_pairs: 5"))
    product.commit()
    out = tmp_path / "gate.md"
    code, report = product.gate("--base", "origin/main", "--summary", str(out))
    assert code == 1
    assert _shape(report) == _shape(shown)
    assert [r["reasons"] != [] for r in report["runs"]] == [
        r["reasons"] != [] for r in shown["runs"]
    ]
    assert len(report["reasons"]) == len(shown["reasons"])

    def headings(text):
        return [line for line in text.splitlines() if line.startswith(("#", "|"))]

    assert [h.split("|")[1:3] for h in headings(out.read_text())] == [
        h.split("|")[1:3] for h in headings(shown_md)
    ]


def test_a_kit_made_before_the_policy_ledger_still_verifies(kit_root, cli):
    """The policy ledger is newer than existing kits: its missing folder is an empty
    ledger, where a missing folder of an older kind is a loss (still refused)."""
    import shutil

    shutil.rmtree(kit_root / "state/policy")
    assert cli("ledger", "verify").exit_code == 0
    shutil.rmtree(kit_root / "state/evals")
    result = cli("ledger", "verify")
    assert result.exit_code == 1 and "the evals ledger folder is missing" in result.output


def test_a_hand_made_label_dated_before_its_verdict_does_not_let_a_run_merge(
    tmp_path, keys, cli, monkeypatch
):
    """Without signing, a hand-made pass label obeys every rule a stored label can be
    checked against alone; dated before the verdict it names, the gate refuses it."""
    from datetime import timedelta

    import ledgerfiles
    from pmos.timestamps import parse_instant, rfc3339

    product = make_product(tmp_path, keys, cli, signing=False)
    monkeypatch.setenv("PMOS_ROOT", str(product.kit))
    monkeypatch.chdir(product.repo)
    product.branch("feature")
    product.register("r1")
    product.verdict_id = product.verdict("r1")
    record, _line, _digest = hand_made_label(product)
    verdict = json.loads(product.cli("ledger", "show", "evals", "--json").stdout)[-1]
    record["recorded_at"] = rfc3339(parse_instant(verdict["recorded_at"]) - timedelta(minutes=1))
    ledgerfiles.forge(product.kit, "acceptances", record)
    product.commit()
    code, report = product.gate("--base", "origin/main")
    assert code == 1
    assert "[label-before-verdict]" in reasons(report)
    # The honest order passes.
    (tmp_path / "honest").mkdir()
    honest = make_product(tmp_path / "honest", keys, cli, signing=False)
    monkeypatch.setenv("PMOS_ROOT", str(honest.kit))
    monkeypatch.chdir(honest.repo)
    honest.branch("feature")
    honest_run(honest)
    honest.commit()
    code, report = honest.gate("--base", "origin/main")
    assert code == 0, report["reasons"]


def test_a_verdict_passing_what_the_runs_assessment_failed_may_not_merge(product, tmp_path):
    """The verdict is written before the assessment (so its writer could not refuse
    it); the assessment of the same run then records the criterion's check failing.
    The gate holds the verdict to that assessment, as the writer would have."""
    import yaml

    contract = tmp_path / "contract.yaml"
    criterion = {"id": "c1", "text": "The build leaves done.txt."}
    criterion["test_method"] = {"type": "test", "command": "test -f done.txt"}
    contract.write_text(yaml.safe_dump({"done_criteria": [criterion]}))
    product.ok(
        "run", "register", "--run-id", "r1", "--initiative-id", "shop",
        "--builder-model", "claude-sonnet-4", "--contract", str(contract),
    )  # fmt: skip
    product.ok(
        "eval", "log", "r1", "shop", "0.9", "PASS", RUBRIC, "gpt-5",
        "--criterion", "c1=pass:contract.yaml", "--standards", "pass",
    )  # fmt: skip
    product.label("r1")
    assessed = product.cli("assess", "--run-id", "r1", "--cwd", str(product.repo), "--json")
    assert assessed.exit_code == 1, assessed.output  # done.txt is not there: c1 fails
    product.commit()
    code, report = product.gate("--base", "origin/main")
    assert code == 1
    assert "[assessment-contradiction]" in reasons(report)


def test_a_verdict_dated_in_the_future_does_not_let_a_run_merge(product):
    """A rule-obeying verdict dated 2099 would stay its run's latest for ever; the
    gate checks dates against its own clock, not the record's."""
    import ledgerfiles

    product.register("r1")
    product.verdict("r1")
    product.label("r1")
    later = json.loads(product.cli("ledger", "show", "evals", "--json").stdout)[-1]
    later = {**later, "record_id": later["record_id"][:-8] + "99999999"}
    later["recorded_at"] = "2099-01-01T00:00:00.000000Z"
    ledgerfiles.forge(product.kit, "evals", later)
    product.commit()
    code, report = product.gate("--base", "origin/main")
    assert code == 1
    assert "[future-dated]" in reasons(report)


def test_a_label_signed_with_a_key_whose_window_closed_does_not_count(product, keys):
    """The base's allowed-signers file lets the PM's key sign only before 2026; a
    label signed with it counts for nothing now, whatever date the label carries."""
    signers = product.kit / ".pmos/allowed_signers"
    windowed = f'{PM} valid-before="20260101" {public_key(keys["pm"])}\n'
    signers.write_text(windowed)
    to_main(product)  # the base's policy: the window has closed
    signers.write_text(f"{PM} {public_key(keys['pm'])}\n")  # only while the PM signs
    honest_run(product)
    signers.write_text(windowed)  # the change carries no policy change
    product.commit()
    code, report = product.gate("--base", "origin/main")
    assert code == 1
    assert report["policy_changes"]["changed"] == []
    assert "not at the time of checking" in reasons(report)


def gate_beside_a_forged_verdict(product, tmp_path, spoil, *, at_head=False, **extra):
    """r1 judged by the writer and labelled; r2 judged by a hand-made copy of that
    verdict which ``spoil`` changes; the change committed and gated. ``at_head``:
    both runs name this repository at HEAD, and the verdict cites app.py there.
    Returns the gate's code and report, both verdicts and r1's decision."""
    from conftest import good_verdict
    from ledgerfiles import forge
    from pmos.store.append import record_meta

    where = ("--repo", str(product.repo), "--head", "HEAD") if at_head else ()
    for run in ("r1", "r2"):
        product.register(run, *where)
    verdict = good_verdict(run_id="r1", initiative_id="shop", builder_model="claude-x", **extra)
    if at_head:
        for item in [*verdict["criteria"], *verdict["dimensions"].values()]:
            item["evidence"] = "app.py:1 prints the shop"
    (tmp_path / "v.json").write_text(json.dumps(verdict))
    written = product.ok("eval", "record", "--file", str(tmp_path / "v.json"), "--json")
    good = json.loads(written.stdout)
    bad = {k: v for k, v in good.items() if k != "digest"}
    bad.update(record_meta("evals"), run_id="r2", schema_version=2)
    spoil(bad)
    forge(product.kit, "evals", bad)
    product.label("r1")
    product.commit()
    code, report = product.gate("--base", "origin/main")
    [r1] = [r for r in report["runs"] if r["run_id"] == "r1"]
    return code, report, good, bad, r1["decision"]


def test_an_added_verdict_whose_verified_evidence_cites_nothing_may_not_merge(product, tmp_path):
    """Issue 25.4 on stored records: a hand-written verdict file claiming a verified
    criterion with no evidence pointer is refused by the gate with the writer's
    reason; the writer's own verdict, with a pointer, is counted."""

    def spoil(bad):
        bad["criteria"][0]["evidence"] = "checked it myself, works"

    code, report, good, bad, r1 = gate_beside_a_forged_verdict(product, tmp_path, spoil)
    assert code == 1
    assert any(
        bad["record_id"] in r
        and "[verified-evidence] criteria/0/evidence: verified: true cites no evidence" in r
        for r in report["reasons"]
    ), report["reasons"]
    assert not any(good["record_id"] in r for r in report["reasons"]), report["reasons"]
    assert r1 == "pass"


def test_an_added_verdict_whose_evidence_pointer_does_not_resolve_may_not_merge(product, tmp_path):
    """The gate resolves an added verdict's pointers as the writer does: a line range
    outside a file at the run's head is refused with the writer's reason; the writer's
    own verdict, whose pointer resolves, is counted."""

    def spoil(bad):
        bad["criteria"][1]["evidence"] = "app.py:19-25 handles it"

    code, report, good, bad, r1 = gate_beside_a_forged_verdict(
        product, tmp_path, spoil, at_head=True
    )
    assert code == 1
    assert any(
        bad["record_id"] in r
        and "[verified-evidence] criteria/1/evidence: app.py:19-25: lines 19-25 are not in "
        "app.py (1 lines"
        in r
        for r in report["reasons"]
    ), report["reasons"]
    assert not any(good["record_id"] in r for r in report["reasons"]), report["reasons"]
    assert r1 == "pass"


def test_an_added_verdict_names_only_calibration_cases_the_base_has(product, tmp_path):
    """Issue 25.4 in the gate: the exemplars an added verdict names must be cases of
    the base (`pmos exemplars` there), as the writer and `ledger verify` require; a
    hand-made verdict naming one the base lacks may not merge, the writer's verdict
    naming the base's case is counted."""
    git(product.repo, "checkout", "-q", "main")
    honest_run(product, "r0")
    product.commit("a labelled run: a calibration case")
    product.publish()
    product.branch("named")
    [case] = {a["case_id"] for a in json.loads(product.ok("exemplars", "--json").stdout)["anchors"]}

    def spoil(bad):
        bad["exemplars"] = ["no-such-case"]

    code, report, good, bad, r1 = gate_beside_a_forged_verdict(
        product, tmp_path, spoil, at_head=True, exemplars=[case]
    )
    assert code == 1
    assert any(
        bad["record_id"] in r and "[exemplar-unknown] exemplars/0: 'no-such-case'" in r
        for r in report["reasons"]
    ), report["reasons"]
    assert not any(good["record_id"] in r for r in report["reasons"]), report["reasons"]
    assert r1 == "pass"


def test_the_gate_counts_blind_labels_as_metrics_does(product):
    """Issue 26.5 in the gate: with `calibration.min_blind_labels` in the base's
    policy, the base's blind labels are read as `pmos metrics` reads them: none, and
    the gate stays advisory (the run needs the PM's label); one blind pair, and a
    passing verdict is enough."""
    product.edit("pmos.yaml", "calibration:\n  min_blind_labels: 1\n", append=True)
    calibrated_base(product)
    product.register("r1")
    product.verdict("r1")
    product.commit()
    code, report = product.gate("--base", "origin/main")
    assert code == 1
    assert report["calibration"]["by_model"]["gpt-5"]["calibrated"] is False
    assert "needs a PM pass label" in reasons(report)

    git(product.repo, "checkout", "-q", "-f", "origin/main")
    product.register("b1")
    product.verdict("b1")
    product.ok("accept", "b1", "--label", "pass", "--by", PM, "--blind", "--note", "blind",
               "--sign-key", str(product.keys["pm"]))  # fmt: skip
    assert json.loads(product.ok("metrics", "--json").stdout)["calibrated"] is True
    to_main(product, "blind")
    product.register("r1")
    product.verdict("r1")
    product.commit()
    code, report = product.gate("--base", "origin/main")
    assert code == 0, report["reasons"]
    assert report["calibration"]["by_model"]["gpt-5"]["calibrated"] is True


def test_the_gate_reads_plan_weights_as_metrics_does(tmp_path, keys, cli, monkeypatch):
    """Issue 26.6 in the gate: under the base's labelling plan (pass-side rate 0.5), the
    base's `pmos accept --plan` labels weigh in the gate as in `pmos metrics`. Seven
    labels, two of them PASS-side runs the plan sampled (weight 2): weighted, kappa 0.67
    and the gate calibrated (unweighted it would be 0.46, advisory). Then a later
    label of each sampled run claims weight 10, which the plan does not give: both
    count as 1 in metrics and in the gate alike, and the gate is advisory again (had
    it trusted the recorded 10, it would be calibrated)."""
    from datetime import timedelta

    import ledgerfiles
    from pmos.gate import plan as sampling
    from pmos.timestamps import parse_instant, rfc3339

    product = make_product(tmp_path, keys, cli, signing=False)
    monkeypatch.setenv("PMOS_ROOT", str(product.kit))
    monkeypatch.chdir(product.repo)
    product.branch("plan")
    lenient_base(product)
    product.edit("pmos.yaml", "calibration:\n  plan_pass_side_rate: 0.5\n", append=True)

    def accept(run: str, label: str) -> None:
        product.ok("accept", run, "--label", label, "--by", PM, "--plan", "--note", "checked")

    sampled: list[str] = []
    tried = 0
    while len(sampled) < 2:  # PASS runs until two are in the plan's sample
        run, tried = f"p{tried}", tried + 1
        product.register(run)
        if sampling.draw(product.verdict(run)) < 0.5:
            sampled.append(run)
    for run in sampled:
        accept(run, "pass")
    for run, label in (("f1", "pass"), ("f2", "pass"), ("f3", "fail"), ("f4", "fail")):
        product.register(run)
        product.verdict(run, "FAIL")
        accept(run, label)
    product.register("f5")
    product.verdict("f5", "FAIL")
    accept("f5", "fail")

    def metrics_then_gate(branch: str) -> tuple[dict, int, dict]:
        found = json.loads(product.ok("metrics", "--json").stdout)
        to_main(product, branch)
        product.register("r1")
        product.verdict("r1")
        product.commit()
        code, report = product.gate("--base", "origin/main")
        return found, code, report

    metrics, code, report = metrics_then_gate("weighted")
    assert metrics["weighting"]["weighted"] is True and metrics["weighting"]["plan_pairs"] == 7
    assert metrics["calibrated"] is True and metrics["kappa"] == pytest.approx(2 / 3, abs=1e-6)
    assert code == 0, report["reasons"]
    assert report["calibration"]["by_model"]["gpt-5"]["calibrated"] is True
    assert report["runs"][0]["mode"] == "calibrated"

    git(product.repo, "checkout", "-q", "-f", "origin/main")
    stored = ledgerfiles.stored(product.kit, "acceptances")
    for i, original in enumerate(r for r in stored if r["run_id"] in sampled):
        label = dict(original)
        later = parse_instant(original["recorded_at"]) + timedelta(seconds=1)
        label.update(
            record_id=original["record_id"][:-4] + f"ff{i:02d}",
            recorded_at=rfc3339(later),
            plan_weight=10.0,
        )
        ledgerfiles.forge(product.kit, "acceptances", label)
    metrics, code, report = metrics_then_gate("forged")
    assert metrics["weighting"]["plan_weights_refused"] == 2
    assert metrics["calibrated"] is False and metrics["pairs"] == 7
    assert code == 1
    assert report["calibration"]["by_model"]["gpt-5"]["calibrated"] is False
    assert report["runs"][0]["mode"] == "advisory"
    assert "needs a PM pass label" in reasons(report)
