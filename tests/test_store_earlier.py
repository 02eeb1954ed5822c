"""The memo of a run of packed months (:mod:`pmos.store.earlier`): a reading that
recalls that a run of leading months, each one pack, repeats no record id counts
exactly what a reading without the memo counts, leaves out the same records for
the same reasons, and stops taking the memo's word where a month is not what it
speaks of.

Records come from the real writers, moved into months and packed the way
``pmos ledger pack`` lays them out; the damage is what a person with an editor
can do.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ledgerfiles
from pmos.store import integrity
from pmos.store.earlier import EarlierIds
from pmos.store.read import scanned
from test_metrics import judge, label

#: A month after the run's, of loose records (the kit's own are of today's month).
LATER = "2025-06"


def moved(made: dict, month: str, n: int, record_id: str | None = None) -> dict:
    """A copy of the verdict ``made`` in ``month`` (day ``n``), of its own run."""
    return {
        **made,
        "run_id": f"r-{month}-{n}",
        "record_id": record_id or f"ev-{month.replace('-', '')}-{n:04d}",
        "recorded_at": f"{month}-{n:02d}T10:00:00.000000Z",
    }


def readings(cli) -> tuple:
    """What every reader says: metrics, the queue's debts, verify's problems, the ledger."""
    metrics = cli("metrics", "--json")
    queue = cli("queue", "--json")
    verified = cli("ledger", "verify", "--json")
    shown = cli("ledger", "show", "evals", "--jsonl")
    problems = [
        (p["file"], p["line"], p["problem"])
        for ledger in json.loads(verified.stdout)["ledgers"]
        for p in ledger["problems"]
    ]
    return (
        json.loads(metrics.stdout),
        {  # who owes what (not how old it is: a reading may cross a second)
            k: [(debt["run_id"], debt.get("record_id")) for debt in v]
            for k, v in json.loads(queue.stdout).items()
            if "debt" in k
        },
        verified.exit_code,
        sorted(problems),
        shown.stdout,
    )


def run_entries(cache) -> list:
    return sorted(cache.rglob("run-*.npz"))


def words(kit) -> dict[str, bool]:
    """Per month of the verdicts: whether it was counted on the memo's word."""
    return {bucket.name: bucket.on_word for bucket in scanned(kit.store, "evals")}


def on_word(made: dict, *months: str) -> dict[str, bool]:
    """What :func:`words` gives when ``months`` of the run are counted on its word."""
    run = {month: month in months for month in ("2025-01", "2025-02", "2025-03")}
    return {**run, LATER: False, made["recorded_at"][:7]: False}


def unmemoed(cli, monkeypatch, kit_root, tmp_path):
    """What every reader says with no memo at all (a cache folder inside the kit is
    none), and the memo folder the test's later readings use."""
    monkeypatch.setenv("PMOS_CACHE_DIR", str(kit_root / "cache"))
    said = readings(cli)
    cache = tmp_path / "memo"
    monkeypatch.setenv("PMOS_CACHE_DIR", str(cache))
    return said, cache


@pytest.fixture
def packed(kit, kit_root):
    """Three months each one pack, then this month's verdicts and labels, loose."""
    made = judge(kit, "r0", "PASS")
    label(kit, "r0", "pass")
    packs = [
        ledgerfiles.pack_of(kit_root, "evals", [moved(made, month, n) for n in (1, 2, 3)])
        for month in ("2025-01", "2025-02", "2025-03")
    ]
    return made, packs


def test_a_run_recalled_from_the_memo_counts_what_a_reading_without_it_counts(
    cli, kit, kit_root, packed, monkeypatch, tmp_path
):
    made, _ = packed
    # This month, a verdict repeating an id of the run's first month: left out, as an
    # earlier month holds it.
    ledgerfiles.forge(kit_root, "evals", moved(made, LATER, 4, "ev-202501-0002"))
    none, cache = unmemoed(cli, monkeypatch, kit_root, tmp_path)
    first = readings(cli)  # every line checked; the run remembered
    assert len(run_entries(cache)) == 1  # the verdicts' run (the labels have none)
    assert words(kit) == on_word(made, "2025-01", "2025-02", "2025-03")
    recalled = readings(cli)
    assert none == first == recalled
    code, problems = recalled[2], recalled[3]
    assert code == 1
    assert [p for p in problems if p[2] == integrity.EARLIER_MONTH]


def test_a_run_that_repeats_an_id_is_not_remembered(
    cli, kit, kit_root, packed, monkeypatch, tmp_path
):
    made, _ = packed
    ledgerfiles.pack_of(
        kit_root, "evals", [moved(made, "2025-04", 1), moved(made, "2025-04", 2, "ev-202502-0003")]
    )
    none, cache = unmemoed(cli, monkeypatch, kit_root, tmp_path)
    assert readings(cli) == readings(cli) == none
    assert run_entries(cache) == []
    assert not any(words(kit).values())
    assert (str(ledgerfiles.pack_files(kit_root, "evals")[-1]), 3, integrity.EARLIER_MONTH) in (
        none[3]
    )


@pytest.mark.parametrize("damage", ["pack", "line memo"])
def test_a_month_that_is_not_the_memos_ends_its_word(
    cli, kit, kit_root, packed, monkeypatch, tmp_path, damage
):
    """A month of a remembered run whose pack no longer hashes to its name is left out
    whole, and a later record repeating one of its ids then counts; a month whose
    lines the line memo no longer recalls is read line by line. Either way the
    readings are those of a reading with no memo at all."""
    made, packs = packed
    ledgerfiles.forge(kit_root, "evals", moved(made, LATER, 4, "ev-202502-0001"))
    cache = tmp_path / "memo"
    monkeypatch.setenv("PMOS_CACHE_DIR", str(cache))
    readings(cli)
    assert run_entries(cache)

    def damaged() -> None:
        if damage == "pack":
            ledgerfiles.edit(packs[1], b'"run_id":"r-2025-02-2"', b'"run_id":"r-2025-02-9"')
        else:  # recalled again once checked again: the damage is made before each reading
            for memo in cache.rglob(f"lines-{packs[1].name[5:-6]}.json"):
                memo.unlink()

    damaged()
    assert words(kit) == on_word(made, "2025-01")
    if damage != "pack":
        damaged()
    memoed = readings(cli)
    monkeypatch.setenv("PMOS_CACHE_DIR", str(kit_root / "cache"))
    assert memoed == readings(cli)
    problems = memoed[3]
    (later,) = [p for p in ledgerfiles.record_files(kit_root, "evals") if LATER in str(p)]
    late = (str(later), None, integrity.EARLIER_MONTH)
    assert (late in problems) is (damage != "pack")


def test_an_id_the_memo_cannot_hold_leaves_the_run_unremembered(
    cli, kit, kit_root, monkeypatch, tmp_path
):
    """A record id holding U+0000 cannot be told apart from its padding in the memo's
    sorted column: no entry is made, and every reading agrees."""
    made = judge(kit, "r0", "PASS")
    for month in ("2025-01", "2025-02"):
        ledgerfiles.pack_of(
            kit_root, "evals", [moved(made, month, 1), moved(made, month, 2, f"ev-{month}\0x")]
        )
    ledgerfiles.forge(kit_root, "evals", moved(made, "2025-03", 1, "ev-2025-01\0x"))
    none, cache = unmemoed(cli, monkeypatch, kit_root, tmp_path)
    assert readings(cli) == readings(cli) == none
    assert run_entries(cache) == []
    assert any(p[2] == integrity.EARLIER_MONTH for p in none[3])


@pytest.mark.parametrize(
    "damage",
    [b"not a zip", b"", "unsorted", "months out of range"],
)
def test_a_damaged_run_entry_is_a_miss(cli, kit, kit_root, packed, monkeypatch, tmp_path, damage):
    import numpy as np

    made, _ = packed
    ledgerfiles.forge(kit_root, "evals", moved(made, LATER, 4, "ev-202503-0003"))
    cache = tmp_path / "memo"
    monkeypatch.setenv("PMOS_CACHE_DIR", str(cache))
    sound = readings(cli)
    for entry in run_entries(cache):
        if isinstance(damage, bytes):
            entry.write_bytes(damage)
            continue
        with np.load(entry) as data:
            ids, months = data["ids"], data["months"]
        if damage == "unsorted":
            ids = ids[::-1]
        else:
            months = months + 3
        with open(entry, "wb") as handle:
            np.savez(handle, ids=ids, months=months)
    assert not any(words(kit).values())  # each month read id by id, the run remembered again
    assert words(kit)["2025-01"]
    assert readings(cli) == sound


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.text(min_size=1, max_size=12), max_size=30, unique=True),
    st.lists(st.text(max_size=14), max_size=30),
)
def test_earlier_ids_hold_the_remembered_ids_exactly(remembered, asked):
    """Whether an earlier month holds an id, asked of the sorted column the memo
    keeps, is membership of the id itself: ids longer than the column, ids with
    U+0000 (never remembered), lone surrogates and ids that differ only in a
    trailing character included."""
    import numpy as np

    kept = sorted({r.encode("utf-8", "surrogatepass") for r in remembered if "\0" not in r})
    earlier = EarlierIds()
    if kept:
        earlier.know(np.array(kept, dtype=bytes))
    held = {r for r in remembered if "\0" not in r}
    for record_id in asked + remembered:
        assert earlier.holds(record_id) is (record_id in held)
    fresh = [a for a in dict.fromkeys(asked) if a not in held]
    assert earlier.add_new(fresh)
    assert all(earlier.holds(a) for a in fresh)
    if held:
        assert not earlier.add_new([*fresh[:0], next(iter(held))])
