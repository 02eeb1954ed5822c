"""The copying reader (``stored_lines``, what ``pmos sync`` reads): each record's
stored digest and canonical JSON, every line checked before it is handed on, and
the packs a caller already has left unread."""

from __future__ import annotations

import hashlib

import orjson
import pytest

import ledgerfiles
from pmos.store import lines, packs
from pmos.store.digest import record_digest
from pmos.store.read import records, stored_lines
from pmos.store.verify import verify_kind


def _verdict(i: int, **fields) -> dict:
    return {
        "record_id": f"ev-{i:05d}",
        "recorded_at": f"2026-02-01T00:00:{i // 1000:02d}.{i % 1000:06d}Z",
        "schema_version": 1,
        "run_id": f"run-{i % 7}",
        "initiative_id": "init-1",
        "verdict": "PASS",
        "note": 'a "quoted" back\\slash and \u00e9',
        **fields,
    }


def _flat(stored) -> list[tuple[str, bytes]]:
    return [line for batch in stored for line in batch]


def _renamed(path):
    """Give a pack the name its (edited) bytes hash to: a forger's pack, whole and sound."""
    name = f"pack-{hashlib.sha256(path.read_bytes()).hexdigest()}.jsonl"
    return path.rename(path.with_name(name))


def test_each_record_comes_with_its_stored_digest_and_canonical_json(kit, kit_root):
    ledgerfiles.pack_of(kit_root, "evals", [_verdict(i) for i in range(0, 300)])
    ledgerfiles.pack_of(kit_root, "evals", [_verdict(i) for i in range(300, 700)])
    for i in range(700, 705):
        ledgerfiles.forge(kit_root, "evals", _verdict(i))
    got = _flat(stored_lines(kit.store, "evals"))
    assert [orjson.loads(body)["record_id"] for _, body in got] == [
        f"ev-{i:05d}" for i in range(705)
    ]
    for digest, body in got:
        record = orjson.loads(body)
        assert digest == record_digest(record)
        assert body == orjson.dumps(record, option=orjson.OPT_SORT_KEYS)
    assert got == [
        (record_digest(r), orjson.dumps(r, option=orjson.OPT_SORT_KEYS))
        for r in records(kit.store, "evals", plain=True)
    ]


def test_overlapping_packs_are_merged_and_each_record_comes_once(kit, kit_root):
    ledgerfiles.pack_of(kit_root, "evals", [_verdict(i) for i in range(0, 60)])
    ledgerfiles.pack_of(kit_root, "evals", [_verdict(i) for i in range(40, 100)])
    stored = stored_lines(kit.store, "evals", have={"0" * 64})
    got = _flat(stored)
    assert len(got) == 100 and len({d for d, _ in got}) == 100
    assert sorted(stored.packs) == sorted(
        packs.name_digest(p) for p in ledgerfiles.pack_files(kit_root, "evals")
    )


def test_a_pack_the_caller_has_is_not_read(kit, kit_root):
    held = ledgerfiles.pack_of(kit_root, "evals", [_verdict(i) for i in range(0, 50)])
    fresh = ledgerfiles.pack_of(kit_root, "evals", [_verdict(i) for i in range(50, 80)])
    ledgerfiles.forge(kit_root, "evals", _verdict(80))
    stored = stored_lines(kit.store, "evals", have={packs.name_digest(held)})
    assert [orjson.loads(b)["record_id"] for _, b in _flat(stored)] == [
        f"ev-{i:05d}" for i in range(50, 81)
    ]
    assert stored.packs == [packs.name_digest(fresh)] and stored.have_records == 50
    # Not read at all: damage past its header goes unseen here (verification sees it).
    header, rest = held.read_bytes().split(b"\n", 1)
    held.write_bytes(header + b"\n" + rest.replace(b"PASS", b"FAIL"))
    assert len(_flat(stored_lines(kit.store, "evals", have={packs.name_digest(held)}))) == 31
    assert len(_flat(stored_lines(kit.store, "evals"))) == 31  # read: left out whole


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        ("edited", "does not match its digest"),
        ("no digest", "carries no digest"),
        ("another ledger's record", "is not one of the evals ledger"),
    ],
)
def test_a_pack_line_that_does_not_check_is_left_out_and_named_with_its_line(
    kit, kit_root, damage, problem
):
    """Even in a pack whose bytes match its name (a forger renamed it): the digest the
    reader hands on is the one the line carries, so every line is checked."""
    pack = ledgerfiles.pack_of(kit_root, "evals", [_verdict(i) for i in range(20)])
    rows = pack.read_bytes().splitlines(keepends=True)
    if damage == "edited":
        rows[5] = rows[5].replace(b"PASS", b"FAIL")
    elif damage == "no digest":
        rows[5] = rows[5][: -(lines.TAIL_LEN + 1)] + b"}\n"
    else:
        record = orjson.loads(rows[5])
        record.pop("digest")
        rows[5] = ledgerfiles.forged_line({**record, "record_id": "acc-00004"})[0]
    pack.write_bytes(b"".join(rows))
    pack = _renamed(pack)
    assert len(_flat(stored_lines(kit.store, "evals"))) == 19  # the line is left out
    report = verify_kind(kit.store, "evals")
    assert [(p.file, p.line) for p in report.problems] == [(str(pack), 6)]
    assert problem in report.problems[0].problem


def test_a_loose_record_of_another_ledger_is_left_out(kit, kit_root):
    ledgerfiles.forge(kit_root, "evals", _verdict(1))
    stray = ledgerfiles.forge(kit_root, "evals", _verdict(2, record_id="acc-00002"))
    assert len(_flat(stored_lines(kit.store, "evals"))) == 1
    report = verify_kind(kit.store, "evals")
    assert [p.file for p in report.problems] == [str(stray)]
    assert "is not one of the evals ledger" in report.problems[0].problem


def test_a_month_read_whole_from_the_memo_hands_on_the_same_lines(kit, kit_root):
    """Once this machine's memo holds a pack's line checks, a month that is that pack
    alone is read whole (integrity.WholePack) and handed on without decoding a line:
    the same digests and canonical JSON, in the same order, as the first reading."""
    from pmos.store import integrity, screencache

    ledgerfiles.pack_of(kit_root, "evals", [_verdict(i) for i in range(0, 300)])
    first = _flat(stored_lines(kit.store, "evals"))  # checks every line, fills the memo
    memo = screencache.cache_folder(kit.store.root)
    buckets = list(integrity.scan(kit.store.sources("evals"), "evals", memo=memo))
    assert [b.whole is not None for b in buckets] == [True]  # the path under test
    again = _flat(stored_lines(kit.store, "evals"))
    assert again == first and len(again) == 300
    for digest, body in again:
        assert digest == record_digest(orjson.loads(body))
