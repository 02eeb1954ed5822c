"""Hash-chained ledger I/O: chaining, tamper detection, torn tails, reading."""

from __future__ import annotations

import itertools
import json

import pytest

from conftest import good_verdict
from pmos.errors import LedgerCorrupt
from pmos.gate import writers
from pmos.store import chain as ledger


@pytest.fixture
def filled(kit):
    """An acceptances ledger with five records r0..r4."""
    for i in range(5):
        writers.record_acceptance(kit, run_id=f"r{i}", label="pass", by="pm")
    return kit.store.path("acceptances")


def lines_of(path):
    return path.read_bytes().splitlines(keepends=True)


def verify_cli(pmos):
    result = pmos("ledger", "verify", "--json")
    return result.returncode, json.loads(result.stdout)


def problems(report, kind="acceptances"):
    [entry] = [e for e in report["ledgers"] if e["kind"] == kind]
    return [(p["line"], p["problem"]) for p in entry["problems"]]


def test_clean_ledgers_verify(filled, pmos):
    code, report = verify_cli(pmos)
    assert code == 0 and report["ok"] is True
    [entry] = [e for e in report["ledgers"] if e["kind"] == "acceptances"]
    assert entry["lines"] == 5 and len(entry["head"]) == 64


def test_each_line_chains_to_the_previous(filled):
    records = list(ledger.iter_records(filled, "acceptances"))
    assert records[0]["prev_hash"] == ledger.genesis_hash("acceptances")
    for earlier, later in itertools.pairwise(records):
        assert later["prev_hash"] == earlier["hash"]


def test_edited_line_is_named(filled, pmos):
    lines = lines_of(filled)
    lines[2] = lines[2].replace(b'"label":"pass"', b'"label":"fail"')
    filled.write_bytes(b"".join(lines))
    code, report = verify_cli(pmos)
    assert code == 1
    assert problems(report) == [(3, "hash does not match the line's content: the line was edited")]


def test_deleted_line_is_named(filled, pmos):
    lines = lines_of(filled)
    del lines[1]
    filled.write_bytes(b"".join(lines))
    code, report = verify_cli(pmos)
    assert code == 1
    assert [line for line, _ in problems(report)] == [2]


def test_reordered_lines_are_named(filled, pmos):
    lines = lines_of(filled)
    lines[1], lines[2] = lines[2], lines[1]
    filled.write_bytes(b"".join(lines))
    code, report = verify_cli(pmos)
    assert code == 1
    assert [line for line, _ in problems(report)] == [2, 3, 4]


def test_hand_appended_line_is_named(filled, pmos):
    record = json.loads(lines_of(filled)[-1])
    record.update(run_id="forged", prev_hash=record["hash"])
    with filled.open("a") as handle:
        handle.write(json.dumps(record) + "\n")
    code, report = verify_cli(pmos)
    assert code == 1
    assert problems(report)[0][0] == 6
    human = pmos("ledger", "verify")
    assert human.returncode == 1 and "acceptances.jsonl:6:" in human.stdout


def test_line_copied_from_another_ledger_breaks_the_chain(kit, pmos):
    writers.record_acceptance(kit, run_id="r", label="pass", by="pm")
    copied = kit.store.path("acceptances").read_bytes()
    kit.store.path("runs").write_bytes(copied)
    code, report = verify_cli(pmos)
    assert code == 1 and problems(report, "runs")[0][0] == 1


def test_schema_option_revalidates_records(filled, pmos):
    from pmos.store.chain import LedgerWriter

    LedgerWriter(filled, "acceptances").append({"run_id": "r9", "label": "maybe"})
    assert pmos("ledger", "verify").returncode == 0  # the chain itself is intact
    result = pmos("ledger", "verify", "--schema", "--json")
    assert result.returncode == 1
    found = problems(json.loads(result.stdout))
    assert found and all(line == 6 for line, _ in found)
    assert any("label" in text for _, text in found)


def test_torn_tail_is_reported_then_quarantined_by_the_next_append(filled, kit, pmos):
    with filled.open("ab") as handle:
        handle.write(b'{"record_id":"half-writ')
    code, report = verify_cli(pmos)
    assert code == 1 and "unterminated" in problems(report)[0][1]
    # Readers skip it: it may be a write in flight.
    assert len(list(ledger.iter_records(filled, "acceptances"))) == 5
    written = writers.record_acceptance(kit, run_id="r5", label="fail", by="pm")
    assert any("quarantine" in w for w in written.warnings)
    quarantine = filled.with_name(filled.name + ".quarantine")
    entry = json.loads(quarantine.read_text())
    assert entry["text"] == '{"record_id":"half-writ'
    code, _ = verify_cli(pmos)
    assert code == 0
    assert [r["run_id"] for r in ledger.iter_records(filled, "acceptances")][-1] == "r5"


def test_torn_tail_warning_reaches_the_cli(filled, pmos):
    with filled.open("ab") as handle:
        handle.write(b"{partial")
    result = pmos("accept", "r9", "--label", "pass", "--by", "pm", "--allow-unknown-run")
    assert result.returncode == 0
    assert "moved to" in result.stderr and "quarantine" in result.stderr


def test_readers_refuse_a_tampered_ledger(filled, kit, pmos):
    lines = lines_of(filled)
    lines[0] = lines[0].replace(b'"by":"pm"', b'"by":"me"')
    filled.write_bytes(b"".join(lines))
    with pytest.raises(LedgerCorrupt, match=":1:"):
        list(ledger.iter_records(filled, "acceptances"))
    with pytest.raises(LedgerCorrupt):
        list(ledger.iter_records_reversed(filled, "acceptances"))
    result = pmos("ledger", "show", "acceptances")
    assert result.returncode == 2 and "ledger verify" in result.stderr


def test_writers_refuse_to_extend_a_broken_tail(filled, kit):
    with filled.open("a") as handle:
        handle.write('{"run_id": "by hand"}\n')
    before = filled.read_bytes()
    with pytest.raises(LedgerCorrupt, match="refusing to extend"):
        writers.record_acceptance(kit, run_id="r", label="pass", by="pm")
    assert filled.read_bytes() == before


def test_reverse_iteration_over_many_blocks(kit):
    path = kit.store.path("runs")
    writer = ledger.LedgerWriter(path, "runs")
    writer.append_many({"n": i, "pad": "x" * (i % 700)} for i in range(3000))
    # Records that are not runs: read plain, without the schema's types.
    forward = [r["n"] for r in ledger.iter_records(path, "runs", plain=True)]
    backward = [r["n"] for r in ledger.iter_records_reversed(path, "runs", plain=True)]
    assert forward == list(range(3000)) and backward == forward[::-1]


def test_append_many_is_atomic_on_a_bad_record(kit):
    path = kit.store.path("runs")
    with pytest.raises(Exception, match="cannot be stored"):
        ledger.LedgerWriter(path, "runs").append_many([{"ok": 1}, {"bad": object()}])
    assert path.read_bytes() == b""


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
