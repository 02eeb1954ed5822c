"""Issue 25.1: switching signed labels on in a live kit, by a commit, not a date.

``signing.required_since`` names the commit of the default branch at which the PM
switched signatures on. An unsigned label counts only when that exact record is in
the kit's labels at that commit (git history says so); its own ``recorded_at``,
which whoever writes the label chooses, never decides. Every test runs in a
product repository with a bare origin, real git with its defaults, real ssh-keygen
keys and the real CLI writers (tests/gate_support.py).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import ledger_bytes
from gate_support import PM, Product, git, keygen, make_product, public
from ledgerfiles import forge

pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen")


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("keys")
    return {"pm": keygen(folder, "pm")}


@pytest.fixture
def product(tmp_path, keys, cli, monkeypatch) -> Product:
    made = make_product(tmp_path, keys, cli, signing=False)
    monkeypatch.setenv("PMOS_ROOT", str(made.kit))
    monkeypatch.chdir(made.repo)
    return made


def honest_runs(product: Product, *runs: str, key: str | None = None) -> None:
    for run in runs:
        product.register(run)
        product.verdict(run)
        product.label(run, key=key)


def switch_on(product: Product, commit: str) -> None:
    """What the how-to tells the PM to do: allowed signers, then required_since."""
    product.edit(".pmos/allowed_signers", f"{PM} {public(product.keys['pm'])}\n")
    product.edit(
        "pmos.yaml",
        f"signing:\n  allowed_signers: .pmos/allowed_signers\n  required_since: {commit}\n",
        append=True,
    )


def verify(product: Product, *root: str) -> tuple[int, list[str]]:
    result = product.cli(*root, "ledger", "verify", "--json")
    assert result.exit_code in (0, 1), result.output
    report = json.loads(result.stdout)
    return result.exit_code, [p["problem"] for r in report["ledgers"] for p in r["problems"]]


def metrics(product: Product, *root: str) -> dict:
    result = product.cli(*root, "metrics", "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def unsigned_label(product: Product, run: str, recorded_at: str) -> dict:
    """An unsigned label of ``run``'s verdict as a writer makes one, dated by hand."""
    [verdict] = json.loads(product.ok("ledger", "show", "evals", "--run-id", run, "--json").stdout)
    [label] = json.loads(
        product.ok("ledger", "show", "acceptances", "--run-id", "r1", "--json").stdout
    )
    label = {k: v for k, v in label.items() if k not in ("digest", "prev_hash", "hash")}
    return {
        **label,
        "run_id": run,
        "record_id": f"acc-backdated-{run}",
        "gate_record_id": verdict["record_id"],
        "recorded_at": recorded_at,
    }


def test_a_live_kit_switches_on_at_a_commit_and_stays_green(product):
    """The walk-through: unsigned labels, then the switch; verify, metrics and gate
    green before and after, the same pairs counted, the old labels marked unsigned."""
    honest_runs(product, "r1", "r2", "r3")
    product.commit("three labelled runs")
    product.publish()
    assert verify(product) == (0, [])
    before = metrics(product)
    assert before["pairs"] == 3

    product.branch("before")
    honest_runs(product, "r4")
    product.commit("a run before the switch")
    code, report = product.gate("--base", "origin/main")
    assert code == 0, report["reasons"]
    git(product.repo, "checkout", "-q", "main")

    switch = git(product.repo, "rev-parse", "HEAD")
    switch_on(product, switch)
    product.commit("require signed PM labels")
    product.publish()
    assert verify(product) == (0, [])
    after = metrics(product)
    assert after["pairs"] == 3 and after["excluded_records"] == []
    assert after["unsigned_labels"] == 3 and before["unsigned_labels"] is None
    shown = product.ok("ledger", "show", "acceptances").stdout
    assert shown.count("unsigned") == 3
    assert "unsigned labels: 3 of the pairs" in product.ok("metrics").stdout
    assert "pairs counting an unsigned PM label" in product.ok("board", "--out", "-").stdout
    assert product.cli("queue", "--json").exit_code == 0

    # From now on an unsigned label is refused by the writer, a signed one is stored.
    product.register("r5")
    product.verdict("r5")
    snapshot = ledger_bytes(product.kit)
    refused = product.cli("accept", "r5", "--label", "pass", "--by", PM)
    assert refused.exit_code == 2
    assert f"not already in the kit at commit {switch[:12]}" in refused.stderr
    assert "hands the run over to the PM" in refused.stderr and "--sign-key" not in refused.stderr
    assert ledger_bytes(product.kit) == snapshot
    product.label("r5", key="pm")
    assert verify(product) == (0, [])
    report = metrics(product)
    assert report["pairs"] == 4 and report["unsigned_labels"] == 3
    assert product.ok("ledger", "show", "acceptances").stdout.count(" signed") == 1

    # The gate after the switch: a change with a signed label may merge.
    product.commit("r5")
    product.publish()
    product.branch("after")
    honest_runs(product, "r6", key="pm")
    product.commit("a signed run")
    code, report = product.gate("--base", "origin/main")
    assert code == 0, report["reasons"]


def test_a_back_dated_unsigned_label_does_not_count(product):
    """The trust gap: an unsigned label dated before the switch but not in the kit at
    the switch commit is reported by verify, left out of metrics, refused by the gate."""
    honest_runs(product, "r1")
    product.commit("a labelled run")
    switch_on(product, git(product.repo, "rev-parse", "HEAD"))
    product.register("r2")
    product.verdict("r2")
    product.commit("switch, and a run")
    product.publish()
    assert verify(product) == (0, [])

    product.branch("backdated")
    forge(product.kit, "acceptances", unsigned_label(product, "r2", "2020-01-01T00:00:00.000000Z"))
    code, problems = verify(product)
    assert code == 1
    [problem] = problems
    assert "label-signature" in problem and "not in the kit's labels at that commit" in problem
    report = metrics(product)
    assert report["pairs"] == 1
    assert [e["record_id"] for e in report["excluded_records"]] == ["acc-backdated-r2"]

    product.commit("a label dated long ago")
    code, report = product.gate("--base", "origin/main")
    assert code == 1
    assert any(
        "acc-backdated-r2" in r and "added by this change, after the switch" in r
        for r in report["reasons"]
    ), report["reasons"]


def test_unsigned_labels_do_not_count_where_git_cannot_show_the_switch(product, tmp_path):
    """Strict where the commit cannot be read: a copy of the kit outside git, and a
    required_since naming a commit not in HEAD's history; the reason says why."""
    honest_runs(product, "r1")
    product.commit("a labelled run")
    switch_on(product, git(product.repo, "rev-parse", "HEAD"))
    product.commit("switch")
    assert verify(product)[0] == 0

    copy = tmp_path / "outside"
    shutil.copytree(product.kit, copy)
    code, problems = verify(product, "--root", str(copy))
    assert code == 1
    [problem] = problems
    assert "outside git, unsigned labels do not count" in problem

    config = product.kit / "pmos.yaml"
    switch = git(product.repo, "rev-parse", "HEAD~1")
    config.write_text(config.read_text().replace(switch, "f" * 40))  # no such commit
    code, problems = verify(product)
    assert code == 1
    [problem] = problems
    assert "is not in the history of this repository's HEAD" in problem


@pytest.mark.parametrize("since", ["2026-12-01", "'2026-12-01T00:00:00Z'", "HEAD", "abc123"])
def test_required_since_names_a_full_commit_id(product, since):
    honest_runs(product, "r1")
    switch_on(product, since)
    result = product.cli("ledger", "verify")
    assert result.exit_code == 2
    assert "required_since" in result.stderr


def test_required_since_with_required_false_is_a_contradiction(product):
    honest_runs(product, "r1")
    product.commit("a labelled run")
    switch_on(product, git(product.repo, "rev-parse", "HEAD"))
    config = product.kit / "pmos.yaml"
    config.write_text(config.read_text() + "  required: false\n")
    result = product.cli("queue")
    assert result.exit_code == 2 and "remove one of them" in result.stderr
