"""Pack columns (:mod:`pmos.store.columns`): the calibration fields of a pack's
records, written beside it by ``pmos ledger pack`` and read instead of parsing
the pack. They must give exactly the numbers the records give, disappear with
their pack, and a columns file that disagrees with its records is reported.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import msgspec
import orjson
import pytest

from dbkits import judge, label, populate
from ledgerfiles import folder, forge, pack_files
from pmos.store import columns
from pmos.store.layout import COLUMNS

MODELS = ["gpt-5", "claude-opus-4"]


def _columns_files(kit_root: Path, kind: str) -> list[Path]:
    return sorted(p for p in folder(kit_root, kind).iterdir() if COLUMNS.match(p.name))


def _metrics(cli, *options: str) -> dict:
    result = cli("metrics", "--json", *options)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _rewrite(path: Path, change) -> None:
    """Edit a columns file's values (``change`` gets the decoded chunks) and re-seal
    its digest, as a forger would."""
    head, _, body = path.read_bytes().partition(b"\n")
    header = orjson.loads(head)
    chunks, start = [], 0
    for size in header["chunks"]:
        chunks.append(msgspec.msgpack.decode(body[start : start + size]))
        start += size
    change(chunks)
    parts = [msgspec.msgpack.encode(chunk) for chunk in chunks]
    body = b"".join(parts)
    header.update(chunks=[len(part) for part in parts], sha256=hashlib.sha256(body).hexdigest())
    path.write_bytes(orjson.dumps(header) + b"\n" + body)


@pytest.fixture
def packed(cli, kit, kit_root) -> dict:
    """A kit in the usual mix, packed, and its metrics before packing."""
    populate(kit, "r", MODELS, runs=40)
    before = _metrics(cli, "--by", "5")
    assert cli("ledger", "pack").exit_code == 0
    return before


def test_packing_writes_columns_for_verdicts_and_labels_only(packed, kit_root):
    for kind in ("evals", "acceptances"):
        [pack] = pack_files(kit_root, kind)
        assert _columns_files(kit_root, kind) == [columns.path_for(pack)]
    for kind in ("runs", "tasks"):
        assert _columns_files(kit_root, kind) == []


def test_columns_give_the_numbers_the_records_give(cli, packed, kit_root):
    """With columns, without them (deleted: readers parse the pack) and before
    packing, every figure is the same, filtered or not."""
    with_columns = _metrics(cli, "--by", "5")
    assert with_columns == packed
    scoped = _metrics(cli, "--model", MODELS[1], "--initiative", "init-1")
    for path in _columns_files(kit_root, "evals") + _columns_files(kit_root, "acceptances"):
        path.unlink()
    assert _metrics(cli, "--by", "5") == packed
    assert _metrics(cli, "--model", MODELS[1], "--initiative", "init-1") == scoped
    assert cli("ledger", "verify").exit_code == 0


def test_a_repack_replaces_the_columns_and_removes_orphans(cli, packed, kit, kit_root):
    [old] = _columns_files(kit_root, "evals")
    orphan = old.with_name("pack-" + "0" * 64 + ".columns")
    orphan.write_bytes(old.read_bytes())
    judge(kit, "late-1", "FAIL", model=MODELS[0], initiative="init-0")
    label(kit, "late-1", "pass")
    assert cli("ledger", "pack").exit_code == 0  # a second pack, of the new records
    made = pack_files(kit_root, "evals")
    assert len(made) == 2
    assert _columns_files(kit_root, "evals") == sorted(map(columns.path_for, made))
    assert not orphan.exists()
    assert _metrics(cli)["pairs"] == packed["pairs"] + 1
    # Packs that overlap in time (as after a merge of two branches that each packed)
    # are folded into one; the folded packs' columns go with them.
    newest = max(made, key=lambda p: orjson.loads(p.read_bytes().split(b"\n", 1)[0])["last"])
    records = newest.read_bytes().splitlines(keepends=True)[1:]
    loose = folder(kit_root, "evals")
    for line in records:  # the newest pack's records, loose again: they overlap it
        from pmos.store.append import loose_name

        body, digest = line.rstrip(b"\n"), None
        record = orjson.loads(body)
        digest = record.pop("digest")
        (loose / loose_name(record, digest)).write_bytes(line)
    assert cli("ledger", "pack").exit_code == 0
    assert _columns_files(kit_root, "evals") == sorted(map(columns.path_for, made))
    assert cli("ledger", "verify").exit_code == 0
    assert _metrics(cli)["pairs"] == packed["pairs"] + 1


def test_a_columns_file_that_disagrees_with_its_records_is_reported(cli, packed, kit_root):
    [path] = _columns_files(kit_root, "evals")

    def flip(chunks: list) -> None:
        words, numbers = chunks[0]["verdict"]  # dictionary-coded: values once, then numbers
        other = "FAIL" if words[numbers[0]] != "FAIL" else "PASS"
        if other not in words:
            words.append(other)
        numbers[0] = words.index(other)

    _rewrite(path, flip)
    result = cli("ledger", "verify", "--json")
    assert result.exit_code == 1
    problems = [p for k in json.loads(result.stdout)["ledgers"] for p in k["problems"]]
    [problem] = problems
    assert problem["file"] == str(path)
    assert (
        "the columns file says verdict" in problem["problem"] and "record 1" in problem["problem"]
    )


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: p.write_bytes(p.read_bytes()[:-3]),  # cut: its own digest fails
        lambda p: p.write_bytes(p.read_bytes().replace(b'"records":', b'"records":1', 1)),
        lambda p: p.write_bytes(b"not a columns file\n"),
    ],
    ids=["cut", "wrong-count", "garbage"],
)
def test_a_damaged_columns_file_is_not_used_and_is_reported(cli, packed, kit_root, damage):
    [path] = _columns_files(kit_root, "acceptances")
    damage(path)
    assert _metrics(cli, "--by", "5") == packed  # the pack itself was read
    result = cli("ledger", "verify", "--json")
    assert result.exit_code == 1
    [problem] = [p for k in json.loads(result.stdout)["ledgers"] for p in k["problems"]]
    assert problem["file"] == str(path) and "columns file" in problem["problem"]


def test_readers_use_the_columns_file(cli, packed, kit_root):
    """A re-sealed columns file is what readers read (they trust it as they trust a
    pack's recorded screening; verify is what checks it): changing every label to
    'pass' there changes the figures."""
    [path] = _columns_files(kit_root, "acceptances")

    def all_pass(chunks: list) -> None:
        for chunk in chunks:
            chunk["label"] = [["pass"], [0] * len(chunk["label"][1])]

    _rewrite(path, all_pass)
    after = _metrics(cli, "--by", "5")
    assert after["confusion"]["fp"] == after["confusion"]["tn"] == 0  # no PM "fail" left
    assert after != packed


@pytest.mark.parametrize("chunk", [3, 16_384])
def test_chunks_and_records_left_out_by_the_packs_screening(cli, kit, kit_root, monkeypatch, chunk):
    """Columns are read a chunk at a time; a record the pack's screening failed is
    taken out of its chunk and reported, as when the pack itself is read."""
    monkeypatch.setattr(columns, "CHUNK", chunk)
    populate(kit, "r", MODELS, runs=20)
    real = judge(kit, "x-1", "PASS", model=MODELS[0], initiative="init-0")
    forged = {k: v for k, v in real.items() if k != "digest"}
    forged.update(record_id=real["record_id"][:-4] + "f0f0", run_id="x-2", score=0.01)
    forge(kit_root, "evals", forged)  # a PASS whose score breaks the writer's rule
    label(kit, "x-2", "pass")

    def figures() -> dict:
        found = _metrics(cli, "--by", "5")
        for item in found["excluded_records"]:
            del item["file"]
        return found

    before = figures()
    assert [e["record_id"] for e in before["excluded_records"]] == [forged["record_id"]]
    assert cli("ledger", "pack").exit_code == 0
    [path] = _columns_files(kit_root, "evals")
    assert len(orjson.loads(path.read_bytes().split(b"\n", 1)[0])["chunks"]) > (chunk == 3)
    assert figures() == before


def test_a_sealed_columns_file_that_does_not_decode_is_refused(cli, packed, kit_root):
    """Re-sealed by hand with a value number that names no value: readers cannot fall
    back to the pack silently (the file claims to be whole), so they refuse."""
    [path] = _columns_files(kit_root, "evals")

    def break_numbers(chunks: list) -> None:
        chunks[0]["verdict"][1][0] = 99

    _rewrite(path, break_numbers)
    result = cli("metrics", "--json")
    assert result.exit_code == 2 and str(path) in result.output
    verify = cli("ledger", "verify", "--json")
    assert verify.exit_code == 1
    [problem] = [p for k in json.loads(verify.stdout)["ledgers"] for p in k["problems"]]
    assert problem["file"] == str(path) and "cannot be read" in problem["problem"]
