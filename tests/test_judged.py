"""The calibration reader (pmos.calibration.judged), and pmos metrics' answers to loose labels.

The reader folds whole batches by "the last row of a run wins" when a batch is
in the readers' order, and row by row otherwise; a property test holds both
paths to a plain reference fold. The verdict pass of pmos metrics answers the
screen's look-ups of the verdicts that loose labels name: the report, exclusions
included, is the one a screen that looks them up itself gives.
"""

from __future__ import annotations

import itertools
import os
import random
from collections import Counter
from types import SimpleNamespace as Row

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ledgerfiles
from pmos._util.forked import ForkedCall
from pmos.calibration.judged import decode, latest_labels, latest_verdicts
from pmos.calibration.metrics import compute_metrics
from pmos.errors import PmosError
from pmos.gate import recheck
from pmos.gate.latest import instant_key
from pmos.gate.vocabulary import PASS_SIDE, SKIPPED
from test_readers_scale import _fill, _label, _verdict

# ---------------------------------------------------------------- the fold, by property

#: Instants written in the writers' layout and in another RFC 3339 layout (the same
#: instant can come both ways: the reader must order them as instants).
STAMPS = [
    "2026-01-01T00:00:00.000001Z",
    "2026-01-01T00:00:00.000002Z",
    "2026-01-01T01:00:00.000000Z",
    "2026-01-01T02:00:00+01:00",  # the instant above, in another layout
    "2026-01-02T00:00:00.000000Z",
]
WORDS = ["PASS", "PASS-WITH-FINDINGS", "FAIL", SKIPPED]

verdict_rows = st.lists(
    st.builds(
        lambda run, at, rid, word, model, form, score: Row(
            run_id=f"r{run}",
            recorded_at=STAMPS[at],
            record_id=f"ev-{rid}",
            verdict=word,
            evaluator_model=model,
            form=form,
            score=score,
        ),
        st.integers(0, 4),
        st.integers(0, len(STAMPS) - 1),
        st.integers(0, 6),  # few ids: ties in time and id happen
        st.sampled_from(WORDS),
        st.sampled_from(["gpt-5", "claude"]),
        st.sampled_from(["full", "short"]),
        st.one_of(st.none(), st.floats(0, 1)),
    ),
    max_size=40,
)


def _key(row):
    return (instant_key(row.recorded_at), row.record_id)


def _arrange(rows, ordered: bool, cuts: list[int]):
    """The rows in the readers' order (by stored time, then id) or as drawn, in batches."""
    if ordered:
        rows = sorted(rows, key=lambda r: (r.recorded_at, r.record_id))
    bounds = sorted({c % (len(rows) + 1) for c in cuts} | {0, len(rows)})
    return [rows[a:b] for a, b in itertools.pairwise(bounds)]


def _reference_verdicts(rows, window):
    """The pairing reader's answer, one row at a time: per run the judged verdict
    latest by (instant, record id), the first of equals kept; every other judged
    verdict superseded; per run the latest skip (a later equal one wins)."""
    latest, skips, judged = {}, {}, []
    for row in rows:
        if row.verdict == SKIPPED:
            prior = skips.get(row.run_id)
            if prior is None or instant_key(row.recorded_at) >= prior:
                skips[row.run_id] = instant_key(row.recorded_at)
            continue
        judged.append(row)
        current = latest.get(row.run_id)
        if current is None or _key(row) > _key(current):
            latest[row.run_id] = row
    winners = {id(row) for row in latest.values()}

    def kept(row):
        code = (row.form == "full") << 1 | (row.verdict in PASS_SIDE)
        score = -1.0 if row.score is None else row.score
        return (hash(row.run_id), hash(row.record_id), row.evaluator_model, code, score)

    return {
        "latest": {run: (*kept(row), instant_key(row.recorded_at)) for run, row in latest.items()},
        "earlier": Counter(kept(row) for row in judged if id(row) not in winners),
        "skips": skips,
        "recent": [row.verdict for row in judged][-window:] if window else [],
    }


def _found_verdicts(found):
    models, full, passed = decode(found.codes)
    latest = {}
    for row, run_hash in enumerate(found.run_hashes.tolist()):
        score = float(found.scores[row])
        latest[run_hash] = (
            run_hash,
            int(found.id_hashes[row]),
            found.models[int(models[row])],
            int(full[row]) << 1 | int(passed[row]),
            -1.0 if score != score else score,
            found.ats[row],
        )
    e_models, e_full, e_passed = decode(found.earlier.codes)
    earlier = Counter(
        (
            int(found.earlier.runs[j]),
            int(found.earlier.ids[j]),
            found.models[int(e_models[j])],
            int(e_full[j]) << 1 | int(e_passed[j]),
            -1.0
            if found.earlier.scores[j] != found.earlier.scores[j]
            else float(found.earlier.scores[j]),
        )
        for j in range(len(found.earlier))
    )
    return latest, earlier


@settings(max_examples=300, deadline=None)
@given(verdict_rows, st.booleans(), st.lists(st.integers(0, 40), max_size=4), st.integers(0, 5))
def test_the_verdict_fold_matches_a_row_by_row_fold(rows, ordered, cuts, window):
    batches = _arrange(rows, ordered, cuts)
    arrived = [row for batch in batches for row in batch]
    expected = _reference_verdicts(arrived, window)
    found = latest_verdicts(batches, window=window)
    latest, earlier = _found_verdicts(found)
    assert latest == {hash(run): value for run, value in expected["latest"].items()}
    assert earlier == expected["earlier"]
    assert {run: skip.recorded_at for run, skip in found.skips.items()} == expected["skips"]
    assert list(found.recent) == expected["recent"]


label_rows = st.lists(
    st.builds(
        lambda run, at, rid, passed, gate: Row(
            run_id=f"r{run}",
            recorded_at=STAMPS[at],
            record_id=f"acc-{rid}",
            label="pass" if passed else "fail",
            gate_record_id=None if gate is None else f"ev-{gate}",
        ),
        st.integers(0, 4),
        st.integers(0, len(STAMPS) - 1),
        st.integers(0, 6),
        st.booleans(),
        st.one_of(st.none(), st.integers(0, 3)),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(label_rows, st.booleans(), st.lists(st.integers(0, 40), max_size=4))
def test_the_label_fold_matches_a_row_by_row_fold(rows, ordered, cuts):
    batches = _arrange(rows, ordered, cuts)
    found = latest_labels(batches)
    assert _label_found(found) == _label_reference(row for batch in batches for row in batch)


# ---------------------------------------------------------------- the forked call's outbox


def _post_then_return(post, value):
    post(value)
    return "done"


def _fail_before_posting(post):
    raise PmosError("the child's own error")


def test_a_child_posts_a_value_before_its_result():
    child = ForkedCall(_post_then_return, {"found": list(range(10))}, outbox=True)
    try:
        assert child.early() == {"found": list(range(10))}
        assert child.result() == "done"
    finally:
        child.cancel()


def test_a_child_that_fails_before_posting_raises_its_error_on_early():
    child = ForkedCall(_fail_before_posting, outbox=True)
    try:
        with pytest.raises(PmosError, match="the child's own error"):
            child.early()
    finally:
        child.cancel()


def test_a_post_never_taken_does_not_hold_up_the_result():
    """More than a pipe holds: the child would wait on its post for ever if
    result() did not read it."""
    child = ForkedCall(_post_then_return, b"x" * (1 << 20), outbox=True)
    try:
        assert child.result() == "done"
    finally:
        child.cancel()


def _niceness():
    return os.nice(0)


def test_a_child_can_run_at_a_lower_priority_than_its_parent():
    """``pmos sync``'s children yield the processor to its copy: ``nice`` lowers the
    child's priority, never the parent's."""
    parent = os.nice(0)
    child = ForkedCall(_niceness, nice=3)
    try:
        assert child.result() == min(parent + 3, 19)
    finally:
        child.cancel()
    assert os.nice(0) == parent
    same = ForkedCall(_niceness)
    try:
        assert same.result() == parent
    finally:
        same.cancel()


# ---------------------------------------------------------------- loose labels' verdicts


def test_metrics_answers_loose_labels_from_its_own_verdict_pass(
    kit, kit_root, monkeypatch, tmp_path
):
    """Loose labels name: a verdict of their run, another run's verdict, no verdict
    at all, and a verdict the screen leaves out (the verdict pass cannot vouch for
    it: the screen looks it up itself). The report is the one a screen that looks
    every verdict up itself gives, exclusions too, with one look-up pass fewer."""
    _fill(kit, runs=20, per_run=5)
    bad = _verdict(500, "run-7")
    bad["axes"]["spec"]["verdict"] = "fail"  # a PASS with a failed spec axis: screened out
    bad["verdict"] = "PASS"
    ledgerfiles.forge(kit_root, "evals", bad)
    names = {
        "run-1": ("ev-0000001", "PASS"),  # its own verdict, as recorded
        "run-2": ("ev-0000001", "PASS"),  # run-1's verdict
        "run-3": ("ev-9999999", "PASS"),  # no such verdict
        "run-7": ("ev-0000500", "PASS"),  # the screened-out verdict
    }
    for i, (run, (gate_id, word)) in enumerate(names.items()):
        label = _label(600 + i, run)
        label.update(gate_record_id=gate_id, gate_verdict=word)
        ledgerfiles.forge(kit_root, "acceptances", label)

    passes = []  # the look-ups the screen makes by a pass over the eval ledger
    index = recheck.Context._index_verdicts

    def indexing(context, wanted):
        passes.append(None if wanted is None else set(wanted))
        return index(context, wanted)

    monkeypatch.setattr(recheck.Context, "_index_verdicts", indexing)
    answered = compute_metrics(kit)
    assert passes == [{"ev-0000500"}]  # the verdict pass vouched for the others
    passes.clear()
    monkeypatch.setattr(recheck.Context, "answer_verdicts", lambda context, answers: None)
    # A screening cache of its own: with the first read's, no loose label is
    # screened again, and nothing is looked up at all.
    monkeypatch.setenv("PMOS_CACHE_DIR", str(tmp_path / "another-cache"))
    serial = compute_metrics(kit)
    assert passes == [{"ev-0000001", "ev-9999999", "ev-0000500"}]
    assert answered == serial
    left_out = {(e["kind"], e["record_id"]) for e in serial["excluded_records"]}
    assert ("evals", "ev-0000500") in left_out
    assert ("acceptances", "acc-0000601") in left_out  # names another run's verdict
    assert ("acceptances", "acc-0000602") in left_out  # names no verdict
    assert ("acceptances", "acc-0000600") not in left_out
    assert ("acceptances", "acc-0000603") not in left_out  # the verdict exists, screened or not


# ---------------------------------------------------------------- the fold at scale


def _many_rows(count: int, runs: int, seed: int, odd_run: str | None = None):
    """``count`` verdict rows and as many label rows over ``runs`` runs, in the
    readers' order, one second apart. Record ids grow wider as they go (ev-9,
    ev-10, ...), the second half brings wider run ids and some run ids are not
    ASCII, so the fold's text columns widen and take both ways in; ``odd_run``
    names one more run, labelled once in the middle."""

    draw = random.Random(seed)
    verdicts, labels = [], []
    for i in range(count):
        at = f"2026-01-01T{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}.000000Z"
        known = runs if i >= count // 2 else runs // 10  # wider run ids come later
        run = f"r{draw.randrange(known)}" + ("é" if i % 7 == 0 else "")
        verdicts.append(
            Row(
                run_id=run,
                recorded_at=at,
                record_id=f"ev-{i}",
                verdict=draw.choice(WORDS),
                evaluator_model=draw.choice(["gpt-5", "claude"]),
                form=draw.choice(["full", "short"]),
                score=draw.choice([None, 0.25, 0.75]),
            )
        )
        gate = draw.choice([None, f"ev-{draw.randrange(i + 1)}"])
        label_run = odd_run if odd_run is not None and i == count // 2 else run
        labels.append(
            Row(
                run_id=label_run,
                recorded_at=at,
                record_id=f"acc-{i}",
                label=draw.choice(["pass", "fail"]),
                gate_record_id=gate,
            )
        )
    return verdicts, labels


def _label_reference(rows):
    latest = {}
    for row in rows:
        current = latest.get(row.run_id)
        if current is None or _key(row) > _key(current):
            latest[row.run_id] = row
    return {
        run: (
            instant_key(row.recorded_at),
            row.label == "pass",
            row.gate_record_id is not None,
            None if row.gate_record_id is None else hash(row.gate_record_id),
        )
        for run, row in latest.items()
    }


def _label_found(found):
    return {
        run: (at, bool(passed), bool(names), int(gate) if names else None)
        for run, at, passed, names, gate in zip(
            found.runs,
            found.ats,
            found.passed.tolist(),
            found.names.tolist(),
            found.gate_hashes.tolist(),
            strict=True,
        )
    }


@pytest.mark.parametrize("odd_run", [None, "r-nul\x00"])
def test_the_fold_of_many_batches_matches_a_row_by_row_fold(odd_run):
    """Past the row count at which the fold compacts its candidates (several times
    over), with text columns that widen: the same answer as the reference. A run id
    holding a NUL cannot be a text column (the padding): from its batch on, the
    labels are folded row by row, and the answer is still the same."""
    verdicts, labels = _many_rows(60_000, 5_000, seed=7, odd_run=odd_run)
    batches = [verdicts[i : i + 997] for i in range(0, len(verdicts), 997)]
    expected = _reference_verdicts(verdicts, 50)
    found = latest_verdicts(batches, window=50)
    latest, earlier = _found_verdicts(found)
    assert latest == {hash(run): value for run, value in expected["latest"].items()}
    assert earlier == expected["earlier"]
    assert {run: skip.recorded_at for run, skip in found.skips.items()} == expected["skips"]
    assert list(found.recent) == expected["recent"]
    label_batches = [labels[i : i + 1013] for i in range(0, len(labels), 1013)]
    found_labels = latest_labels(label_batches)
    assert _label_found(found_labels) == _label_reference(labels)
    if odd_run is not None:
        assert odd_run in found_labels.runs


@pytest.mark.parametrize("ordered", [True, False])
def test_a_judged_verdict_without_a_model_is_refused_and_its_valid_twin_folds(ordered):
    """The schema requires a model of every judged verdict: the fold refuses one that
    names none (in order or row by row), naming the run; the same verdict with a
    model folds, and a skip may omit its model."""
    from pmos.errors import LedgerCorrupt

    def rows(model):
        at = STAMPS[0] if ordered else "2026-01-01T01:00:00+01:00"
        return [
            Row(run_id="r1", recorded_at=STAMPS[0], record_id="ev-1", verdict=SKIPPED,
                evaluator_model=None, form="short", score=None),
            Row(run_id="r2", recorded_at=at, record_id="ev-2", verdict="PASS",
                evaluator_model=model, form="short", score=0.5),
        ]  # fmt: skip

    found = latest_verdicts([rows("gpt-5")], window=5)
    assert found.models == ["gpt-5"] and list(found.skips) == ["r1"]
    with pytest.raises(LedgerCorrupt, match="a PASS verdict of run r2 names no evaluator_model"):
        latest_verdicts([rows(None)], window=5)
