"""Issue 25.8: versions move forward. A hand-made verdict of schema_version 1 (no
criteria) for a run with a contract passed 'verify --schema' while the writer
refused the same verdict: a record of an older version dated after the kit's
first record of the newer one is now reported and left out."""

from __future__ import annotations

import json

from conftest import RUBRIC
from ledgerfiles import forge
from pmos.timestamps import now_rfc3339


def test_an_older_version_after_a_newer_one_is_reported_and_left_out(cli, kit_root, tmp_path):
    contract = tmp_path / "contract.yaml"
    contract.write_text("done_criteria:\n  - {id: c1, text: a, test_method: b}\n")
    for run in ("r1", "r2"):
        registered = cli(
            "run", "register", "--run-id", run, "--initiative-id", "i1",
            "--builder-model", "m", "--contract", str(contract),
        )  # fmt: skip
        assert registered.exit_code == 0, registered.output
    logged = cli(
        "eval", "log", "r1", "i1", "0.9", "PASS", RUBRIC, "gpt-5",
        "--criterion", "c1=pass:tests/test_a.py::test_a", "--standards", "pass", "--json",
    )  # fmt: skip
    assert logged.exit_code == 0, logged.output
    stored = json.loads(logged.stdout)
    assert stored["schema_version"] == 2
    assert cli("accept", "r1", "--label", "pass", "--by", "ana").exit_code == 0
    assert cli("accept", "r2", "--label", "fail", "--by", "ana").exit_code == 0

    old = {k: v for k, v in stored.items() if k not in ("criteria", "flags")}
    old.update(schema_version=1, run_id="r2", record_id="ev-handmade-0001")
    # Dated before the kit's first version-2 verdict: a legacy record, still counted.
    earlier = forge(kit_root, "evals", {**old, "recorded_at": "2020-01-01T00:00:00.000000Z"})
    assert cli("ledger", "verify", "--schema").exit_code == 0
    earlier.unlink()

    # Dated now (after the kit's first version-2 verdict), not in the future: a
    # future date is a problem of its own (pmos.gate.clock).
    later = dict(old, recorded_at=now_rfc3339())
    path = forge(kit_root, "evals", later)
    for flag in ((), ("--schema",)):
        result = cli("ledger", "verify", "--json", *flag)
        assert result.exit_code == 1
        problems = [p for r in json.loads(result.stdout)["ledgers"] for p in r["problems"]]
        [problem] = problems
        assert "version-forward" in problem["problem"] and problem["file"] == str(path)
    report = json.loads(cli("metrics", "--json").stdout)
    assert [e["record_id"] for e in report["excluded_records"]] == ["ev-handmade-0001"]
    assert report["pairs"] == 1


def test_the_first_of_each_version_is_its_earliest_instant_in_any_order_or_format():
    """Writers' times are compared as text and parsed only when earlier than the
    earliest so far; other times are parsed; a time that does not parse is passed
    over, and does not hide a later one."""
    from datetime import UTC, datetime

    from pmos.gate.versions import first_of_each_version

    stamps = [
        (2, "2026-03-01T00:00:00.000000Z"),
        (2, "2026-00-01T00:00:00.000000Z"),  # the writers' shape, not a date
        (2, "2026-02-30T00:00:00.000000Z"),  # nor this one
        (2, "2026-01-15T02:00:00.000000Z"),
        (2, "2026-01-15T10:00:00+09:00"),  # 01:00 UTC: the earliest
        (2, "2026-02-01T00:00:00.000000Z"),
        (1, "2025-01-01T00:00:00.000000Z"),
        ("3", "2000-01-01T00:00:00.000000Z"),  # not a version
        (4, "not a time"),
    ]
    assert first_of_each_version(stamps) == {
        2: datetime(2026, 1, 15, 1, tzinfo=UTC),
        1: datetime(2025, 1, 1, tzinfo=UTC),
    }
    assert first_of_each_version(reversed(stamps)) == first_of_each_version(stamps)
