"""Typed rows: readers decode only the fields they use, typed by the schema.

A record whose digest is intact but whose fields do not fit the schema (sealed
by hand following README's recipe, or written by an older writer) must be
refused with its file (and line, in a pack or an older kit's single file),
never crash a reader or be counted. Each case writes such a record as a loose
file with a valid digest (``ledgerfiles.forge``), which seals whatever it is given.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Callable
from typing import Any, Literal

import msgspec
import pytest

import ledgerfiles
from conftest import pmos_in_process
from pmos.calibration.metrics import compute_metrics
from pmos.store.read import records
from pmos.store.rows import row_type
from pmos.store.screening import Excluded
from pmos.store.verify import verify_kind


@pytest.fixture
def pmos() -> Callable[..., subprocess.CompletedProcess]:
    """pmos in this process (see conftest.pmos_in_process): these tests are about
    what the readers and verify find, not about processes."""
    return pmos_in_process


def _verdict(run: str = "run-1", **overrides: Any) -> dict[str, Any]:
    record = {
        "record_id": f"ev-{run}",
        "recorded_at": "2026-01-01T00:00:00Z",
        "schema_version": 1,
        "form": "short",
        "run_id": run,
        "initiative_id": "init-1",
        "verdict": "PASS",
        "score": 0.9,
        "rubric_path": "planning/evals/agent-run-eval-rubric.md",
        "evaluator_model": "gpt-5",
        "axes": {"spec": {"verdict": "pass"}, "standards": {"verdict": "pass"}},
        "pass_fraction": "unknown",
    }
    record.update(overrides)
    return {k: v for k, v in record.items() if v is not ...}


def _label(run: str = "run-1", **overrides: Any) -> dict[str, Any]:
    record = {
        "record_id": f"acc-{run}",
        "recorded_at": "2026-01-01T00:00:01Z",
        "schema_version": 1,
        "run_id": run,
        "label": "pass",
        "by": "pm",
    }
    record.update(overrides)
    return record


def _write(kit, kind: str, *stored: dict[str, Any]) -> list:
    """Each record as a loose file with a valid digest; their paths, in order."""
    return [ledgerfiles.forge(kit.root, kind, record) for record in stored]


def test_row_types_come_from_the_schema():
    row = row_type("evals", ("run_id", "verdict", "evaluator_model", "pass_fraction"))
    fields = {f.name: f for f in msgspec.structs.fields(row)}
    assert fields["run_id"].type is str and fields["run_id"].required
    assert fields["verdict"].type == Literal["PASS", "PASS-WITH-FINDINGS", "FAIL", "SKIPPED"]
    # Not in the schema's "required": optional, None when absent.
    assert (
        fields["evaluator_model"].type == str | None and fields["evaluator_model"].default is None
    )
    decode = msgspec.json.Decoder(row).decode
    base = b'"run_id":"r","verdict":"FAIL"'
    for text, value in [(b"1", 1), (b"0.5", 0.5), (b'"unknown"', "unknown")]:
        parsed = decode(b"{" + base + b',"pass_fraction":' + text + b"}").pass_fraction
        assert parsed == value and type(parsed) is type(value)  # an int stays an int
    with pytest.raises(msgspec.ValidationError):
        decode(b"{" + base + b',"pass_fraction":"often"}')
    label = row_type("acceptances", ("gate_verdict",))
    assert msgspec.structs.fields(label)[0].type == (
        Literal["PASS", "PASS-WITH-FINDINGS", "FAIL", "SKIPPED"] | None
    )
    with pytest.raises(ValueError, match="no field 'nope'"):
        row_type("evals", ("nope",))


def test_a_row_decodes_only_its_fields(kit):
    _write(kit, "evals", _verdict(), _verdict("run-2", verdict="FAIL", score=0.2))
    rows = list(records(kit.store, "evals", row=row_type("evals", ("run_id", "verdict"))))
    assert [(r.run_id, r.verdict) for r in rows] == [("run-1", "PASS"), ("run-2", "FAIL")]
    assert not hasattr(rows[0], "score")


@pytest.mark.parametrize(
    ("kind", "record", "problem"),
    [
        ("evals", _verdict(run_id=7), "Expected `str`, got `int` - at `$.run_id`"),
        ("evals", _verdict(run_id=["a"]), "Expected `str`, got `array` - at `$.run_id`"),
        ("evals", _verdict(verdict="MAYBE"), "Invalid enum value 'MAYBE' - at `$.verdict`"),
        ("evals", _verdict(run_id=...), "missing required field `run_id`"),
        ("evals", _verdict(evaluator_model={"name": "x"}), "at `$.evaluator_model`"),
        ("acceptances", _label(label=True), "Expected `str`, got `bool` - at `$.label`"),
        ("acceptances", _label(label="maybe"), "Invalid enum value 'maybe' - at `$.label`"),
    ],
)
@pytest.mark.parametrize("where", ["loose", "pack"])
def test_a_sealed_record_with_a_wrong_field_is_left_out(kit, kind, record, problem, where):
    good = _verdict("run-0") if kind == "evals" else _label("run-0")
    if where == "loose":
        place = str(_write(kit, kind, good, record)[1])
    else:
        place = f"{ledgerfiles.pack_of(kit.root, kind, [good, record])}:3"
    assert verify_kind(kit.store, kind).ok  # every file is sound
    assert not verify_kind(kit.store, kind, with_schema=True).ok
    excluded = Excluded()
    assert len(list(records(kit.store, kind, excluded=excluded))) == 1
    (left_out,) = excluded.items
    assert left_out.file == place
    assert "a field does not fit the ledger's schema" in left_out.problem
    assert problem in left_out.problem
    report = compute_metrics(kit)  # the gate's readers leave it out too
    assert place in {e["file"] for e in report["excluded_records"]}


def test_the_valid_twin_of_each_case_is_counted(kit):
    failed = {"spec": {"verdict": "fail"}, "standards": {"verdict": "fail"}}
    _write(
        kit, "evals", _verdict("run-0"), _verdict("run-1", verdict="FAIL", score=0.2, axes=failed)
    )
    _write(kit, "acceptances", _label("run-0"), _label("run-1", label="fail"))
    report = compute_metrics(kit)
    assert report["confusion"] == {"tp": 1, "fn": 0, "fp": 0, "tn": 1}


def test_a_judged_verdict_without_a_model_is_left_out(kit):
    """The schema requires the model of a judged verdict: a hand-made one without
    it breaks that rule, so metrics leaves it out and says why."""
    (judged,) = _write(kit, "evals", _verdict(evaluator_model=...))
    report = compute_metrics(kit)
    assert report["unlabeled_verdicts"] == 0
    [excluded] = report["excluded_records"]
    assert (excluded["record_id"], excluded["rule"]) == ("ev-run-1", "schema:required")
    assert excluded["file"] == str(judged) and "evaluator_model" in excluded["problem"]
    # A skip may lack one: it is no judgement.
    judged.unlink()
    skip = _verdict(
        verdict="SKIPPED",
        score=None,
        evaluator_model=...,
        axes=...,
        rubric_path=...,
        skipped_reason="evaluator unavailable",
    )
    _write(kit, "evals", skip)
    assert compute_metrics(kit)["skipped"] == 1


def test_metrics_cli_leaves_the_record_out_and_names_the_file(kit, pmos):
    _, bad = _write(kit, "evals", _verdict("run-0"), _verdict(run_id=7))
    done = pmos("metrics", "--json")
    assert done.returncode == 0, done.stderr
    assert str(bad) in {e["file"] for e in json.loads(done.stdout)["excluded_records"]}
    assert "Traceback" not in done.stderr


def test_a_record_whose_digest_is_not_its_last_field_is_refused(kit, pmos):
    _write(kit, "evals", _verdict("run-0"))
    record = _verdict("run-1")
    body = json.dumps(record, sort_keys=True, separators=(",", ":")).encode()
    digest = hashlib.sha256(b"pmos-record-v2\n" + body).hexdigest()  # the documented digest
    moved = b'{"digest":"' + digest.encode() + b'",' + body[1:] + b"\n"  # digest first
    (first,) = ledgerfiles.record_files(kit.root, "evals")
    path = first.parent / f"1-{digest}.json"
    path.write_bytes(moved)
    excluded = Excluded()
    assert len(list(records(kit.store, "evals", excluded=excluded))) == 1
    (left_out,) = excluded.items
    assert left_out.file == str(path)
    assert "carries no digest as its last field" in left_out.problem
    report = verify_kind(kit.store, "evals")
    assert [(p.file, p.problem) for p in report.problems] == [
        (str(path), "the record carries no digest as its last field: not written by a pmos writer")
    ]


def _run(run: str = "run-1", **overrides: Any) -> dict[str, Any]:
    record = {
        "record_id": f"run-{run}",
        "recorded_at": "2026-01-01T00:00:00Z",
        "schema_version": 1,
        "run_id": run,
        "initiative_id": "init-1",
        "builder_model": "claude-opus-4",
    }
    record.update(overrides)
    return record


def test_whole_record_readers_leave_out_a_wrong_type_and_name_the_file(kit, pmos):
    _, bad = _write(kit, "runs", _run("run-0"), _run("run-1", initiative_id=5))
    done = pmos("queue", "--json")
    assert done.returncode == 1, done.stderr  # run-0 owes a verdict; run-1 does not count
    data = json.loads(done.stdout)
    assert [e["run_id"] for e in data["verification_debt"]] == ["run-0"]
    assert str(bad) in {e["file"] for e in data["excluded_records"]}
    assert "Traceback" not in done.stderr
    # Displaying is not computing: show prints the record as stored ...
    shown = pmos("ledger", "show", "runs", "--json")
    assert shown.returncode == 0 and json.loads(shown.stdout)[1]["initiative_id"] == 5
    # ... and verify --schema names it.
    checked = pmos("ledger", "verify", "--schema", "--json")
    assert checked.returncode == 1 and "initiative_id" in checked.stdout


def test_whole_record_readers_accept_the_valid_twin(kit, pmos):
    _write(kit, "runs", _run("run-0"), _run("run-1"))
    done = pmos("queue", "--json")
    assert done.returncode == 1, done.stderr  # verification debt: two runs without verdicts
    assert {e["run_id"] for e in json.loads(done.stdout)["verification_debt"]} == {
        "run-0",
        "run-1",
    }


def test_a_mistyped_record_does_not_block_a_writer(kit, pmos, kit_root):
    from conftest import ledger_bytes

    _write(kit, "runs", _run("run-1"))
    (bad,) = _write(kit, "evals", _verdict(verdict=["PASS"]))
    before = ledger_bytes(kit_root)
    done = pmos(
        "eval", "log", "run-1", "init-1", "0.9", "PASS",
        "planning/evals/agent-run-eval-rubric.md", "gpt-5", "--spec", "pass", "--standards", "pass",
    )  # fmt: skip
    # The mistyped verdict does not count, so it does not block the writer ...
    assert done.returncode == 0, done.stderr
    assert ledger_bytes(kit_root) != before
    # ... and verify names it.
    checked = pmos("ledger", "verify", "--json")
    assert checked.returncode == 1 and str(bad) in checked.stdout


@pytest.mark.parametrize(
    "stamp", ["", "zz", "2026-02-30T00:00:00Z"], ids=["empty", "text", "no-such-day"]
)
def test_a_stored_timestamp_that_is_not_one_is_left_out(kit, pmos, stamp):
    """A string that is no RFC 3339 time breaks the schema's date-time rule: the
    record is left out of the queue, named with that rule, never read as a time."""
    (bad,) = _write(kit, "runs", _run(recorded_at=stamp))
    done = pmos("queue", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["verification_debt"] == []
    [excluded] = data["excluded_records"]
    assert excluded["file"] == str(bad)
    assert "Traceback" not in done.stderr


def test_a_stored_timestamp_of_the_wrong_type_is_left_out(kit, pmos):
    (bad,) = _write(kit, "runs", _run(recorded_at=7))
    done = pmos("queue", "--json")
    assert done.returncode == 0, done.stderr
    (left_out,) = json.loads(done.stdout)["excluded_records"]
    assert left_out["file"] == str(bad) and "recorded_at" in left_out["problem"]
    assert "Traceback" not in done.stderr


def test_rfc3339_timestamps_in_either_case_are_read(kit, pmos):
    _write(kit, "runs", _run("run-0", recorded_at="2026-01-01t00:00:00.5z"), _run("run-1"))
    done = pmos("queue", "--json")
    assert done.returncode == 1, done.stderr
    # Oldest first: run-1 (00:00:00) before run-0 (00:00:00.5).
    assert [e["run_id"] for e in json.loads(done.stdout)["verification_debt"]] == ["run-1", "run-0"]


def test_a_record_breaking_an_if_then_rule_of_its_schema_is_left_out(kit):
    # A judged verdict must name its rubric and model (schema: if not SKIPPED).
    written = _write(kit, "evals", _verdict("run-0"), _verdict(rubric_path=...))
    excluded = Excluded()
    assert len(list(records(kit.store, "evals", excluded=excluded))) == 1
    (left_out,) = excluded.items
    assert left_out.file == str(written[1])
    assert left_out.problem.startswith(
        "the record breaks a rule of its schema: not (verdict is 'SKIPPED'), "
    )
    assert "so it needs rubric_path" in left_out.problem
    # Its valid twin reads.
    written[1].unlink()
    _write(kit, "evals", _verdict())
    assert len(list(records(kit.store, "evals"))) == 2


def test_a_rule_that_forbids_a_field_does_not_make_an_old_record_unreadable(kit):
    # Records from before "a skip carries no judgement" still carry defects.
    skip = _verdict(
        verdict="SKIPPED", score=None, rubric_path=..., axes=..., skipped_reason="evaluator down"
    )
    _write(kit, "evals", skip | {"defects": []})
    assert [r["verdict"] for r in records(kit.store, "evals")] == ["SKIPPED"]
