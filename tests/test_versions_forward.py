"""Issue 25.8: versions move forward. A hand-made verdict of schema_version 1 (no
criteria) for a run with a contract passed 'verify --schema' while the writer
refused the same verdict. A record of an older version made after the kit held a
newer one is now reported and left out; "after" comes from git (committed at HEAD
or not; added by a change, so later than the base), never from the record's own
recorded_at, which a back-dated hand-made record chooses.

Every test runs in a product repository with real git (tests/gate_support.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import RUBRIC
from gate_support import Product, git, keygen, make_product
from ledgerfiles import forge

BACK_DATED = "2020-01-01T00:00:00.000000Z"


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return {"pm": keygen(tmp_path_factory.mktemp("keys"), "pm")}


@pytest.fixture
def product(tmp_path, keys, cli, monkeypatch) -> Product:
    made = make_product(tmp_path, keys, cli, signing=False)
    monkeypatch.setenv("PMOS_ROOT", str(made.kit))
    monkeypatch.chdir(made.repo)
    return made


def with_contract(product: Product, *runs: str) -> None:
    contract = product.root / "contract.yaml"
    contract.write_text("done_criteria:\n  - {id: c1, text: a, test_method: b}\n")
    for run in runs:
        product.register(run, "--contract", str(contract))


def logged(product: Product, run: str) -> dict:
    result = product.ok(
        "eval", "log", run, "shop", "0.9", "PASS", RUBRIC, "gpt-5",
        "--criterion", "c1=pass:tests/test_a.py::test_a", "--standards", "pass", "--json",
    )  # fmt: skip
    stored = json.loads(result.stdout)
    assert stored["schema_version"] == 2
    return stored


def version_one(verdict: dict, run: str) -> dict:
    """The side door: a version-1 verdict (no criteria) for a run with a contract,
    dated long before anything in the kit."""
    old = {k: v for k, v in verdict.items() if k not in ("criteria", "flags", "digest")}
    old.update(schema_version=1, run_id=run, record_id="ev-handmade-0001", recorded_at=BACK_DATED)
    return old


def verify(product: Product, *extra: str) -> tuple[int, list[dict]]:
    result = product.cli("ledger", "verify", "--json", *extra)
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, [
        p for r in json.loads(result.stdout)["ledgers"] for p in r["problems"]
    ]


def test_a_back_dated_older_version_is_reported_left_out_and_refused_by_the_gate(product):
    with_contract(product, "r1", "r2")
    verdict = logged(product, "r1")
    product.commit("a version-2 verdict")
    product.publish()
    product.branch("side-door")

    path = forge(product.kit, "evals", version_one(verdict, "r2"))
    for flag in ((), ("--schema",)):
        code, problems = verify(product, *flag)
        assert code == 1
        [problem] = problems
        assert "version-forward" in problem["problem"] and problem["file"] == str(path)
        assert "not committed at HEAD" in problem["problem"]
    report = json.loads(product.ok("metrics", "--json").stdout)
    assert [e["record_id"] for e in report["excluded_records"]] == ["ev-handmade-0001"]

    product.commit("a verdict dated long ago")
    code, report = product.gate("--base", "origin/main")
    assert code == 1
    assert any(
        "ev-handmade-0001" in r
        and "added by this change, while the base already holds evals records of version 2" in r
        for r in report["reasons"]
    ), report["reasons"]


def test_an_older_version_committed_before_the_newer_one_still_counts(product, tmp_path):
    """The valid case: a legacy version-1 record in the kit's history (committed before
    the kit's first version-2 record) is read with its version's rules, in verify,
    metrics and the gate; outside git nothing shows its order, and it is reported."""
    with_contract(product, "r1", "r2")
    verdict = logged(product, "r1")
    for path in (product.kit / "state" / "evals").rglob("*.json"):
        path.unlink()  # a kit from before version 2: only the legacy verdict
    forge(product.kit, "evals", version_one(verdict, "r2"))
    product.commit("a legacy verdict")
    product.publish()
    logged(product, "r1")
    product.commit("a version-2 verdict")
    product.publish()
    assert verify(product) == (0, [])
    assert verify(product, "--schema") == (0, [])
    assert json.loads(product.ok("metrics", "--json").stdout)["excluded_records"] == []

    product.branch("feature")
    with_contract(product, "r3")
    logged(product, "r3")
    product.label("r3", key=None)
    product.commit("a new run")
    code, report = product.gate("--base", "origin/main")
    assert code == 0, report["reasons"]

    copy = tmp_path / "outside"
    shutil.copytree(product.kit, copy)
    result = product.cli("--root", str(copy), "ledger", "verify", "--json")
    assert result.exit_code == 1
    [problem] = [p for r in json.loads(result.stdout)["ledgers"] for p in r["problems"]]
    assert "the kit is not in a git repository" in problem["problem"]
    assert git(product.repo, "status", "--porcelain") == ""


def test_a_packs_cached_outcome_follows_head_when_version_order_read_it(product):
    """The screening cache outside the work tree keeps a pack's outcome; when that
    outcome read what HEAD holds (an older-version record not committed there), it
    stands only while HEAD is the same commit: once the record is committed, the
    next reading counts it instead of recalling the stale exclusion."""
    with_contract(product, "r1", "r2")
    verdict = logged(product, "r1")
    product.commit("a version-2 verdict")
    forge(product.kit, "evals", version_one(verdict, "r2"))
    product.ok("ledger", "pack")
    code, problems = verify(product)
    assert code == 1 and any("not committed at HEAD" in p["problem"] for p in problems)
    code, problems = verify(product)  # recalled from the cache: the same answer
    assert code == 1 and any("not committed at HEAD" in p["problem"] for p in problems)
    product.commit("the pack, committed")
    assert verify(product) == (0, [])
