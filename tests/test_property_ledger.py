"""Property: the readers and the full verifier agree on every ledger.

A ledger is a folder of loose record files and packs. The forward reader, the
newest-first reader (read through) and ``pmos ledger verify`` each check it
their own way; whatever byte of whatever file is changed, dropped or inserted,
whichever file is deleted or duplicated, all three must accept the same
ledgers, and a ledger whose bytes were not changed must read back exactly as
written, each record once, in key order.

"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import TIME_FREE
from pmos.atomic import write_once
from pmos.store import lines, packs
from pmos.store.append import loose_name
from pmos.store.digest import record_digest
from pmos.store.layout import MARKER, Store, marker_text
from pmos.store.read import newest_first, records
from pmos.store.screening import Excluded
from pmos.store.verify import verify_kind

json_text = st.text(st.characters(codec="utf-8"), max_size=30)
fields = st.fixed_dictionaries(
    {
        # few distinct times, so keys collide on time and order by record id
        "recorded_at": st.sampled_from(
            ["2026-01-01T00:00:00Z", "2026-01-01T00:00:01.5Z", "2026-01-02T00:00:00Z"]
        ),
        "n": st.integers(-(2**63), 2**63 - 1),
        "text": json_text,
    },
    optional={"nested": st.dictionaries(json_text, json_text, max_size=3)},
)
#: Each record, and where it is stored: loose, or in pack 0 or pack 1.
layouts = st.lists(st.tuples(fields, st.sampled_from(["loose", 0, 1])), min_size=1, max_size=8)
mutations = st.tuples(
    st.sampled_from(
        [
            "none",
            "replace",
            "delete",
            "insert",
            "drop-file",
            "copy-loose",
            "repack",
            "drop-line",
            "swap-lines",
            "repeat-line",
        ]
    ),
    st.floats(0, 1, exclude_max=True),
    st.floats(0, 1, exclude_max=True),
    st.integers(0, 255),
)


def _store(root: Path) -> Store:
    folder = root / "state" / "runs"
    folder.mkdir(parents=True)
    (folder / MARKER).write_bytes(marker_text("runs"))
    return Store(root, {})


def key_of(record: dict[str, Any]) -> tuple[str, str]:
    return record["recorded_at"], record["record_id"]


def _entry(record: dict[str, Any]) -> tuple[tuple[str, str], str, bytes]:
    line, digest = lines.encode(record)
    return key_of(record), digest, line


def _write(store: Store, layout: list[tuple[dict[str, Any], Any]]) -> dict[Path, list[dict]]:
    """Store each record where ``layout`` says, with the store's own encoders."""
    folder = store.folder("runs")
    held: dict[Path, list[dict]] = {}
    for place in ("loose", 0, 1):
        chosen = [record for record, where in layout if where == place]
        if place == "loose":
            for record in chosen:
                line, digest = lines.encode(record)
                day = folder / "2026-01" / record["recorded_at"][8:10]
                day.mkdir(parents=True, exist_ok=True)
                held[write_once(day, loose_name(record, digest), line)] = [record]
        elif chosen:
            bucket = folder / "2026-01"
            bucket.mkdir(exist_ok=True)
            held[packs.write_pack(bucket, "runs", [_entry(r) for r in chosen])] = chosen
    return held


def _mutate(
    store: Store, held: dict[Path, list[dict]], mutation: tuple
) -> tuple[bool, dict[Path, list[dict]]]:
    """Apply ``mutation``; returns whether it changed bytes of an existing file, and which
    records each file holds afterwards (for the mutations that keep every file sound)."""
    how, pick, where, byte = mutation
    files = sorted(held)
    target = files[int(pick * len(files))]
    data = target.read_bytes()
    at = int(where * len(data))
    rows = data.splitlines(keepends=True)
    line = int(where * len(rows))
    if how == "none":
        return False, held
    if how == "drop-file":
        target.unlink()
        return False, {p: r for p, r in held.items() if p != target}
    if how == "copy-loose":  # the same record under another name: a second copy
        loose = [p for p in files if p.name.endswith(".json")]
        if not loose:
            return False, held
        source = loose[int(pick * len(loose))]
        copy = source.with_name("1" + source.name)
        shutil.copyfile(source, copy)
        return False, {**held, copy: held[source]}
    if how == "repack":  # a pack holding records also held elsewhere (two branches packed)
        every = [r for rs in held.values() for r in rs]
        subset = every[: 1 + int(where * len(every))]
        entries = sorted({e[1]: e for e in map(_entry, subset)}.values(), key=lambda e: e[:2])
        made = packs.write_pack(store.folder("runs") / "2026-01", "runs", entries)
        if made in held:
            return False, held
        return False, {**held, made: subset}
    if how == "replace":
        changed = data[:at] + bytes([byte]) + data[at + 1 :]
    elif how == "delete":
        changed = data[:at] + data[at + 1 :]
    elif how == "insert":
        changed = data[:at] + bytes([byte]) + data[at:]
    elif how == "drop-line":
        changed = b"".join(rows[:line] + rows[line + 1 :])
    elif how == "swap-lines":
        other = (line + 1) % len(rows)
        rows[line], rows[other] = rows[other], rows[line]
        changed = b"".join(rows)
    else:  # repeat-line
        changed = b"".join(rows[: line + 1] + rows[line:])
    target.write_bytes(changed)
    return changed != data, held


@pytest.mark.slow
@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[*TIME_FREE, HealthCheck.function_scoped_fixture],
)
@given(layout=layouts, mutation=mutations)
def test_readers_and_verifier_agree_whatever_happens_to_the_files(
    tmp_path_factory, layout, mutation
):
    layout = [
        ({"record_id": f"run-{i:02d}", **record}, where) for i, (record, where) in enumerate(layout)
    ]
    store = _store(tmp_path_factory.mktemp("kit"))
    held = _write(store, layout)
    written = sorted((r for r, _ in layout), key=key_of)
    assert list(records(store, "runs", plain=True)) == written
    assert verify_kind(store, "runs").ok

    edited, held = _mutate(store, held, mutation)
    report = verify_kind(store, "runs")
    excluded = Excluded()
    forward = list(records(store, "runs", plain=True, excluded=excluded))
    backward = list(newest_first(store, "runs", plain=True))
    context = (mutation, [(p.file, p.line, p.problem) for p in report.problems])
    # Readers never raise on a bad file: they leave out what verify reports, and
    # count exactly the records verify counts.
    assert {record_digest(r) for r in forward} == set(report.digests), context
    assert backward == forward[::-1], context
    assert (not excluded.items) == report.ok, context
    assert sorted(e.problem for e in excluded.items) == sorted(p.problem for p in report.problems)
    if edited:
        # Every byte of every file is covered by a digest: no change passes.
        assert not report.ok, context
    if report.ok:
        present = {lines.encode(r)[1]: r for rs in held.values() for r in rs}
        expected = sorted(present.values(), key=key_of)
        assert forward == expected, context
        assert report.records == len(present)
        assert report.head == verify_kind(store, "runs").head
