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

import pytest

from conftest import judged_pass
from ledgerfiles import forge, record_files
from pmos.gate import recheck
from pmos.gate.recheck import Context
from pmos.gate.screen import KitScreen
from pmos.gate.signing import verdict_sha256
from pmos.gate.versions import newest_version
from pmos.kit import Kit, open_kit
from pmos.store.read import records
from pmos.store.screening import Excluded
from test_signing import accept, configure, keygen

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
