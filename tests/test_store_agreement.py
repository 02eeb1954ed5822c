"""Every reader gives the same answer: a forged pack header, a copied digest on a
pack line and a duplicated record_id, each reproduced (issue 23).

Records come from the real writers; the damage is what a person with an
editor can do. The store's one rule (:mod:`pmos.store.integrity`) decides
which records count, so metrics, the queue, ``ledger show --jsonl`` and
``ledger verify`` agree on which record that is and why.
"""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ledgerfiles
from pmos.store import integrity
from pmos.store.digest import digest_bytes
from pmos.store.integrity import pack_header
from pmos.timestamps import parse_instant, seconds_rfc3339
from test_metrics import judge, label


def labels_of(cli) -> list[dict]:
    out = cli("ledger", "show", "acceptances", "--jsonl")
    assert out.exit_code == 0, out.stderr
    return [orjson.loads(line) for line in out.stdout.encode().splitlines()]


def confusion(cli) -> dict:
    result = cli("metrics", "--json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def verify(cli) -> tuple[int, list[dict]]:
    result = cli("ledger", "verify", "--json")
    found = [p for e in json.loads(result.stdout)["ledgers"] for p in e["problems"]]
    return result.exit_code, found


def hand_made_pack(folder, kind: str, bucket: str, lines: list[bytes], header: bytes):
    """A pack named after its bytes, as a person can make one."""
    data = header + b"\n" + b"".join(lines)
    path = folder / bucket / f"pack-{hashlib.sha256(data).hexdigest()}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_a_forged_pack_header_vouches_for_nothing(cli, kit, kit_root):
    judge(kit, "r1", "PASS")
    real = label(kit, "r1", "fail")
    # A pass label nobody signed off (a hand-made record, well sealed), in a pack whose
    # header claims its records were screened and none failed.
    forged = {**real, "record_id": real["record_id"][:-8] + "0f0f0f0f", "label": "pass"}
    # A second later, so that it would be the latest (the real label's second may end in 9).
    later = parse_instant(real["recorded_at"]) + timedelta(seconds=1)
    forged["recorded_at"] = seconds_rfc3339(later)
    forged["by"] = 7  # breaks the schema: no writer would store it
    line = ledgerfiles.forged_line(forged)[0]
    bucket = forged["recorded_at"][:7]
    claimed = orjson.dumps(
        {
            "pmos_pack": 2,
            "kind": "acceptances",
            "bucket": bucket,
            "records": 1,
            "checked": {"basis": {"rules": "pmos-rules-2"}, "failed": []},
        }
    )
    folder = ledgerfiles.folder(kit_root, "acceptances")
    with_claim = hand_made_pack(folder, "acceptances", bucket, [line], claimed)
    plain = hand_made_pack(
        folder, "acceptances", bucket, [line], pack_header("acceptances", bucket, 1)
    )
    report = confusion(cli)
    assert report["confusion"] == {"tp": 0, "fn": 0, "fp": 1, "tn": 0}  # the real fail label
    left_out = {e["file"]: e for e in report["excluded_records"]}
    assert "not a acceptances pack header" in left_out[f"{with_claim}:1"]["problem"]
    assert left_out[f"{plain}:2"]["record_id"] == forged["record_id"]  # screened like loose
    assert cli("queue", "--json").exit_code in (0, 1)
    code, problems = verify(cli)
    assert code == 1
    assert {p["file"] for p in problems} == {str(with_claim), str(plain)}
    assert [r["label"] for r in labels_of(cli)] == ["fail", "pass"]  # show lists what is stored


def test_a_pack_line_carrying_another_records_digest_shadows_nothing(cli, kit, kit_root):
    judge(kit, "r1", "PASS")
    real = label(kit, "r1", "fail")
    (loose,) = ledgerfiles.record_files(kit_root, "acceptances")
    digest = orjson.loads(loose.read_bytes())["digest"]
    flipped = {**real, "label": "pass"}
    body = ledgerfiles.forged_line(flipped)[0][: -(len(',"digest":"') + 64 + 3)]
    copied = body + b',"digest":"' + digest.encode() + b'"}\n'  # the real label's digest
    bucket = real["recorded_at"][:7]
    folder = ledgerfiles.folder(kit_root, "acceptances")
    pack = hand_made_pack(
        folder, "acceptances", bucket, [copied], pack_header("acceptances", bucket, 1)
    )
    report = confusion(cli)
    assert report["confusion"] == {"tp": 0, "fn": 0, "fp": 1, "tn": 0}  # still "fail"
    (left_out,) = report["excluded_records"]
    assert left_out["file"] == f"{pack}:2" and "does not match its digest" in left_out["problem"]
    code, problems = verify(cli)
    assert code == 1 and [(p["file"], p["line"]) for p in problems] == [(str(pack), 2)]
    assert problems[0]["problem"] == left_out["problem"]
    queue = json.loads(cli("queue", "--json").stdout)
    assert not any(e.get("run_id") == "r1" for e in queue.get("acceptance_debt", []))
    assert [r["label"] for r in labels_of(cli)] == ["fail"]


def test_records_of_one_month_sharing_a_record_id_all_are_left_out(cli, kit, kit_root):
    """A hand-made twin of a label (same id, "pass" for "fail") cannot shadow it:
    which of the two sorts first is their digests' order, which the forger picks,
    so neither counts, and every reader and verify name both."""
    judge(kit, "r1", "PASS")
    real = label(kit, "r1", "fail")
    (real_path,) = ledgerfiles.record_files(kit_root, "acceptances")
    twin = {**real, "label": "pass", "recorded_at": real["recorded_at"][:-2] + "9Z"}
    path = ledgerfiles.forge(kit_root, "acceptances", twin)
    reason = (
        f"duplicate record_id: 2 different records of {real['recorded_at'][:7]} carry it, "
        "so none counts"
    )
    report = confusion(cli)
    assert report["confusion"] == {"tp": 0, "fn": 0, "fp": 0, "tn": 0}
    left_out = {(e["file"], e["problem"]) for e in report["excluded_records"]}
    assert left_out == {(str(real_path), reason), (str(path), reason)}
    code, problems = verify(cli)
    assert code == 1 and {(p["file"], p["problem"]) for p in problems} == left_out
    assert labels_of(cli) == []
    queue = json.loads(cli("queue", "--json").stdout)
    assert any(e.get("run_id") == "r1" for e in queue.get("acceptance_debt", []))


def test_a_torn_loose_file_does_not_block_reading(cli, kit, kit_root):
    judge(kit, "r1", "PASS")
    label(kit, "r1", "pass")
    (loose,) = ledgerfiles.record_files(kit_root, "acceptances")
    loose.write_bytes(loose.read_bytes()[:40])  # torn: no newline, no digest
    report = confusion(cli)
    assert report["pairs"] == 0
    (left_out,) = report["excluded_records"]
    code, problems = verify(cli)
    assert code == 1 and problems[0]["problem"] == left_out["problem"]
    assert "exactly one line" in left_out["problem"]


def test_a_loose_file_moved_to_another_day_is_left_out(cli, kit, kit_root):
    judge(kit, "r1", "PASS")
    label(kit, "r1", "pass")
    (loose,) = ledgerfiles.record_files(kit_root, "acceptances")
    other = loose.parent.with_name("28" if loose.parent.name != "28" else "27")
    other.mkdir()
    moved = other / loose.name
    loose.rename(moved)
    (left_out,) = confusion(cli)["excluded_records"]
    assert left_out["file"] == str(moved) and "it was moved" in left_out["problem"]
    code, problems = verify(cli)
    assert code == 1 and problems[0]["problem"] == left_out["problem"]


def test_verify_reports_a_record_dated_in_the_future(cli, kit_root):
    record = ledgerfiles.run_record("later")
    record["recorded_at"] = "2999-01-01T00:00:00.000000Z"
    path = ledgerfiles.forge(kit_root, "runs", record)
    code, problems = verify(cli)
    assert code == 1
    assert [p["file"] for p in problems] == [str(path)]
    # The rule on time is the gate's (pmos.gate.clock), applied through the screen.
    assert "future-dated" in problems[0]["problem"]


def test_show_jsonl_streams_canonical_lines_in_ledger_order(cli, kit, kit_root):
    for run in ("r1", "r2", "r3"):
        judge(kit, run, "PASS")
    out = cli("ledger", "show", "evals", "--jsonl")
    assert out.exit_code == 0
    lines = out.stdout.encode().splitlines(keepends=True)
    records = [orjson.loads(line) for line in lines]
    assert [r["run_id"] for r in records] == ["r1", "r2", "r3"]
    stored = {
        orjson.loads(p.read_bytes())["digest"] for p in ledgerfiles.record_files(kit_root, "evals")
    }
    assert {digest_bytes(line[:-1]) for line in lines} == stored  # each line is the canonical form
    bad = cli("ledger", "show", "evals", "--jsonl", "--last", "1")
    assert bad.exit_code == 2


def test_the_screening_cache_lives_outside_the_work_tree_and_vouches_for_nothing(
    cli, kit, kit_root, monkeypatch, tmp_path
):
    from pmos.store import screencache

    monkeypatch.setenv("PMOS_CACHE_DIR", str(kit_root / "cache"))
    assert screencache.cache_folder(kit_root) is None  # inside the kit: never used
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    inner = tmp_path / "repo" / "product" / "kit"
    inner.mkdir(parents=True)
    monkeypatch.setenv("PMOS_CACHE_DIR", str(tmp_path / "repo" / "cache"))
    assert screencache.cache_folder(inner) is None  # inside its git work tree: never used
    cache = tmp_path / "elsewhere"
    monkeypatch.setenv("PMOS_CACHE_DIR", str(cache))
    # A pack holding a rule-breaking record: screened once, then from the cache; a
    # cache entry edited to say nothing failed is checked against the screen's basis,
    # and a corrupt entry is a miss: the record stays left out either way.
    judge(kit, "r1", "PASS")
    real = label(kit, "r1", "fail")
    bad = {**real, "record_id": real["record_id"][:-8] + "0e0e0e0e", "by": 7}
    pack = ledgerfiles.pack_of(kit_root, "acceptances", [bad])
    first = confusion(cli)["excluded_records"]
    sha = hashlib.sha256(pack.read_bytes()).hexdigest()
    (entry,) = list(cache.rglob(f"{sha}.json"))  # beside it: lines-<sha>.json (linememo)
    assert confusion(cli)["excluded_records"] == first
    entry.write_text("{not json")
    assert confusion(cli)["excluded_records"] == first
    data = orjson.loads(entry.read_bytes())
    data["basis"] = {"rules": "forged"}
    data["failed"] = []
    entry.write_bytes(orjson.dumps(data))
    assert confusion(cli)["excluded_records"] == first


def test_a_packs_line_checks_recalled_from_the_memo_are_those_of_a_fresh_check(
    cli, kit, kit_root, monkeypatch, tmp_path
):
    """A pack's line checks are remembered outside the work tree, keyed by the hash
    of its bytes (pmos.store.linememo): readers that recall them, readers with no
    memo and readers whose memo entry is damaged leave out the same line for the
    same reason and count the same records."""
    judge(kit, "r1", "PASS")
    judge(kit, "r2", "FAIL")
    real = label(kit, "r1", "fail")
    other = label(kit, "r2", "fail")
    (loose, _) = sorted(ledgerfiles.record_files(kit_root, "acceptances"))
    copied_from = orjson.loads(loose.read_bytes())["digest"]
    flipped = {**real, "label": "pass"}
    body = ledgerfiles.forged_line(flipped)[0][: -(len(',"digest":"') + 64 + 3)]
    copied = body + b',"digest":"' + copied_from.encode() + b'"}\n'
    later = {**other, "record_id": other["record_id"][:-8] + "0d0d0d0d"}
    later["recorded_at"] = other["recorded_at"][:-2] + "9Z"
    sound = ledgerfiles.forged_line(later)[0]
    bucket = real["recorded_at"][:7]
    folder = ledgerfiles.folder(kit_root, "acceptances")
    pack = hand_made_pack(
        folder, "acceptances", bucket, [copied, sound], pack_header("acceptances", bucket, 2)
    )
    cache = tmp_path / "memo"
    monkeypatch.setenv("PMOS_CACHE_DIR", str(cache))
    fresh = (verify(cli), confusion(cli), labels_of(cli))
    sha = hashlib.sha256(pack.read_bytes()).hexdigest()
    (memo,) = list(cache.rglob(f"lines-{sha}.json"))
    assert [n for n, *_ in orjson.loads(memo.read_bytes())["refused"]] == [2]
    recalled = (verify(cli), confusion(cli), labels_of(cli))
    memo.write_text("{not json")
    damaged = (verify(cli), confusion(cli), labels_of(cli))
    monkeypatch.setenv("PMOS_CACHE_DIR", str(kit_root / "cache"))  # inside the kit: none
    unmemoed = (verify(cli), confusion(cli), labels_of(cli))
    assert fresh == recalled == damaged == unmemoed
    (code, problems), report, labels = fresh
    assert code == 1 and [(p["file"], p["line"]) for p in problems] == [(str(pack), 2)]
    assert "does not match its digest" in problems[0]["problem"]
    assert sorted(r["record_id"] for r in labels) == sorted(
        [real["record_id"], other["record_id"], later["record_id"]]
    )
    assert report["confusion"]["fp"] == 1  # r1: PASS against the real "fail"


def test_a_writers_newest_first_look_up_applies_the_month_duplicate_rule_exactly(
    cli, kit, kit_root, monkeypatch, tmp_path
):
    """A look-up reads a month of loose files lazily, its records' ids recalled from
    this machine's memo (pmos.store.linememo); it still leaves out both records of a
    month sharing a record_id, and takes the real one back once the twin is spoiled
    (its file edited in place, so the memo's id for its name no longer holds)."""
    from pmos.store.lookup import find_label
    from pmos.store.read import records

    monkeypatch.setenv("PMOS_CACHE_DIR", str(tmp_path / "memo"))
    judge(kit, "r1", "PASS")
    real = label(kit, "r1", "fail")
    label(kit, "r2", "pass")
    assert find_label(kit.store, "r1") == real
    assert list((tmp_path / "memo").rglob("ids-acceptances-*.json"))
    twin = {**real, "label": "pass", "recorded_at": real["recorded_at"][:-2] + "9Z"}
    path = ledgerfiles.forge(kit_root, "acceptances", twin)
    forward = {r["record_id"] for r in records(kit.store, "acceptances")}
    assert real["record_id"] not in forward
    assert find_label(kit.store, "r1") is None  # the twin learned, then recalled
    assert find_label(kit.store, "r1") is None
    assert find_label(kit.store, "r2")["label"] == "pass"
    path.write_bytes(path.read_bytes().replace(b'"label":"pass"', b'"label":"PASS"'))
    assert real["record_id"] in {r["record_id"] for r in records(kit.store, "acceptances")}
    assert find_label(kit.store, "r1") == real
    monkeypatch.setenv("PMOS_CACHE_DIR", str(kit_root / "cache"))  # no memo at all
    assert find_label(kit.store, "r1") == real
    path.unlink()
    ledgerfiles.forge(kit_root, "acceptances", twin)
    assert find_label(kit.store, "r1") is None


def test_a_month_read_whole_from_the_memo_counts_what_a_line_by_line_reading_counts(
    cli, kit, kit_root, monkeypatch, tmp_path
):
    """A month that is one pack whose every line the memo recalls as sound is read in
    one call (integrity.WholePack): it counts the same records, leaves out the same
    ones for the same reasons (a later month repeating one of its ids; a line of a
    pack the screen rejects) as readers with no memo and as the first reading."""
    from pmos.store.read import scanned

    made = [judge(kit, f"r{i}", "PASS" if i % 2 else "FAIL") for i in range(1, 5)]

    def moved(record, month, n):
        return {
            **record,
            "record_id": record["record_id"][:-8] + f"{n:08x}",
            "recorded_at": f"{month}-0{n}T10:00:00Z",
        }

    clean = ledgerfiles.pack_of(
        kit_root, "evals", [moved(r, "2025-01", n) for n, r in enumerate(made[:3], 1)]
    )
    # Two months later, a copy of one of its ids (left out: an earlier month holds it),
    # and a pack with a verdict no writer would store (left out by the screen).
    ledgerfiles.forge(kit_root, "evals", {**moved(made[3], "2025-02", 1), "verdict": "PASS"})
    ledgerfiles.forge(
        kit_root,
        "evals",
        {**moved(made[0], "2025-02", 2), "record_id": moved(made[0], "2025-01", 1)["record_id"]},
    )
    # A month before it, a record whose id the pack repeats: the pack's record is left out.
    ledgerfiles.forge(
        kit_root,
        "evals",
        {**moved(made[3], "2024-12", 3), "record_id": moved(made[1], "2025-01", 2)["record_id"]},
    )
    broken = ledgerfiles.pack_of(
        kit_root, "evals", [{**moved(made[1], "2025-03", 5), "verdict": "MAYBE"}]
    )

    fine = ledgerfiles.pack_of(
        kit_root, "evals", [moved(r, "2025-04", n) for n, r in enumerate(made[2:], 6)]
    )

    def everything():
        shown = cli("ledger", "show", "evals", "--jsonl")
        queue = cli("queue", "--json")
        ledgers = json.loads(cli("ledger", "verify", "--json").stdout)["ledgers"]
        return (
            [(r["kind"], r["records"], r["head"]) for r in ledgers],
            verify(cli),
            confusion(cli),
            shown.stdout,
            {
                k: [r["run_id"] for r in v]
                for k, v in json.loads(queue.stdout).items()
                if "debt" in k
            },
        )

    monkeypatch.setenv("PMOS_CACHE_DIR", str(kit_root / "cache"))  # inside the kit: no memo
    unmemoed = everything()
    monkeypatch.setenv("PMOS_CACHE_DIR", str(tmp_path / "memo"))
    first = everything()
    whole = {b.name: b.whole is not None for b in scanned(kit.store, "evals")}
    recalled = everything()
    assert unmemoed == first == recalled
    # Read whole from the memo: the months that are one sound pack and repeat no
    # earlier month's id (2025-01 repeats one, so it is read line by line).
    assert whole == {
        "2024-12": False,
        "2025-01": False,
        "2025-02": False,
        "2025-03": True,
        "2025-04": True,
        made[0]["recorded_at"][:7]: False,
    }
    _, (code, problems), report, shown, _ = recalled
    assert code == 1
    left_out = {(p["file"], p["line"]) for p in problems}
    assert (str(broken), 2) in left_out
    assert any("an earlier month holds" in p["problem"] for p in problems)
    assert {(p["file"], p["line"]) for p in problems if p["file"] == str(clean)} == {
        (str(clean), 3)
    }
    assert {e["file"] for e in report["excluded_records"]} >= {f"{broken}:2"}
    assert not any(p["file"] == str(fine) for p in problems)
    assert shown.count("2025-04-") == 2


def _month_of(made: dict, count: int, bad: int | None) -> list[dict]:
    """``count`` verdicts like ``made`` in one month, in ledger order; the one at
    ``bad`` (if any) has a verdict word no row type accepts."""
    return [
        {
            **made,
            "run_id": f"r{n}",
            "record_id": f"ev-{n:08x}",
            "recorded_at": f"2025-01-01T10:{n // 60 % 60:02d}:{n % 60:02d}.{n:06d}Z",
            "verdict": "MAYBE" if n == bad else "PASS",
        }
        for n in range(count)
    ]


def test_a_month_read_whole_in_parts_yields_each_record_once(kit, kit_root, monkeypatch, tmp_path):
    """A month read whole is decoded in parts of about read.BATCH_BYTES, each folded
    while it is in the processor's cache. A line that does not fit the reader's row
    in a later part sends the rest of the month to the line-by-line reading, which
    names it: every other record is yielded once, as a reading with no memo yields
    them; a month with no such line yields the same records in several parts."""
    from pmos.calibration.judged import VERDICT_FIELDS
    from pmos.store.read import BATCH_BYTES, batches
    from pmos.store.rows import row_type
    from pmos.store.screening import Excluded

    made = judge(kit, "r0", "PASS")
    for path in ledgerfiles.record_files(kit_root, "evals"):
        path.unlink()  # the month below is the ledger
    count = 3 * BATCH_BYTES // len(orjson.dumps(made)) + 10

    def month(bad: int | None) -> list[dict]:
        return _month_of(made, count, bad)

    row = row_type("evals", VERDICT_FIELDS)

    def read(cache: str) -> tuple[list[list[str]], list[tuple[str, str]]]:
        monkeypatch.setenv("PMOS_CACHE_DIR", str(tmp_path / cache))
        excluded = Excluded()
        ids = [
            [r.record_id for r in batch]
            for batch in batches(kit.store, "evals", row=row, excluded=excluded)
        ]
        return ids, [(e.record_id, e.rule) for e in excluded.items]

    for bad in (None, count - 3):
        (pack,) = [ledgerfiles.pack_of(kit_root, "evals", month(bad))]
        first, first_excluded = read(f"memo-{bad}")  # every line checked, then recalled
        whole, whole_excluded = read(f"memo-{bad}")
        fresh, fresh_excluded = read(f"none-{bad}")
        wanted = [f"ev-{n:08x}" for n in range(count) if n != bad]
        for reading in (first, whole, fresh):
            assert [i for batch in reading for i in batch] == wanted
        assert first_excluded == whole_excluded == fresh_excluded
        assert whole_excluded == ([] if bad is None else [(f"ev-{bad:08x}", "schema")])
        assert len(whole) > 2  # in parts, not one batch
        pack.unlink()


def test_a_month_read_whole_by_its_reader_leaves_out_an_earlier_months_id(
    kit, kit_root, monkeypatch, tmp_path
):
    """A month read whole is decoded by the reader, which applies the rule on earlier
    months' ids to each part as it decodes it (integrity.BucketScan.admit): a line
    in a later part whose id an earlier month holds is left out with verify's
    reason, every other line counts once, as a reading with no memo counts them.
    Also when a line that does not fit the row sends the rest of the month to the
    line-by-line reading (the rule then applied there), and for a row that reads
    no record id (the reader decodes one beside it)."""
    from pmos.calibration.judged import VERDICT_FIELDS
    from pmos.store.read import BATCH_BYTES, batches
    from pmos.store.rows import row_type
    from pmos.store.screening import Excluded
    from pmos.store.verify import verify_kind

    made = judge(kit, "r0", "PASS")
    for path in ledgerfiles.record_files(kit_root, "evals"):
        path.unlink()
    count = 3 * BATCH_BYTES // len(orjson.dumps(made)) + 10
    late = count - 5  # in the last part
    held = {**made, "run_id": "held", "record_id": f"ev-{late:08x}"}
    held["recorded_at"] = "2024-12-01T10:00:00.000000Z"
    ledgerfiles.pack_of(kit_root, "evals", [held])  # the earlier month holds it

    def month(bad: int | None) -> list[dict]:
        return _month_of(made, count, bad)

    def read(cache: str, row: type) -> tuple[list[str], set[tuple]]:
        monkeypatch.setenv("PMOS_CACHE_DIR", str(tmp_path / cache))
        excluded = Excluded()
        read = batches(kit.store, "evals", row=row, excluded=excluded)
        runs = [r.run_id for batch in read for r in batch]
        return runs, {(e.record_id, e.rule, e.problem, e.file) for e in excluded.items}

    for bad in (None, count // 2):
        (pack,) = [ledgerfiles.pack_of(kit_root, "evals", month(bad))]
        problems = {(p.file, p.line, p.problem) for p in verify_kind(kit.store, "evals").problems}
        assert (str(pack), late + 2, integrity.EARLIER_MONTH) in problems
        for row in (row_type("evals", VERDICT_FIELDS), row_type("evals", ("run_id", "verdict"))):
            fresh = read(f"none-{bad}", row)
            assert read(f"memo-{bad}", row) == read(f"memo-{bad}", row) == fresh
            runs, excluded = fresh
            assert runs == ["held"] + [f"r{n}" for n in range(count) if n not in (bad, late)]
            assert (f"ev-{late:08x}", "ledger", integrity.EARLIER_MONTH, f"{pack}:{late + 2}") in (
                excluded
            )
            assert len(excluded) == (1 if bad is None else 2)
        pack.unlink()


def test_a_month_read_whole_by_its_reader_is_checked_once(kit, kit_root, monkeypatch, tmp_path):
    """The rule on earlier months' ids is applied once to a month its reader decodes:
    a second admit of its lines is refused, and so is a reading of a month whose
    ids were checked already (integrity.BucketScan.admit)."""
    from pmos.store.read import screencache
    from pmos.store.rows import row_type

    made = judge(kit, "r0", "PASS")
    monkeypatch.setenv("PMOS_CACHE_DIR", str(tmp_path / "memo"))
    ledgerfiles.pack_of(kit_root, "evals", [{**made, "recorded_at": "2024-12-01T10:00:00Z"}])
    for path in ledgerfiles.record_files(kit_root, "evals"):
        path.unlink()
    sources, memo = kit.store.sources("evals"), screencache.cache_folder(kit.store.root)
    row = row_type("evals", ("record_id",))
    for lazy in (False, True):
        list(integrity.scan(sources, "evals", memo=memo, lazy=lazy))  # fills the memo
        (bucket,) = integrity.scan(sources, "evals", memo=memo, lazy=lazy)
        assert bucket.whole is not None and bucket.pending is lazy
        if lazy:
            rows = [row(record_id=made["record_id"])]
            assert bucket.admit(rows) == rows and not bucket.late
        with pytest.raises(ValueError, match="checked already"):
            bucket.admit([row(record_id="ev-00000000")])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 9_000), max_size=8), st.sampled_from([1, 100, 4_096, 5_000]))
def test_a_body_in_parts_is_whole_lines_of_about_the_part_size(lengths, size):
    """read._parts cuts a month's body only after a newline, at the first one past
    ``size`` bytes from the part's start (lines longer than its look-ahead window
    included), and the parts put together are the body."""
    from pmos.store.read import _parts

    body = b"".join(b"x" * n + b"\n" for n in lengths)
    parts = [bytes(part) for part in _parts(body, size)]
    assert b"".join(parts) == body
    assert all(part.endswith(b"\n") and b"\n" not in part[size:-1] for part in parts)
