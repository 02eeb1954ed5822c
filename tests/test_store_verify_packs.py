"""Verification of packs a caller screened before (``pmos sync`` remembers them in
its database, outside the repository): their records are still checked by the
store's one rule, like every record; only the writers' rules are not applied again."""

from __future__ import annotations

import hashlib
from pathlib import Path

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


def _months_read_whole(kit) -> dict[str, bool]:
    from pmos.store.read import scanned

    return {b.name: b.whole is not None for b in scanned(kit.store, "acceptances")}


def test_a_month_read_whole_counts_the_lines_its_header_names(kit, kit_root):
    """A month whose memo recalls every line as sound is read whole, its lines
    counted by decoding them: its header must name that many records. A pack
    whose header names one more is refused by its header even when this
    machine's memo (pmos.store.linememo) is made to vouch for every line."""
    from pmos.store import linememo, screencache

    sound = ledgerfiles.pack_of(kit_root, "acceptances", [_label(i) for i in range(3)])
    first = verify_kind(kit.store, "acceptances")
    assert first.ok and first.records == 3
    assert _months_read_whole(kit) == {"2026-03": True}  # its memo written by the first reading
    assert verify_kind(kit.store, "acceptances").head == first.head
    sound.unlink()
    odd = _overcounted(kit_root)
    memo = screencache.cache_folder(kit_root)
    linememo.save_pack(memo, odd, "acceptances", "2026-03", {}, True)  # a memo that lies
    assert linememo.load_pack(memo, odd, "acceptances", "2026-03") == ({}, True)
    assert _months_read_whole(kit) == {"2026-03": False}
    report = verify_kind(kit.store, "acceptances")
    assert [p.line for p in report.problems] == [1]
    assert "pack header of bucket 2026-03 for 3 records" in report.problems[0].problem
    assert report.records == 0


def test_the_head_is_one_digest_over_the_sorted_digests():
    """A ledger's head (its months read whole kept as one text each) and a
    checkpoint's summary (``kind:digest`` lines) are the SHA-256 over the sorted
    lines."""
    import hashlib as h

    from pmos.store.verify import KindReport, summary_digest

    def expected(items: list[str]) -> str:
        return h.sha256("".join(f"{d}\n" for d in sorted(items)).encode()).hexdigest()

    digests = [h.sha256(str(i).encode()).hexdigest() for i in range(1000)]
    mixed = [f"{['evals', 'runs', 'tasks'][i % 3]}:{d}" for i, d in enumerate(digests)]
    for items in (digests, mixed, digests[:1], []):
        assert summary_digest(items) == expected(items)
    report = KindReport("acceptances", Path("."))
    assert report.head is None
    for n, digest in enumerate(digests):
        report.count(digest, f"acc-{n}")
    assert report.head == expected(digests)


def test_a_month_of_a_pack_and_loose_files_applies_the_rule_to_both(
    kit, kit_root, monkeypatch, tmp_path
):
    """A month holding a pack and loose files (a record added after the month was
    packed): a loose copy of a pack record counts once, a loose record carrying a
    pack record's id leaves both out, and a later month's record carrying an
    earlier month's id is left out. The same with no memo, on the reading that
    fills it and on one that recalls it (the pack's lines then decoded in one call)."""
    from pmos.store.read import records

    earlier = {**_label(90), "recorded_at": "2026-02-01T00:00:00.000090Z"}
    ledgerfiles.forge(kit_root, "acceptances", earlier)
    pack = ledgerfiles.pack_of(kit_root, "acceptances", [_label(i) for i in range(4)])
    ledgerfiles.forge(kit_root, "acceptances", _label(1))  # a copy: one record
    twin = {**_label(2), "label": "fail", "recorded_at": "2026-03-02T00:00:00Z"}
    ledgerfiles.forge(kit_root, "acceptances", twin)  # acc-00002 twice: neither counts
    late = {**_label(90), "recorded_at": "2026-04-03T00:00:00Z", "label": "fail"}
    ledgerfiles.forge(kit_root, "acceptances", late)  # an earlier month's id, a month later
    ledgerfiles.forge(kit_root, "acceptances", _label(5))

    def reading():
        report = verify_kind(kit.store, "acceptances")
        problems = sorted((p.file, p.line, p.problem.split(":")[0]) for p in report.problems)
        counted = [r["record_id"] for r in records(kit.store, "acceptances")]
        return report.records, report.head, problems, counted

    monkeypatch.setenv("PMOS_CACHE_DIR", str(kit_root / "cache"))  # inside the kit: no memo
    unmemoed = reading()
    monkeypatch.setenv("PMOS_CACHE_DIR", str(tmp_path / "memo"))
    assert reading() == reading() == unmemoed
    count, _, problems, counted = unmemoed
    assert counted == ["acc-00090", "acc-00000", "acc-00001", "acc-00003", "acc-00005"]
    assert count == 5
    assert [(file, line) for file, line, _ in problems if file == str(pack)] == [(str(pack), 4)]
    assert len(problems) == 3 and {why for *_, why in problems} == {"duplicate record_id"}


def test_reading_a_month_leaves_the_garbage_collector_as_it_was(kit, kit_root):
    """The collector is paused while a month is read, and left as the caller had it."""
    import gc

    ledgerfiles.pack_of(kit_root, "acceptances", [_label(i) for i in range(3)])
    ledgerfiles.forge(kit_root, "acceptances", _label(5))
    assert gc.isenabled()
    assert verify_kind(kit.store, "acceptances").records == 4
    assert gc.isenabled()
    gc.disable()
    try:
        assert verify_kind(kit.store, "acceptances").records == 4
        assert not gc.isenabled()
    finally:
        gc.enable()
