"""The ledger store: write-once record files, packs, tamper detection, reading.

Each kind is a folder of write-once files (see :mod:`pmos.store.layout`). These
tests prove what the store guarantees about those files, and that what a
person with a text editor can do to them (edit, delete, rename, copy, append,
reorder) is caught by ``pmos ledger verify`` and refused by every reader.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable

import orjson
import pytest

import ledgerfiles
from conftest import good_verdict, pmos_in_process, pmos_process
from pmos.errors import BadInput, RecordRejected
from pmos.gate import writers
from pmos.store import read
from pmos.store.append import Draft, append
from pmos.store.digest import record_digest
from pmos.store.layout import LOOSE, MARKER
from pmos.store.packs import key_of, write_pack
from pmos.store.screening import Excluded


@pytest.fixture
def pmos() -> Callable[..., subprocess.CompletedProcess]:
    """pmos in this process (see conftest.pmos_in_process): these tests are about
    what the readers and verify find, not about processes."""
    return pmos_in_process


@pytest.fixture
def filled(kit):
    """An acceptances ledger with five records r0..r4: their files, oldest first."""
    for i in range(5):
        writers.record_acceptance(kit, run_id=f"r{i}", label="pass", by="pm")
    return ledgerfiles.by_key(kit.root, "acceptances")


def verify_cli(pmos, *extra):
    result = pmos("ledger", "verify", "--json", *extra)
    return result.returncode, json.loads(result.stdout)


def entry_of(report, kind="acceptances"):
    [entry] = [e for e in report["ledgers"] if e["kind"] == kind]
    return entry


def problems(report, kind="acceptances"):
    return [(p["file"], p["line"], p["problem"]) for p in entry_of(report, kind)["problems"]]


def readers_refuse(pmos, path) -> None:
    """Every reader of the acceptances ledger leaves ``path`` out, as verify reports
    it (exit 1, naming it) with the reason metrics gives: forward, and newest first."""
    metrics = pmos("metrics", "--json")
    assert metrics.returncode == 0, (metrics.stdout, metrics.stderr)
    left_out = [e for e in json.loads(metrics.stdout)["excluded_records"] if str(path) in e["file"]]
    assert left_out, metrics.stdout
    code, report = verify_cli(pmos)
    assert code == 1
    named = [t for f, _, t in problems(report) if f == str(path)]
    assert left_out[0]["problem"] in named
    shown = pmos("ledger", "show", "acceptances", "--json")
    newest = pmos("ledger", "show", "acceptances", "--last", "1000", "--json")
    assert shown.returncode == newest.returncode == 0
    assert json.loads(shown.stdout) == json.loads(newest.stdout)


# ---------------------------------------------------------------- what is stored


def test_clean_ledgers_verify(filled, kit, pmos):
    code, report = verify_cli(pmos)
    assert code == 0 and report["ok"] is True
    entry = entry_of(report)
    assert entry["lines"] == entry["records"] == 5
    assert entry["path"] == str(kit.store.folder("acceptances"))
    digests = sorted(json.loads(p.read_bytes())["digest"] for p in filled)
    expected = hashlib.sha256("".join(f"{d}\n" for d in digests).encode()).hexdigest()
    assert entry["head"] == expected
    assert entry_of(report, "runs") | {"path": None} == {
        "kind": "runs",
        "path": None,
        "ok": True,
        "lines": 0,
        "records": 0,
        "head": None,
        "problems": [],
    }


def test_each_record_is_one_file_named_and_sealed_by_its_digest(filled):
    assert len(filled) == 5
    for path in filled:
        data = path.read_bytes()
        assert data.endswith(b"\n") and data.count(b"\n") == 1
        stored = orjson.loads(data)
        digest = stored.pop("digest")
        assert list(orjson.loads(data))[-1] == "digest"  # spliced in as the last field
        canonical = orjson.dumps(stored, option=orjson.OPT_SORT_KEYS)
        assert data == canonical[:-1] + b',"digest":"' + digest.encode() + b'"}\n'
        assert digest == hashlib.sha256(b"pmos-record-v2\n" + canonical).hexdigest()
        assert digest == record_digest(stored)
        stamp = re.sub(r"[^0-9TZ]", "", stored["recorded_at"])
        assert path.name == f"{stamp}-{digest}.json" and LOOSE.match(path.name)


def test_files_are_write_once_later_appends_never_touch_them(filled, kit):
    before = {p: (p.read_bytes(), p.stat().st_ino, p.stat().st_mtime_ns) for p in filled}
    for i in range(5, 8):
        writers.record_acceptance(kit, run_id=f"r{i}", label="fail", by="pm")
    after = {p: (p.read_bytes(), p.stat().st_ino, p.stat().st_mtime_ns) for p in filled}
    assert after == before
    assert len(ledgerfiles.record_files(kit.root, "acceptances")) == 8
    # Writing a record whose file exists keeps the file as it is (same name, same content).
    from pmos.atomic import write_once

    write_once(filled[0].parent, filled[0].name, b"something else\n")
    assert filled[0].read_bytes() == before[filled[0]][0]


def test_a_write_is_fsynced_before_and_after_its_rename(kit_root, tmp_path):
    """Traced in a real process: temporary file written and fsynced, renamed into
    place, then the folder fsynced, so an acknowledged record survives a crash."""
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed")
    trace = tmp_path / "trace"
    done = subprocess.run(
        [
            "strace",
            "-f",
            "-qq",
            "-o",
            str(trace),
            "-e",
            "trace=openat,write,fsync,fdatasync,rename,renameat,renameat2,close",
            sys.executable,
            "-m",
            "pmos",
            "accept",
            "r1",
            "--label",
            "pass",
            "--by",
            "pm",
            "--allow-unknown-run",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode and "ptrace" in done.stderr:
        pytest.skip(f"strace cannot trace here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    folder = str(ledgerfiles.folder(kit_root, "acceptances").resolve())
    calls = [line.split(" ", 1)[1] for line in trace.read_text().splitlines() if " " in line]
    (final,) = ledgerfiles.record_files(kit_root, "acceptances")

    def index(pattern: str, start: int = 0) -> int:
        for i in range(start, len(calls)):
            if re.search(pattern, calls[i]):
                return i
        raise AssertionError(f"no call matching {pattern!r} after {start}: {calls[start:]}")

    folder = str(final.parent.resolve())  # the day folder of the record
    opened = index(rf'openat\(.*"{re.escape(folder)}/\.tmp-[^"]+".*O_CREAT.*= (\d+)')
    temp_fd = re.search(r"= (\d+)$", calls[opened]).group(1)
    temp = re.search(r'"([^"]+)"', calls[opened]).group(1)
    wrote = index(rf"write\({temp_fd}, ", opened)
    synced = index(rf"f(data)?sync\({temp_fd}\)", wrote)
    renamed = index(rf'rename(at2?)?\(.*"{re.escape(temp)}".*"{re.escape(str(final))}"', synced)
    opened_folder = index(rf'openat\(.*"{re.escape(folder)}".*O_DIRECTORY.*= (\d+)', renamed)
    folder_fd = re.search(r"= (\d+)$", calls[opened_folder]).group(1)
    index(rf"fsync\({folder_fd}\)", opened_folder)
    assert index(rf"close\({temp_fd}\)", synced) < renamed  # closed only after its fsync


def test_a_record_may_not_bring_the_ledgers_own_fields(kit):
    for field in ("digest",):
        record = {**ledgerfiles.run_record(f"run-{field}"), field: "0" * 64}
        with pytest.raises((BadInput, RecordRejected), match=field):
            append(kit.store, "runs", lambda r=record: Draft([r]))
        with pytest.raises(BadInput, match="the ledger's own field"):
            from pmos.store.lines import encode

            encode(record)
    assert ledgerfiles.record_files(kit.root, "runs") == []


def test_a_batch_is_written_whole_or_not_at_all(kit):
    good = ledgerfiles.run_record("run-ok")
    with pytest.raises(RecordRejected):
        append(kit.store, "runs", lambda: Draft([good, {**good, "run_id": 7}]))
    with pytest.raises(BadInput, match="cannot be stored"):
        append(kit.store, "runs", lambda: Draft([good, {**good, "builder_model": "\ud800"}]))
    assert ledgerfiles.record_files(kit.root, "runs") == []
    assert sorted(p.name for p in ledgerfiles.folder(kit.root, "runs").iterdir()) == [
        ".gitignore",
        MARKER,
    ]


# ---------------------------------------------------------------- tampering, loose files


def test_edited_record_is_named(filled, pmos):
    ledgerfiles.edit(filled[2], b'"label":"pass"', b'"label":"fail"')
    code, report = verify_cli(pmos)
    assert code == 1
    [(file, line, text)] = problems(report)
    assert (file, line) == (str(filled[2]), None) and "does not match its digest" in text
    human = pmos("ledger", "verify")
    assert human.returncode == 1 and f"{filled[2]}: " in human.stdout
    readers_refuse(pmos, filled[2])


def test_edited_record_with_a_fresh_digest_keeps_the_old_name_and_is_named(filled, pmos):
    record = orjson.loads(filled[1].read_bytes())
    del record["digest"]
    record["label"] = "fail"
    line, _ = ledgerfiles.forged_line(record)
    filled[1].write_bytes(line)  # a valid record, but not the one the name promises
    code, report = verify_cli(pmos)
    assert code == 1
    [(file, _, text)] = problems(report)
    assert file == str(filled[1]) and "name does not carry its record's" in text
    assert "digest" in text and "renamed" in text
    readers_refuse(pmos, filled[1])


def test_renamed_record_files_are_named(filled, pmos):
    first, second = filled[0], filled[1]
    spare = first.with_name("spare")
    first.rename(spare)
    second.rename(first)
    spare.rename(second)
    code, report = verify_cli(pmos)
    assert code == 1
    assert sorted(file for file, _, _ in problems(report)) == sorted([str(first), str(second)])
    readers_refuse(pmos, first)
    readers_refuse(pmos, second)


def test_deleted_record_is_found_against_a_checkpoint_and_against_git(filled, kit, pmos, tmp_path):
    checkpoint = tmp_path / "checkpoint.json"
    assert pmos("ledger", "checkpoint", "--out", str(checkpoint)).returncode == 0
    git = ["git", "-C", str(kit.root), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "ledgers"], check=True)
    gone = orjson.loads(filled[3].read_bytes())
    filled[3].unlink()
    # Each file stands alone, so the folder itself still verifies...
    assert verify_cli(pmos)[0] == 0
    # ...but history remembers the record.
    for option, reference in (("--checkpoint", str(checkpoint)), ("--since", "HEAD")):
        code, report = verify_cli(pmos, option, reference)
        assert code == 1, reference
        assert report["since"]["missing"] == [
            {
                "kind": "acceptances",
                "record_id": gone["record_id"],
                "digest": gone["digest"],
                "changed": False,
            }
        ]
    human = pmos("ledger", "verify", "--since", "HEAD")
    assert human.returncode == 1 and gone["record_id"] in human.stdout


def test_record_copied_from_another_ledger_is_named(kit, pmos):
    writers.register_run(kit, run_id="r", initiative_id="i", builder_model="m")
    writers.record_acceptance(kit, run_id="r", label="pass", by="pm")
    (source,) = ledgerfiles.record_files(kit.root, "runs")
    copied = ledgerfiles.folder(kit.root, "acceptances") / source.relative_to(source.parents[2])
    copied.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, copied)
    code, report = verify_cli(pmos)
    assert code == 1
    found = problems(report)
    assert {file for file, _, _ in found} == {str(copied)}
    assert any("not one of the acceptances ledger" in text for _, _, text in found)
    assert verify_cli(pmos, "--schema")[0] == 1
    readers_refuse(pmos, copied)


def test_hand_written_records_are_named(filled, kit, pmos):
    folder = filled[0].parent  # the day folder
    record = orjson.loads(filled[0].read_bytes())
    del record["digest"]
    record["record_id"] = "acc-by-hand"
    # Not canonical (spaces, unsorted keys), sealed with the digest of its own bytes.
    body = json.dumps(dict(reversed(record.items()))).encode()
    digest = hashlib.sha256(b"pmos-record-v2\n" + body).hexdigest()
    loose = folder / f"1-{digest}.json"
    loose.write_bytes(body[:-1] + b', "digest": "' + digest.encode() + b'"}\n')
    # A second line added to a record file.
    extra = ledgerfiles.forged_line({**record, "record_id": "acc-extra"})[0]
    with filled[4].open("ab") as handle:
        handle.write(extra)
    # A record with no digest at all.
    bare = folder / f"2-{'0' * 64}.json"
    bare.write_bytes(orjson.dumps(record) + b"\n")
    code, report = verify_cli(pmos)
    assert code == 1
    named = {file: text for file, _, text in problems(report)}
    assert set(named) == {str(loose), str(filled[4]), str(bare)}
    assert "carries no digest" in named[str(loose)] or "canonical" in named[str(loose)]
    assert "exactly one line" in named[str(filled[4])]
    assert "carries no digest" in named[str(bare)]


def test_a_stray_file_in_a_ledger_folder_is_named(filled, kit, pmos):
    stray = ledgerfiles.folder(kit.root, "acceptances") / "notes.json"
    stray.write_text("{}\n")
    code, report = verify_cli(pmos)
    assert code == 1 and [f for f, _, _ in problems(report)] == [str(stray)]
    readers_refuse(pmos, stray)


def test_schema_option_revalidates_records(filled, kit, pmos):
    record = orjson.loads(filled[0].read_bytes())
    del record["digest"]
    forged = ledgerfiles.forge(
        kit.root, "acceptances", {**record, "record_id": "acc-x", "label": "maybe"}
    )
    for options in ((), ("--schema",)):  # a loose record is checked either way
        code, report = verify_cli(pmos, *options)
        assert code == 1
        found = problems(report)
        assert found and all(file == str(forged) for file, _, _ in found)
        assert any("label" in text for _, _, text in found)


# ---------------------------------------------------------------- tampering, packs


@pytest.fixture
def packed(filled, cli, kit):
    """The five records folded into one pack: its path."""
    pack = ledgerfiles.pack_of(kit.root, "acceptances", ledgerfiles.stored(kit.root, "acceptances"))
    for path in filled:  # as 'pmos ledger pack' leaves a closed month
        path.unlink()
    return pack


def pack_lines(pack):
    return pack.read_bytes().splitlines(keepends=True)


def test_a_pack_holds_the_records_sorted_under_a_header_and_its_own_hash(kit, cli, pmos):
    for i in range(5):
        record = ledgerfiles.run_record(f"r{i}")
        record["recorded_at"] = f"2026-01-0{5 - i}T00:00:00.000000Z"  # closed, any order
        append(kit.store, "runs", lambda r=record: Draft([r]))
    loose = sorted(
        (p.read_bytes() for p in ledgerfiles.record_files(kit.root, "runs")),
        key=lambda line: key_of(orjson.loads(line)),
    )
    assert cli("ledger", "pack").exit_code == 0
    (packed,) = ledgerfiles.pack_files(kit.root, "runs")
    assert packed.parent.name == "2026-01"
    lines = pack_lines(packed)
    header = orjson.loads(lines[0])
    # Nothing but what the records fix: no host, time, checker or screening outcome.
    assert header == {"pmos_pack": 2, "kind": "runs", "bucket": "2026-01", "records": 5}
    keys = [key_of(orjson.loads(line)) for line in lines[1:]]
    assert keys == sorted(keys)
    assert lines[1:] == loose  # the same record lines, verbatim
    assert ledgerfiles.record_files(kit.root, "runs") == []  # folded
    assert packed.name == f"pack-{hashlib.sha256(packed.read_bytes()).hexdigest()}.jsonl"
    assert verify_cli(pmos)[0] == 0


def test_reading_many_records_across_blocks_packs_and_loose_files(kit):
    entries = []
    for i in range(3000):
        record = {
            "record_id": f"run-{i:05d}",
            "recorded_at": f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}Z",
            "n": i,
            "pad": "x" * (i % 700),
        }
        line, digest = ledgerfiles.forged_line(record)
        entries.append((key_of(record), digest, line))
    bucket = ledgerfiles.folder(kit.root, "runs") / "2026-01"
    bucket.mkdir()
    write_pack(bucket, "runs", entries[:2000])
    write_pack(bucket, "runs", entries[2000:2900])
    for _, _, line in entries[2900:]:
        record = orjson.loads(line)
        del record["digest"]
        ledgerfiles.forge(kit.root, "runs", record)
    # Records that are not runs: read plain, without the schema's types.
    forward = [r["n"] for r in read.records(kit.store, "runs", plain=True)]
    backward = [r["n"] for r in read.newest_first(kit.store, "runs", plain=True)]
    assert forward == list(range(3000)) and backward == forward[::-1]


# ---------------------------------------------------------------- show


def test_show_neutralises_terminal_control_characters(kit, cli):
    writers.record_verdict(kit, good_verdict(note="\x1b]0;pwned\x07 \x1b[2J"))
    writers.record_acceptance(kit, run_id="run-1", label="pass", by="pm", note="\x1b[31mred\x1b[0m")
    result = cli("ledger", "show", "evals")
    assert "\x1b" not in result.stdout
    result = cli("ledger", "show", "acceptances", "--run-id", "run-1")
    assert "\x1b" not in result.stdout and "run-1" in result.stdout
    as_json = json.loads(cli("ledger", "show", "acceptances", "--json").stdout)
    assert as_json[0]["note"] == "\x1b[31mred\x1b[0m"  # JSON keeps the exact text, escaped


def test_show_filters_by_run(kit, cli):
    writers.record_acceptance(kit, run_id="a", label="pass", by="pm")
    writers.record_acceptance(kit, run_id="b", label="fail", by="pm")
    rows = json.loads(cli("ledger", "show", "acceptances", "--run-id", "b", "--json").stdout)
    assert [r["label"] for r in rows] == ["fail"]
    assert cli("ledger", "show", "nonsense").exit_code == 2


def test_show_columns_are_fields_of_each_kind(cli):
    from pmos.schemas import load_schema
    from pmos.store.registry import LEDGER_KINDS

    for kind, spec in LEDGER_KINDS.items():
        fields = load_schema(spec.schema)["properties"]
        assert set(spec.columns) <= set(fields), kind
        result = cli("ledger", "show", kind)
        assert result.exit_code == 0 and "record_id" in result.stdout


def test_show_last_and_streamed_json(kit, cli):
    for i in range(5):
        writers.record_acceptance(kit, run_id=f"r{i}", label="pass", by="pm")
    rows = json.loads(cli("ledger", "show", "acceptances", "--last", "2", "--json").stdout)
    assert [r["run_id"] for r in rows] == ["r3", "r4"]
    assert json.loads(cli("ledger", "show", "runs", "--json").stdout) == []
    table = cli("ledger", "show", "acceptances", "--last", "1").stdout
    assert "r4" in table and "r3" not in table
    assert cli("ledger", "show", "acceptances", "--last", "0").exit_code == 2


@pytest.mark.parametrize("how", ["edit", "delete", "reorder", "append", "cut", "header"])
def test_a_tampered_pack_is_left_out_whole_and_named(packed, pmos, how):
    lines = pack_lines(packed)
    if how == "edit":
        lines[3] = lines[3].replace(b'"label":"pass"', b'"label":"fail"')
    elif how == "delete":
        del lines[2]
    elif how == "reorder":
        lines[2], lines[3] = lines[3], lines[2]
    elif how == "append":
        record = orjson.loads(lines[-1])
        del record["digest"]
        lines.append(ledgerfiles.forged_line({**record, "record_id": "acc-zzz"})[0])
    elif how == "cut":
        lines[-1] = lines[-1][:40]
    else:
        lines[0] = lines[0].replace(b'"records":5', b'"records":4')
    packed.write_bytes(b"".join(lines))
    code, report = verify_cli(pmos)
    assert code == 1
    found = problems(report)
    assert [(file, text) for file, _, text in found] == [
        (str(packed), "the pack's content does not match its name: it was edited, cut or replaced")
    ]
    readers_refuse(pmos, packed)
    shown = pmos("ledger", "show", "acceptances", "--json")
    assert json.loads(shown.stdout) == []  # nothing of a pack that is not what it says


def test_a_pack_copied_from_another_ledger_is_named(packed, kit, pmos, cli):
    writers.register_run(kit, run_id="r", initiative_id="i", builder_model="m")
    source = ledgerfiles.pack_of(kit.root, "runs", ledgerfiles.stored(kit.root, "runs"))
    copied = packed.parent / source.name
    shutil.copyfile(source, copied)
    code, report = verify_cli(pmos)
    assert code == 1
    assert {file for file, _, _ in problems(report)} == {str(copied)}
    assert any("not a acceptances pack header" in t for _, _, t in problems(report))
    readers_refuse(pmos, copied)


def test_readers_leave_a_tampered_record_out(filled, kit, pmos):
    ledgerfiles.edit(filled[0], b'"by":"pm"', b'"by":"me"')
    excluded = Excluded()
    forward = list(read.records(kit.store, "acceptances", excluded=excluded))
    assert [e.file for e in excluded.items] == [str(filled[0])]
    assert len(forward) == 4
    backward = list(read.newest_first(kit.store, "acceptances"))
    assert backward == forward[::-1]
    # As a real process too: a torn or edited file does not block reading.
    for run in (pmos, pmos_process):
        result = run("ledger", "show", "acceptances", "--json")
        assert result.returncode == 0 and len(json.loads(result.stdout)) == 4
    readers_refuse(pmos, filled[0])


def test_writers_never_touch_existing_files(filled, kit, pmos):
    ledgerfiles.edit(filled[0], b'"by":"pm"', b'"by":"me"')
    tampered = filled[0].read_bytes()
    writers.record_acceptance(kit, run_id="r9", label="pass", by="pm")
    writers.register_run(kit, run_id="new", initiative_id="i", builder_model="m")
    assert filled[0].read_bytes() == tampered
    assert len(ledgerfiles.record_files(kit.root, "acceptances")) == 6
    assert [r["run_id"] for r in read.records(kit.store, "runs")] == ["new"]
    code, report = verify_cli(pmos)
    assert code == 1 and [f for f, _, _ in problems(report)] == [str(filled[0])]


def test_leftover_temporary_files_are_ignored_then_cleaned_by_pack(filled, kit, pmos, cli):
    folder = filled[0].parent  # writers make them in the day folder they write to
    fresh, stale = folder / ".tmp-1-fresh", folder / ".tmp-2-stale"
    fresh.write_bytes(b'{"half":')
    stale.write_bytes(b'{"record_id":"half-writ')
    hour_ago = time.time() - 2 * 3600
    os.utime(stale, (hour_ago, hour_ago))
    assert verify_cli(pmos)[0] == 0
    assert len(list(read.records(kit.store, "acceptances"))) == 5
    assert cli("ledger", "pack").exit_code == 0
    assert fresh.exists() and not stale.exists()  # a fresh one may be a write in flight
    assert verify_cli(pmos)[0] == 0
