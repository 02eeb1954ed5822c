"""Verification of packs a caller screened before (``pmos sync`` remembers them in
its database, outside the repository): their records are still checked by the
store's one rule, like every record; only the writers' rules are not applied again."""

from __future__ import annotations

import hashlib

import ledgerfiles
from pmos.store import packs
from pmos.store.verify import verify_kind


def _label(i: int) -> dict:
    return {
        "record_id": f"acc-{i:05d}",
        "recorded_at": f"2026-03-01T00:00:00.{i:06d}Z",
        "schema_version": 1,
        "run_id": f"run-{i}",
        "label": "pass",
        "by": "pm",
    }


def _overcounted(kit_root) -> str:
    """A pack whose header claims a record more than it holds, named by its bytes."""
    pack = ledgerfiles.pack_of(kit_root, "acceptances", [_label(i) for i in range(3)])
    data = pack.read_bytes().replace(b'"records":3', b'"records":4', 1)
    pack.unlink()
    name = hashlib.sha256(data).hexdigest()
    (pack.parent / f"pack-{name}.jsonl").write_bytes(data)
    return name


def test_a_pack_verified_before_is_still_checked_by_the_stores_rule(kit, kit_root):
    odd = _overcounted(kit_root)
    fine = packs.name_digest(
        ledgerfiles.pack_of(kit_root, "acceptances", [_label(i) for i in range(10, 12)])
    )
    for verified in (frozenset(), {odd}):  # no flag outside the pack makes it count
        report = verify_kind(kit.store, "acceptances", verified_packs=verified)
        assert [p.line for p in report.problems] == [1]
        assert "pack header" in report.problems[0].problem
        assert report.checked_packs == [fine] and report.records == 2


def test_a_pack_verified_before_but_edited_since_is_refused(kit, kit_root):
    pack = ledgerfiles.pack_of(kit_root, "acceptances", [_label(i) for i in range(3)])
    name = packs.name_digest(pack)
    ledgerfiles.edit(pack, b'"label":"pass"', b'"label":"fail"')
    report = verify_kind(kit.store, "acceptances", verified_packs={name})
    assert not report.ok and "does not match its name" in report.problems[0].problem
