"""Issue 23.6: readers screen loose records without whole-ledger passes.

* A loose record's screening outcome is remembered outside the repository, per
  record, keyed by the content digest the integrity check verified and by the
  screen's basis (rules version, pmos.yaml, allowed signers, rubrics read,
  ``until``, ``git:HEAD`` when version order read HEAD) plus the files of every
  ledger its checks read: a warm read checks no rule and no signature.
* A signed label's verdict digest is computed only for the verdicts labels name:
  the newest verdicts first, then at most one forward pass for the rest.
* The newest version a kind holds is read newest first, and only until a record
  of the newest version writers write.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson
import pytest

from conftest import judged_pass
from gate_support import make_product
from ledgerfiles import forge, forged_line, record_files
from pmos.gate import recheck
from pmos.gate.recheck import Context
from pmos.gate.screen import KitScreen
from pmos.gate.signing import verdict_sha256
from pmos.gate.versions import newest_version
from pmos.kit import Kit, open_kit
from pmos.store.read import records
from pmos.store.screening import Excluded
from test_signing import accept, configure, keygen
from test_versions_forward import logged, version_one, with_contract

pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen")


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return {"pm": keygen(tmp_path_factory.mktemp("keys"), "pm")}


class CountingScreen(KitScreen):
    """The kit's screen, noting every record it checks and every batch it prepares
    (a label's signature is verified only in one of these)."""

    def __init__(self, kit: Kit) -> None:
        super().__init__(kit)
        self.checked: list[str] = []
        self.prepared = 0

    def problems(self, kind: str, record: Any) -> list[Any]:
        self.checked.append(record.get("record_id"))
        return super().problems(kind, record)

    def prepare(self, kind: str, records: list[Any]) -> None:
        self.prepared += 1
        super().prepare(kind, records)


def read(kit_root: Path, kind: str) -> tuple[CountingScreen, list[str], list[tuple[Any, ...]]]:
    """One reader's pass over ``kind``, screened: (its screen, the record ids that
    count, what was left out as (record id, rule))."""
    screen, excluded = CountingScreen(open_kit(kit_root)), Excluded()
    kept = [
        r["record_id"] for r in records(screen.kit.store, kind, screen=screen, excluded=excluded)
    ]
    return screen, kept, sorted((e.record_id, e.rule) for e in excluded.items)


def signed_kit(cli, kit_root: Path, keys: dict[str, Path]) -> dict[str, Any]:
    """Two verdicts, two signed labels, and one hand-made unsigned label (left out)."""
    configure(kit_root, keys, required=True)
    judged_pass(cli, "r1")
    judged_pass(cli, "r2")
    for run in ("r1", "r2"):
        assert accept(cli, "--sign-key", str(keys["pm"]), run=run).exit_code == 0
    good = json.loads(accept(cli, "--sign-key", str(keys["pm"]), run="r1").stdout)
    unsigned = {k: v for k, v in good.items() if k not in ("signature", "digest")}
    unsigned["record_id"] = good["record_id"][:-8] + "0b0b0b0b"
    forge(kit_root, "acceptances", unsigned)
    return unsigned


# ---------------------------------------------------------------- the loose cache


def test_a_warm_read_checks_no_loose_record_and_gives_the_same_answer(cli, kit_root, keys):
    unsigned = signed_kit(cli, kit_root, keys)
    cold, kept, left_out = read(kit_root, "acceptances")
    assert len(cold.checked) == 4 and cold.prepared == 1
    assert left_out == [(unsigned["record_id"], "label-signature")]
    assert unsigned["record_id"] not in kept and len(kept) == 3
    warm, kept_again, left_out_again = read(kit_root, "acceptances")
    assert warm.checked == [] and warm.prepared == 0  # no rule, no signature checked
    assert (kept_again, left_out_again) == (kept, left_out)
    # verify and metrics agree with the warm readers.
    result = cli("ledger", "verify", "--json")
    assert result.exit_code == 1 and "unsigned label" in result.stdout
    assert read(kit_root, "acceptances")[2] == left_out


def test_a_changed_allowed_signers_file_or_config_or_rubric_screens_again(cli, kit_root, keys):
    signed_kit(cli, kit_root, keys)
    read(kit_root, "acceptances")
    read(kit_root, "evals")
    signers = kit_root / ".pmos" / "allowed_signers"
    signers.write_text(signers.read_text() + "# a comment: another file\n")
    assert len(read(kit_root, "acceptances")[0].checked) == 4
    assert read(kit_root, "acceptances")[0].checked == []
    config = kit_root / "pmos.yaml"
    config.write_text(config.read_text() + "\n# edited\n")
    assert len(read(kit_root, "acceptances")[0].checked) == 4
    assert read(kit_root, "evals")[0].checked != []
    assert read(kit_root, "evals")[0].checked == []
    [rubric] = {json.loads(p.read_text())["rubric_path"] for p in record_files(kit_root, "evals")}
    with (kit_root / rubric).open("a", encoding="utf-8") as handle:
        handle.write("\n")
    assert len(read(kit_root, "evals")[0].checked) == 2


def test_a_new_record_in_a_ledger_the_checks_read_screens_again(cli, kit_root, keys):
    """A label's check reads the verdict it names: a verdict added (or replaced)
    since makes the labels be checked again; a ledger they do not read does not."""
    signed_kit(cli, kit_root, keys)
    read(kit_root, "acceptances")
    assert (
        cli(
            "run", "register", "--run-id", "r9", "--initiative-id", "i", "--builder-model", "m"
        ).exit_code
        == 0
    )
    assert read(kit_root, "acceptances")[0].checked == []  # labels read no run registration
    judged_pass(cli, "r3")
    assert len(read(kit_root, "acceptances")[0].checked) == 4


def test_a_record_replaced_on_disk_has_a_new_digest_and_is_screened_again(cli, kit_root, keys):
    signed_kit(cli, kit_root, keys)
    _, kept, _ = read(kit_root, "acceptances")
    path = next(p for p in record_files(kit_root, "acceptances") if "signature" in p.read_text())
    label = orjson.loads(path.read_bytes())
    path.unlink()
    edited = {k: v for k, v in label.items() if k != "digest"} | {"label": "fail"}
    forge(kit_root, "acceptances", edited)  # resealed: a new digest, a new name
    screen, kept_now, left_out = read(kit_root, "acceptances")
    assert screen.checked == [label["record_id"]]  # only the new bytes are checked
    assert (label["record_id"], "label-signature") in left_out  # the PM signed "pass"
    assert kept_now == [r for r in kept if r != label["record_id"]]


def test_a_forged_cache_entry_cannot_make_a_bad_record_count(cli, kit_root, keys, tmp_path):
    unsigned = signed_kit(cli, kit_root, keys)
    _, kept, left_out = read(kit_root, "acceptances")
    [entry] = (tmp_path / "pmos-cache").rglob("loose-acceptances-*.json")
    data = orjson.loads(entry.read_bytes())
    # An entry saying the bad record passed, under a basis that does not hold, is a miss.
    forged_group = {
        "basis": {**data["groups"][0]["basis"], "rules": "forged"},
        "outcomes": {d: None for d in data["groups"][0]["outcomes"]},
    }
    entry.write_bytes(orjson.dumps({**data, "groups": [forged_group]}))
    assert read(kit_root, "acceptances")[1:] == (kept, left_out)
    # A bad record whose file claims the digest of a record the cache says passed:
    # the integrity check refuses its bytes, so no outcome of that digest applies.
    read(kit_root, "acceptances")  # the cache holds the real outcomes again
    good = next(p for p in record_files(kit_root, "acceptances") if "signature" in p.read_text())
    claimed = orjson.loads(good.read_bytes())["digest"]
    line, _ = forged_line({**unsigned, "record_id": unsigned["record_id"][:-8] + "0c0c0c0c"})
    lying = line.replace(
        line[line.rindex(b'"digest":"') :], b'"digest":"' + claimed.encode() + b'"}\n'
    )
    lying_file = good.parent / ("20990101T000000Z-" + claimed + ".json")
    lying_file.write_bytes(lying)
    screen, kept_now, _ = read(kit_root, "acceptances")
    assert screen.checked == []  # refused by the integrity check, before screening
    assert unsigned["record_id"][:-8] + "0c0c0c0c" not in kept_now
    assert kept_now == kept
    result = cli("ledger", "verify", "--json")
    assert result.exit_code == 1 and lying_file.name in result.stdout


def test_an_outcome_time_may_change_is_not_remembered(cli, kit_root, keys):
    """A record dated after the time of checking is left out, and checked again on
    every read: once its time has come it counts (a writer's clock ahead of this one)."""
    unsigned = signed_kit(cli, kit_root, keys)
    ahead = {**unsigned, "record_id": unsigned["record_id"][:-8] + "0a0a0a0a"}
    ahead["recorded_at"] = "2099" + unsigned["recorded_at"][4:]
    forge(kit_root, "acceptances", ahead)
    _, _, left_out = read(kit_root, "acceptances")
    assert (ahead["record_id"], "future-dated") in left_out
    screen, _, left_out_again = read(kit_root, "acceptances")
    assert screen.checked == [ahead["record_id"]] and left_out_again == left_out


def test_a_damaged_cache_entry_is_a_miss(cli, kit_root, keys, tmp_path):
    signed_kit(cli, kit_root, keys)
    _, kept, left_out = read(kit_root, "acceptances")
    [entry] = (tmp_path / "pmos-cache").rglob("loose-acceptances-*.json")
    entry.write_text("{not json")
    screen, kept_now, left_out_now = read(kit_root, "acceptances")
    assert len(screen.checked) == 4 and (kept_now, left_out_now) == (kept, left_out)


# ---------------------------------------------------------------- verdict digests


def test_a_signed_label_on_a_verdict_beyond_the_look_back_still_verifies(
    cli, kit_root, keys, monkeypatch
):
    configure(kit_root, keys, required=True)
    judged_pass(cli, "r1")
    label = json.loads(accept(cli, "--sign-key", str(keys["pm"]), run="r1").stdout)
    for run in ("r2", "r3", "r4"):
        judged_pass(cli, run)
    monkeypatch.setattr(recheck, "RECENT_VERDICTS", 2)
    assert cli("ledger", "verify").exit_code == 0
    verdicts = {v["run_id"]: v for v in records(open_kit(kit_root).store, "evals", plain=True)}
    context = Context(open_kit(kit_root))
    context.want_digests({label["gate_record_id"], verdicts["r2"]["record_id"], "ev-absent"})
    assert context.verdict_digest(label["gate_record_id"]) == verdict_sha256(verdicts["r1"])
    assert context.digest_passes == 1
    # Every id named with it was answered by that one pass, the absent one too.
    assert context.verdict_digest(verdicts["r2"]["record_id"]) == verdict_sha256(verdicts["r2"])
    assert context.verdict_digest("ev-absent") is None
    assert context.verdict_digest(verdicts["r4"]["record_id"]) == verdict_sha256(verdicts["r4"])
    assert context.digest_passes == 1


def test_a_signed_label_naming_an_absent_verdict_does_not_count(cli, kit_root, keys, monkeypatch):
    configure(kit_root, keys, required=True)
    judged_pass(cli, "r1")
    label = json.loads(accept(cli, "--sign-key", str(keys["pm"]), run="r1").stdout)
    for run in ("r2", "r3"):
        judged_pass(cli, run)
    for path in record_files(kit_root, "evals"):
        if json.loads(path.read_text())["run_id"] == "r1":
            path.unlink()
    monkeypatch.setattr(recheck, "RECENT_VERDICTS", 1)
    result = cli("ledger", "verify", "--json")
    assert result.exit_code == 1
    problems = [p["problem"] for r in json.loads(result.stdout)["ledgers"] for p in r["problems"]]
    assert any("invalid signature" in p for p in problems)
    context = Context(open_kit(kit_root))
    assert context.verdict(label["gate_record_id"]) is None
    assert context.verdict_digest(label["gate_record_id"]) is None
    assert context.digest_passes == 1


# ---------------------------------------------------------------- newest version


def _then_fail(first: list[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
    yield from first
    raise AssertionError("read past a record of the newest version")


def test_the_newest_version_stops_at_a_record_of_the_version_writers_write():
    assert newest_version(_then_fail([{"schema_version": 1}, {"schema_version": 2}]), cap=2) == 2
    # Same answers as reading everything, when nothing reaches the cap.
    ledger = [{"schema_version": 1}, {}, {"schema_version": True}]
    assert newest_version(iter(ledger), cap=2) == newest_version(ledger) == 1
    # No version beyond the writers' counts (a hand-made record may say anything).
    assert newest_version([{"schema_version": 9}], cap=2) == 2


# ---------------------------------------------------------------- HEAD in the basis


def test_an_outcome_that_read_head_is_screened_again_once_head_moves(
    tmp_path, keys, cli, monkeypatch
):
    """A version-1 verdict not committed at HEAD, in a kit holding version 2, is left
    out; its outcome stood on HEAD, so once it is committed it is checked again
    (and counts: it went through the gate when it merged)."""
    monkeypatch.setenv("PMOS_CACHE_DIR", str(tmp_path / "cache"))
    product = make_product(tmp_path, keys, cli, signing=False)
    monkeypatch.setenv("PMOS_ROOT", str(product.kit))
    monkeypatch.chdir(product.repo)
    with_contract(product, "r1", "r2")
    verdict = logged(product, "r1")
    product.commit("a version-2 verdict")
    forge(product.kit, "evals", version_one(verdict, "r2"))
    first, _, left_out = read(product.kit, "evals")
    assert "ev-handmade-0001" in first.checked
    assert left_out == [("ev-handmade-0001", "version-forward")]
    assert read(product.kit, "evals")[0].checked == []  # warm while HEAD stays
    product.commit("the version-1 verdict, committed")
    screen, kept, left_out = read(product.kit, "evals")
    assert "ev-handmade-0001" in screen.checked
    assert left_out == [] and "ev-handmade-0001" in kept
