"""What a writer does before a ledger's lock, and what only under it (issue 16, item 10).

A run's record does not depend on the runs ledger, so the store validates it
(:func:`pmos.store.append.seal`) before the lock is taken: a 50,000-criterion
contract once held the runs lock for seconds of schema validation while every
other writer of runs waited. Here this process holds the lock while a real pmos
process writes, so what waits for the lock and what does not is seen directly,
never timed.
"""

from __future__ import annotations

import fcntl
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from conftest import REGISTER_R, ledger_bytes, pmos_process
from pmos.errors import RecordRejected
from pmos.kit import Kit
from pmos.store import files, read
from pmos.store.append import MAX_RECORD_BYTES, Draft, append, record_meta, seal
from pmos.store.layout import MARKER


@contextmanager
def locked(kit: Kit, kind: str) -> Iterator[None]:
    """Hold ``kind``'s ledger lock, as a writer of another process would."""
    folder = kit.store.ensure_folder(kind)
    with open(folder / MARKER, "rb") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield


def criteria(n: int, text: str = "criterion") -> list[dict[str, Any]]:
    return [{"id": f"c{i}", "text": f"{text} {i}", "test_method": "manual"} for i in range(n)]


def write_contract(tmp_path: Path, done: list[dict[str, Any]]) -> Path:
    path = tmp_path / "contract.json"
    path.write_text(json.dumps({"done_criteria": done}), encoding="utf-8")
    return path


#: Contracts the runs ledger refuses whatever it holds, and the rule each breaks.
#: "size" is the issue's 50,000-criterion case in small: a contract too big to
#: store, which the store validated and then refused under the lock.
REFUSED = {
    "schema": ([{"id": "c1", "test_method": "manual"}], "[schema:required]"),
    "size": (criteria(MAX_RECORD_BYTES // 8000 + 20, "x" * 8000), "[record-size] (record)"),
    "ids": (criteria(2) + criteria(1), "[contract-unique]"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_run_refused_on_its_own_content_never_waits_for_the_lock(kit, kit_root, tmp_path, case):
    """With the runs lock held by another process, a registration the ledger
    could never take is refused (exit 2) while the lock is still held: it did
    not wait for it. Under the lock it would wait, then give up (exit 75)."""
    done, rule = REFUSED[case]
    contract = write_contract(tmp_path, done)
    before = ledger_bytes(kit_root)
    with locked(kit, "runs"):
        result = pmos_process(*REGISTER_R, "--contract", str(contract), timeout=120)
        assert result.returncode == 2, result.stderr[-2000:]
    assert rule in result.stderr
    assert ledger_bytes(kit_root) == before


def test_a_valid_run_is_written_only_under_the_lock(cli, kit, kit_root, tmp_path, monkeypatch):
    """What is validated before the lock is still written under it: with the
    lock held the writer gives up (exit 75, nothing written); once it is free
    the same registration is stored."""
    monkeypatch.setattr(files, "LOCK_TIMEOUT_S", 0.2)
    contract = write_contract(tmp_path, criteria(500))
    before = ledger_bytes(kit_root)
    with locked(kit, "runs"):
        result = cli(*REGISTER_R, "--contract", str(contract))
        assert result.exit_code == 75, result.output
        assert "could not lock the ledger" in result.stderr
    assert ledger_bytes(kit_root) == before
    assert cli(*REGISTER_R, "--contract", str(contract)).exit_code == 0
    (run,) = read.records(kit.store, "runs")
    assert len(run["contract"]["done_criteria"]) == 500


def _run_record(run_id: str) -> dict[str, Any]:
    record = {**record_meta("runs"), "run_id": run_id, "initiative_id": "i", "builder_model": "m"}
    return {**record, "contract": {"done_criteria": criteria(3)}}


def test_a_sealed_record_is_written_as_it_was_validated(kit, kit_root):
    """The safety net holds for a record validated before the lock: what is
    written is the bytes that were validated, so a change made afterwards (here
    one the schema refuses) never reaches the ledger, and a record sealed for
    one kind is validated again for another."""
    record = _run_record("r")
    sealed = seal("runs", record)
    record["contract"]["done_criteria"][0]["test_method"] = "not a method"
    record["unknown_field"] = True
    append(kit.store, "runs", lambda: Draft([sealed]))
    (stored,) = read.records(kit.store, "runs")
    assert stored["contract"]["done_criteria"][0]["test_method"] == "manual"
    assert "unknown_field" not in stored

    before = ledger_bytes(kit_root)
    elsewhere = seal("runs", _run_record("r2"))
    with pytest.raises(RecordRejected) as info:
        append(kit.store, "evals", lambda: Draft([elsewhere]))
    assert info.value.violations
    assert ledger_bytes(kit_root) == before
