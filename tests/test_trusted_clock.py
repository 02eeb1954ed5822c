"""Issue 24.4: time comes from a clock pmos trusts, never from the record judged.

Real keys made by ssh-keygen; labels written through ``pmos accept`` and, for
what a person could commit, forged loose files checked by the readers and
``pmos ledger verify``."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from conftest import judged_pass, ledger_bytes
from ledgerfiles import forge
from pmos.gate import clock, signing, sshsig
from test_signing import PM, accept, configure, keygen, public

pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen")

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("clock-keys")
    return {"pm": keygen(folder, "pm"), "foreign": keygen(folder, "foreign")}


def stamp(moment: datetime) -> str:
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


def ssh_date(moment: datetime) -> str:
    return moment.strftime("%Y%m%d%H%M%SZ")


# ---------------------------------------------------------------- the rules themselves


def test_a_record_dated_within_the_skew_is_fine_and_one_beyond_it_is_a_finding():
    assert timedelta(minutes=5) == clock.MAX_SKEW
    within = {"recorded_at": stamp(NOW + clock.MAX_SKEW)}
    beyond = {"recorded_at": stamp(NOW + clock.MAX_SKEW + timedelta(seconds=1))}
    past = {"recorded_at": "2020-01-01T00:00:00Z"}
    assert clock.future_dated(within, NOW) is None
    assert clock.future_dated(past, NOW) is None
    finding = clock.future_dated(beyond, NOW)
    assert finding is not None and finding.rule == clock.FUTURE_DATED
    assert "after the time of checking (2026-06-01T12:00:00Z" in finding.message
    assert clock.future_dated({"recorded_at": "not a time"}, NOW) is None  # the schema's problem


def test_a_label_dated_before_the_verdict_it_judges_is_a_finding():
    verdict = {"record_id": "ev-1", "recorded_at": "2026-06-01T12:00:00Z"}
    after = {"record_id": "acc-1", "recorded_at": "2026-06-01T12:00:01Z"}
    same = {"record_id": "acc-2", "recorded_at": "2026-06-01T12:00:00Z"}
    before = {"record_id": "acc-3", "recorded_at": "2026-06-01T11:59:59Z"}
    assert clock.label_before_verdict(after, verdict) is None
    assert clock.label_before_verdict(same, verdict) is None
    finding = clock.label_before_verdict(before, verdict)
    assert finding is not None and finding.rule == clock.LABEL_BEFORE_VERDICT
    assert "acc-3" in finding.message and "ev-1" in finding.message


# ---------------------------------------------------------------- validity windows


def expired(keys, days: int = 1) -> str:
    """An allowed-signers line for the PM's key whose validity ended ``days`` ago."""
    before = datetime.now(UTC) - timedelta(days=days)
    return f'{PM} valid-before="{ssh_date(before)}" {public(keys["pm"])}\n'


def test_a_key_past_its_valid_before_signs_no_label_now(cli, kit_root, keys):
    configure(kit_root, keys, required=True, signers=expired(keys))
    judged_pass(cli)
    before = ledger_bytes(kit_root)
    result = accept(cli, "--sign-key", str(keys["pm"]))
    assert result.exit_code == 2, result.output
    assert "[label-signature]" in result.stderr and "not at the time of checking" in result.stderr
    assert ledger_bytes(kit_root) == before


def test_a_key_not_yet_valid_signs_no_label_now(cli, kit_root, keys):
    after = datetime.now(UTC) + timedelta(days=2)
    line = f'{PM} valid-after="{ssh_date(after)}" {public(keys["pm"])}\n'
    configure(kit_root, keys, required=True, signers=line)
    judged_pass(cli)
    result = accept(cli, "--sign-key", str(keys["pm"]))
    assert result.exit_code == 2 and "not at the time of checking" in result.stderr


def test_a_key_inside_its_window_signs(cli, kit_root, keys):
    start = datetime.now(UTC) - timedelta(days=1)
    end = datetime.now(UTC) + timedelta(days=1)
    line = f'{PM} valid-after="{ssh_date(start)}",valid-before="{ssh_date(end)}" '
    configure(kit_root, keys, required=True, signers=line + public(keys["pm"]) + "\n")
    judged_pass(cli)
    result = accept(cli, "--sign-key", str(keys["pm"]))
    assert result.exit_code == 0, result.output
    assert cli("ledger", "verify").exit_code == 0


def forged_label(cli, kit_root, keys, recorded_at: str) -> dict:
    """A label signed by the PM's key, dated ``recorded_at`` by whoever made it."""
    [verdict] = json.loads(cli("ledger", "show", "evals", "--json").stdout)
    record = {
        "record_id": "acc-20251231T000000000000Z-0badc10c",
        "recorded_at": recorded_at,
        "schema_version": 1,
        "run_id": verdict["run_id"],
        "initiative_id": verdict["initiative_id"],
        "label": "pass",
        "by": PM,
        "gate_verdict": verdict["verdict"],
        "gate_record_id": verdict["record_id"],
    }
    record["signature"] = signing.sign_label(record, sshsig.load_private_key(keys["pm"]))
    return record


def test_a_label_dated_inside_an_expired_window_does_not_count_now(cli, kit_root, keys):
    """Issue 24's reproduction: the key's valid-before is in the past; the label it
    signed claims a date before that. Checked at the time of checking, it is refused
    by verify and left out by the readers; the same label with a key still valid counts."""
    configure(kit_root, keys, required=True, signers=expired(keys, days=30))
    judged_pass(cli)
    earlier = stamp(datetime.now(UTC) - timedelta(days=60))
    label = forged_label(cli, kit_root, keys, earlier)
    kit_signers = kit_root / ".pmos/allowed_signers"
    forge(kit_root, "acceptances", label)
    verify = cli("ledger", "verify", "--json")
    assert verify.exit_code == 1
    problems = [p for r in json.loads(verify.stdout)["ledgers"] for p in r["problems"]]
    assert len(problems) == 1 and "label-signature" in problems[0]["problem"]
    assert "not at the time of checking" in problems[0]["problem"]
    report = json.loads(cli("metrics", "--json").stdout)
    assert report["pairs"] == 0
    [excluded] = report["excluded_records"]
    assert excluded["record_id"] == label["record_id"] and excluded["rule"] == "label-signature"
    # The honest counterpart: the same key with no window; the same label counts.
    kit_signers.write_text(f"{PM} {public(keys['pm'])}\n")
    assert cli("ledger", "verify").exit_code == 0
    assert json.loads(cli("metrics", "--json").stdout)["pairs"] == 1


def test_a_packed_outcome_stands_only_until_a_window_closes(cli, kit_root, keys):
    """A pack records its screening; with a validity window in the allowed-signers
    file the outcome holds until the window's next edge, then is checked again."""
    from pmos.gate.screen import KitScreen
    from pmos.kit import open_kit

    soon = datetime.now(UTC) + timedelta(days=3)
    line = f'{PM} valid-before="{ssh_date(soon)}" {public(keys["pm"])}\n'
    configure(kit_root, keys, required=True, signers=line)
    judged_pass(cli)
    assert accept(cli, "--sign-key", str(keys["pm"])).exit_code == 0
    assert cli("ledger", "pack").exit_code == 0
    screen = KitScreen(open_kit(kit_root))
    screen.problems("acceptances", {})  # nothing to check; reads the basis's files
    basis = screen.basis()
    assert datetime.fromisoformat(basis["until"]) == soon.replace(microsecond=0)
    assert screen.holds(basis)
    later = KitScreen(open_kit(kit_root))
    later.context.now = soon + timedelta(seconds=1)
    assert not later.holds(basis)


# ---------------------------------------------------------------- future-dated records


def test_a_verdict_dated_2099_is_reported_and_no_label_binds_to_it(cli, kit_root):
    judged_pass(cli)
    [real] = json.loads(cli("ledger", "show", "evals", "--json").stdout)
    future = {k: v for k, v in real.items() if k != "digest" and v is not None}
    future["record_id"] = "ev-20991231T000000000000Z-0badf00d"
    future["recorded_at"] = "2099-12-31T00:00:00Z"
    forge(kit_root, "evals", future)
    verify = cli("ledger", "verify", "--json")
    assert verify.exit_code == 1
    problems = [p for r in json.loads(verify.stdout)["ledgers"] for p in r["problems"]]
    assert [("future-dated" in p["problem"]) for p in problems] == [True], problems
    # The PM's next label judges the real latest verdict, not the future-dated one.
    label = accept(cli)
    assert label.exit_code == 0, label.output
    assert json.loads(label.stdout)["gate_record_id"] == real["record_id"]
    # Naming the future-dated verdict is refused: the label would predate it.
    before = ledger_bytes(kit_root)
    named = cli("accept", "r1", "--label", "pass", "--by", PM, "--verdict", future["record_id"])
    assert named.exit_code == 2 and "[label-before-verdict]" in named.stderr
    assert future["record_id"] in named.stderr
    assert ledger_bytes(kit_root) == before


# ---------------------------------------------------------------- input never dates a record


@pytest.mark.parametrize("field", ["recorded_at", "record_id"])
def test_input_cannot_date_a_verdict(cli, kit_root, tmp_path, verdict, field):
    before = ledger_bytes(kit_root)
    path = tmp_path / "verdict.json"
    path.write_text(json.dumps({**verdict, field: "2020-01-01T00:00:00Z"}))
    result = cli("eval", "record", "--file", str(path))
    assert result.exit_code == 2 and f"[writer-owned-field] {field}" in result.stderr
    assert ledger_bytes(kit_root) == before
    path.write_text(json.dumps(verdict))
    assert cli("eval", "record", "--file", str(path), "--allow-unknown-run").exit_code == 0


def test_the_writers_date_records_by_the_clock(cli):
    start = datetime.now(UTC)
    judged_pass(cli)
    assert accept(cli).exit_code == 0
    end = datetime.now(UTC)
    for kind in ("evals", "acceptances"):
        [record] = json.loads(cli("ledger", "show", kind, "--json").stdout)
        assert start <= datetime.fromisoformat(record["recorded_at"]) <= end
