"""Reading a kit's ledgers from git objects (pmos.store.revision), at any folder depth."""

from __future__ import annotations

import hashlib
import subprocess

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from pmos._util.git import Repository
from pmos.store import lines
from pmos.store.append import loose_name, record_meta
from pmos.store.revision import BlobCache, parse_file, read_ledgers


def run_record(run_id: str) -> dict:
    return {**record_meta("runs"), "run_id": run_id, "initiative_id": "i", "builder_model": "m"}


def loose(record: dict) -> tuple[str, bytes]:
    line, digest = lines.encode(record)
    return loose_name(record, digest), line


def committed(repo) -> Repository:
    """``repo`` made a git repository with everything in it committed."""
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=T", "-c", "user.email=t@e", "commit", "-qm", "x"],
        check=True,
    )
    return Repository(repo)


def test_records_are_found_at_any_depth_and_keyed_by_digest(tmp_path):
    repo = tmp_path / "repo"
    folder = repo / "kit/state/runs/2026-12/02"
    folder.mkdir(parents=True)
    names = {}
    for run in ("a", "b"):
        name, line = loose(run_record(run))
        (folder / name).write_bytes(line)
        names[run] = name
    git = committed(repo)
    found = read_ledgers(BlobCache(git), git.commit("HEAD"), {"runs": "kit/state/runs"})
    assert not found.problems
    assert {r.run_id for r in found.records["runs"].values()} == {"a", "b"}
    assert all(
        r.path.startswith("kit/state/runs/2026-12/02/") for r in found.records["runs"].values()
    )


def test_what_a_writer_never_makes_is_named():
    name, line = loose(run_record("a"))
    assert parse_file("runs", f"x/{name}", line).problems == []
    edited = line.replace(b'"run_id":"a"', b'"run_id":"b"')
    [problem] = parse_file("runs", f"x/{name}", edited).problems
    assert "does not match its digest" in problem.problem
    [problem] = parse_file("runs", "x/notes.txt", b"hello\n").problems
    assert "did not write" in problem.problem
    [problem] = parse_file("evals", f"x/{name}", line).problems  # a run in the evals ledger
    assert "is not one of the evals ledger" in problem.problem
    header = b'{"pmos_pack":1}\n'
    pack = header + line
    good = f"x/pack-{hashlib.sha256(pack).hexdigest()}.jsonl"
    assert parse_file("runs", good, pack).problems == []
    [problem] = parse_file("runs", "x/pack-" + "0" * 64 + ".jsonl", pack).problems
    assert "does not match its name" in problem.problem


def test_a_record_not_in_canonical_form_is_refused_when_strict():
    record = run_record("a")
    line, _ = lines.encode(record)
    body = line[: -lines.TAIL_LEN - 1]
    spaced = body.replace(b'","', b'", "', 1)
    forged = spaced + b',"digest":"' + _digest(spaced).encode() + b'"}\n'
    [problem] = parse_file("runs", "x/" + loose_name(record, _digest(spaced)), forged).problems
    assert "canonical" in problem.problem


def _digest(body_without_brace: bytes) -> str:
    from pmos.store.digest import digest_bytes

    return digest_bytes(body_without_brace + b"}")


def pack_of(*lines_: bytes) -> tuple[str, bytes]:
    data = b'{"pmos_pack":1}\n' + b"".join(lines_)
    return f"x/pack-{hashlib.sha256(data).hexdigest()}.jsonl", data


def test_history_read_in_bulk_is_what_reading_each_line_finds():
    """A base's pack (history, not strict) is read in a few C loops; what it finds is
    what the strict, line-by-line reading finds of the same sound pack."""
    records = [run_record(f"r{n}") for n in range(5)]
    records[3] = {**records[3], "by": "pm-a"}
    # Text ids (as writers write them: one decode of the whole pack), and a run id
    # that is not text (no run to look it up by: that pack is read line by line).
    for ids, run_ids in (
        (records, ["r0", "r1", "r2", "r3", "r4"]),
        ([*records[:2], {**records[2], "run_id": 7}, *records[3:]], ["r0", "r1", None, "r3", "r4"]),
    ):
        name, data = pack_of(*(lines.encode(r)[0] for r in ids))
        bulk, strict = parse_file("runs", name, data, strict=False), parse_file("runs", name, data)
        assert bulk.problems == strict.problems == []
        shape = [(r.digest, r.record_id, r.run_id, r.by, r.raw, r.path) for r in strict.records]
        assert [(r.digest, r.record_id, r.run_id, r.by, r.raw, r.path) for r in bulk.records] == (
            shape
        )
        assert [r.run_id for r in bulk.records] == run_ids
    assert bulk.records[3].by == "pm-a" and bulk.records[0].by is None
    assert bulk.records[4].record == records[4]  # parsed when asked for, its digest left out


def _split_each(content: bytes, start: int) -> list[str] | None:
    """What :func:`lines.split` states of each line after ``start`` (None when it
    refuses one, a line is empty, or the last is cut): the reference
    ``stated_digests`` reads in bulk."""
    if not content.endswith(b"\n"):
        return None
    rows = content[start:].split(b"\n")[:-1]
    try:
        return [lines.split(row)[1] for row in rows] or None
    except lines.LineError:
        return None


_LINE = lines.encode(run_record("r"))[0]
#: Pieces a line of history is made of, and ways a hand-made one goes wrong.
_PIECES = st.sampled_from(
    [
        _LINE,
        lines.encode(run_record("s"))[0],
        _LINE[: -lines.TAIL_LEN - 1] + b"}\n",  # no digest
        _LINE.replace(b'"}\n', b'" }\n'),  # something after it
        _LINE[:-10] + "é".encode() + _LINE[-8:],  # a digest not in ASCII
        _LINE[:-3] + b"\n" + _LINE[-3:],  # a newline inside the tail
        _LINE[-lines.TAIL_LEN - 1 :],  # nothing before the tail
        b"{" + _LINE[-lines.TAIL_LEN - 1 :],  # one byte before it
        b"{}" + _LINE[-lines.TAIL_LEN - 1 :],  # two
        b"\n",  # an empty line
        _LINE[:-1],  # the last line cut (or two lines joined)
        _LINE.replace(b',"digest":"', b',"digest" :"'),
    ]
)


@given(st.lists(_PIECES, max_size=6))
@example([_LINE, b"\n", _LINE])
@example([_LINE, _LINE[:-1]])
@example([b"{" + _LINE[-lines.TAIL_LEN - 1 :]])
def test_digests_stated_in_bulk_are_what_each_line_states(pieces):
    """``stated_digests`` finds every line's tail in one pass: it gives exactly what
    splitting each line finds, or None when that refuses a line (and the lines are
    then read one by one)."""
    content = b'{"pmos_pack":1}\n' + b"".join(pieces)
    start = content.index(b"\n") + 1
    assert lines.stated_digests(content, start) == _split_each(content, start)


def test_a_bad_line_of_history_is_named_and_the_others_still_count():
    good = [lines.encode(run_record(f"r{n}"))[0] for n in range(3)]
    cut = good[1][: -lines.TAIL_LEN - 1] + b"}\n"  # its digest field cut off
    name, data = pack_of(good[0], cut, good[2])
    parsed = parse_file("runs", name, data, strict=False)
    [problem] = parsed.problems
    assert problem.line == 3 and "carries no digest" in problem.problem
    assert [r.run_id for r in parsed.records] == ["r0", "r2"]
    foreign = lines.encode({**record_meta("evals"), "run_id": "e"})[0]  # an eval's id
    name, data = pack_of(good[0], foreign)
    parsed = parse_file("runs", name, data, strict=False)
    [problem] = parsed.problems
    assert problem.line == 3 and "is not one of the runs ledger" in problem.problem
    assert [r.run_id for r in parsed.records] == ["r0"]


def test_a_record_held_loose_and_packed_counts_once_from_the_first_file(tmp_path):
    repo = tmp_path / "repo"
    folder = repo / "kit/state/runs/2026-12"
    folder.mkdir(parents=True)
    record = run_record("a")
    name, line = loose(record)
    (folder / name).write_bytes(line)
    pack, data = pack_of(line, lines.encode(run_record("b"))[0])
    (folder / pack.removeprefix("x/")).write_bytes(data)
    git = committed(repo)
    for strict in (True, False):
        found = read_ledgers(
            BlobCache(git), git.commit("HEAD"), {"runs": "kit/state/runs"}, strict=strict
        )
        held = found.records["runs"]
        assert len(held) == 2 and not found.problems
        assert [r.run_id for r in held.values()] == ["a", "b"]
        assert next(iter(held.values())).path.endswith(name)  # the loose file is listed first


@pytest.mark.parametrize("content", [b"", b'{"pmos_pack":1}', b'{"pmos_pack":1}\n'])
def test_an_empty_or_cut_pack_of_history_holds_no_record(content):
    for strict in (True, False):
        parsed = parse_file("runs", "x/pack-" + "0" * 64 + ".jsonl", content, strict=strict)
        assert parsed.records == []
