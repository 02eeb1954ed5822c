"""Property: the fast reader and the full verifier agree on every ledger.

The forward reader checks a line by comparing its raw tail with the tail the
writer would have made; ``pmos ledger verify`` takes each line apart. Whatever
single byte is changed, dropped or inserted, both must accept the same
ledgers, and a ledger nobody touched must read back exactly as written.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pmos.errors import LedgerCorrupt
from pmos.store.chain import LedgerWriter, iter_records, iter_records_reversed, verify

json_text = st.text(st.characters(codec="utf-8"), max_size=30)
records = st.lists(
    st.fixed_dictionaries(
        {"n": st.integers(-(2**63), 2**63 - 1), "text": json_text},
        optional={"nested": st.dictionaries(json_text, json_text, max_size=3)},
    ),
    min_size=1,
    max_size=6,
)
edits = st.tuples(
    st.sampled_from(["replace", "delete", "insert", "drop-line", "swap-lines", "repeat-line"]),
    st.floats(0, 1, exclude_max=True),
    st.integers(0, 255),
)


def _reads(path: Path, reader) -> bool:
    try:
        list(reader(path, "runs", plain=True))
    except LedgerCorrupt:
        return False
    return True


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(written=records, edit=edits)
def test_reader_and_verifier_agree_whatever_byte_changes(tmp_path_factory, written, edit):
    path = tmp_path_factory.mktemp("ledger") / "runs.jsonl"
    LedgerWriter(path, "runs").append_many(written)
    stored = path.read_bytes()
    assert [
        {k: v for k, v in r.items() if k not in ("prev_hash", "hash")}
        for r in iter_records(path, "runs", plain=True)
    ] == written

    how, where, byte = edit
    at = int(where * len(stored))
    lines = stored.splitlines(keepends=True)
    line = int(where * len(lines))
    if how == "replace":
        changed = stored[:at] + bytes([byte]) + stored[at + 1 :]
    elif how == "delete":
        changed = stored[:at] + stored[at + 1 :]
    elif how == "insert":
        changed = stored[:at] + bytes([byte]) + stored[at:]
    elif how == "drop-line":
        changed = b"".join(lines[:line] + lines[line + 1 :])
    elif how == "swap-lines":
        other = (line + 1) % len(lines)
        lines[line], lines[other] = lines[other], lines[line]
        changed = b"".join(lines)
    else:
        changed = b"".join(lines[: line + 1] + lines[line:])
    path.write_bytes(changed)

    verified = verify(path, "runs")
    # A torn last line is skipped by readers and reported by verify: not a corruption.
    torn_only = [p.problem for p in verified.problems] and all(
        "unterminated last line" in p.problem for p in verified.problems
    )
    expected = verified.ok or bool(torn_only)
    assert _reads(path, iter_records) == expected, (how, at, byte, verified.problems)
    assert _reads(path, iter_records_reversed) == expected, (how, at, byte, verified.problems)
    if changed == stored:
        assert verified.ok
    elif how in ("swap-lines", "repeat-line") or (how == "drop-line" and line < len(lines) - 1):
        assert not expected  # a moved, repeated or missing line breaks a link
