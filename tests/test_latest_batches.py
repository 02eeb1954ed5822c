"""The latest-per-run readers fold an ordered batch in whole (C loops over its
columns) and any other batch row by row. Both paths must give the same answer
for any rows cut into any batches: here the row-by-row path over every row is
the reference, and the rows come in every order, time layout and batching.
"""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from pmos.store.latest import (
    FILTER_FIELDS,
    LABEL_FIELDS,
    VERDICT_FIELDS,
    _VerdictReader,
    as_columns,
    latest_labels,
    latest_labels_in_batches,
    latest_verdicts_in_batches,
)

# Two layouts of the same instants: the writers' (compared as strings) and another
# RFC 3339 one (parsed), so a batch may mix both.
STAMPS = [f"2026-01-01T00:00:0{s}.000000Z" for s in range(4)] + [
    f"2026-01-01T00:00:0{s}+00:00" for s in range(4)
]
WORDS = ["PASS", "PASS-WITH-FINDINGS", "FAIL", "SKIPPED"]

verdict_rows = st.lists(
    st.builds(
        SimpleNamespace,
        run_id=st.sampled_from(["r1", "r2", "r3"]),
        verdict=st.sampled_from(WORDS),
        evaluator_model=st.sampled_from(["gpt-5", "claude", "gemini"]),
        record_id=st.sampled_from([f"ev-{i}" for i in range(5)]),
        recorded_at=st.sampled_from(STAMPS),
        score=st.one_of(st.none(), st.sampled_from([0.2, 0.9])),
        form=st.sampled_from(["full", "short"]),
        initiative_id=st.sampled_from(["a", "b"]),
    ),
    max_size=30,
)
label_rows = st.lists(
    st.builds(
        SimpleNamespace,
        run_id=st.sampled_from(["r1", "r2", "r3"]),
        label=st.sampled_from(["pass", "fail"]),
        record_id=st.sampled_from([f"acc-{i}" for i in range(5)]),
        recorded_at=st.sampled_from(STAMPS),
        gate_record_id=st.one_of(st.none(), st.sampled_from(["ev-1", "ev-2"])),
        initiative_id=st.sampled_from(["a", "b"]),
    ),
    max_size=30,
)


def _cut(rows: list, sizes: list[int], fields: tuple[str, ...]) -> list[dict]:
    """The rows cut into batches of the given sizes, each as columns."""
    batches, start = [], 0
    for size in sizes:
        batches.append(rows[start : start + size])
        start += size
    batches.append(rows[start:])
    return [as_columns(batch, fields + FILTER_FIELDS) for batch in batches]


def _one_by_one(rows, window, in_scope):
    reader = _VerdictReader(window, in_scope, "evals")
    judged: list[list] = [[], [], [], [], [], []]
    for row in rows:
        reader.fold_one(row, judged)
    reader.earlier.extend(*judged)
    return reader.result()


def _same(found, reference) -> None:
    assert found.models == reference.models
    assert list(found.latest.items()) == list(reference.latest.items())
    assert found.skips == reference.skips
    assert list(found.recent) == list(reference.recent)
    assert {m: list(d) for m, d in found.recent_by_model.items()} == {
        m: list(d) for m, d in reference.recent_by_model.items()
    }

    def columns(earlier):
        return [[x for batch in earlier._batches for x in batch[i].tolist()] for i in range(3)]

    assert columns(found.earlier) == columns(reference.earlier)


def _sorted(rows):
    """The order the store reads records in (by time, then record id)."""
    from pmos.store.latest import instant_key

    return sorted(rows, key=lambda r: (instant_key(r.recorded_at), r.record_id))


@settings(max_examples=300, deadline=None)
@given(
    rows=verdict_rows,
    sizes=st.lists(st.integers(0, 8), max_size=5),
    ordered=st.booleans(),
    scoped=st.booleans(),
    window=st.integers(0, 6),
)
def test_verdicts_any_batching_gives_the_row_by_row_answer(rows, sizes, ordered, scoped, window):
    if ordered:
        rows = _sorted(rows)
    in_scope = (lambda model, initiative, at: initiative == "a") if scoped else None
    found = latest_verdicts_in_batches(
        _cut(rows, sizes, VERDICT_FIELDS), window=window, in_scope=in_scope
    )
    _same(found, _one_by_one(rows, window, in_scope))


@settings(max_examples=300, deadline=None)
@given(
    rows=label_rows,
    sizes=st.lists(st.integers(0, 8), max_size=5),
    ordered=st.booleans(),
    detailed=st.booleans(),
)
def test_labels_any_batching_gives_the_row_by_row_answer(rows, sizes, ordered, detailed):
    if ordered:
        rows = _sorted(rows)
    found = latest_labels_in_batches(_cut(rows, sizes, LABEL_FIELDS), detailed=detailed)
    reference = latest_labels_in_batches(
        _cut(rows, [1] * len(rows), LABEL_FIELDS), detailed=detailed
    )
    assert list(found.items()) == list(reference.items())
    assert latest_labels(rows, detailed=detailed) == reference


def test_an_ordered_batch_takes_the_column_path_and_keeps_the_last_per_run():
    """The fast path is taken (the reader's stream moves on) and "last wins" holds."""
    rows = _sorted(
        SimpleNamespace(
            run_id=f"r{i % 2}",
            verdict="PASS" if i % 3 else "FAIL",
            evaluator_model="gpt-5",
            record_id=f"ev-{i}",
            recorded_at=f"2026-01-01T00:00:{i:02d}.000000Z",
            score=0.5,
            form="full",
            initiative_id=None,
        )
        for i in range(10)
    )
    reader = _VerdictReader(4, None, "evals")
    assert reader.stream.ordered([r.recorded_at for r in rows], [r.record_id for r in rows])
    found = latest_verdicts_in_batches([as_columns(rows, VERDICT_FIELDS)], window=4)
    assert {run: v.record_id for run, v in found.latest.items()} == {"r0": "ev-8", "r1": "ev-9"}
    assert [v.run for v in found.latest.values()] == [0, 1]
    assert len(found.earlier) == 10 and list(found.recent) == ["FAIL", "PASS", "PASS", "FAIL"]
