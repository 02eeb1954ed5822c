"""`pmos stats agreement`: planning tables in, the statistics pmos metrics reports out."""

from __future__ import annotations

import json

import pytest

from pmos.calibration.agreement import TABLE_KEYS
from test_metrics import metrics, seed_table


def agreement(cli, text, *args):
    return cli("stats", "agreement", "--tables", "-", *args, input=text)


def lines_of(result):
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


@pytest.mark.parametrize("cells", [(12, 1, 2, 9), (10, 0, 0, 10), (9, 1, 1, 9), (15, 0, 5, 0)])
def test_agrees_with_metrics_on_the_same_table(cli, kit, cells):
    tp, fn, fp, tn = cells
    seed_table(kit, tp, fn, fp, tn)
    report = metrics(cli)
    table = json.dumps(dict(zip(("tp", "fn", "fp", "tn"), cells, strict=True)))
    [line] = lines_of(agreement(cli, table, "--json"))
    assert list(line) == ["line", *TABLE_KEYS]
    for key in TABLE_KEYS:
        if key == "undefined":
            assert {k: v for k, v in report["undefined"].items() if k in line[key]} == line[key]
        else:
            assert line[key] == report[key], key


def test_one_line_per_table_in_input_order_blank_lines_skipped(cli, tmp_path):
    path = tmp_path / "tables.jsonl"
    path.write_text(
        '{"tp": 10, "fn": 0, "fp": 0, "tn": 10}\n\n'
        '{"tp": 0, "fn": 0, "fp": 0, "tn": 0}\n'
        '{"tp": 7, "fn": 0, "fp": 0, "tn": 0}\n'
        '{"tp": 90, "fn": 0, "fp": 5, "tn": 5}\n'
    )
    perfect, empty, one_class, lenient = lines_of(
        cli("stats", "agreement", "--tables", str(path), "--json")
    )
    assert [x["line"] for x in (perfect, empty, one_class, lenient)] == [1, 3, 4, 5]
    # Perfect agreement has an interval, and 10 of each class with TNR's lower end
    # .722 is calibrated by the default rule.
    assert perfect["kappa"] == 1.0 and perfect["kappa_ci95"][0] > 0.6
    assert perfect["calibrated"] is True and perfect["labels_needed"] == 0
    assert empty["pairs"] == 0 and empty["kappa"] is None
    assert empty["calibration_reason"] == "no labelled pairs yet."
    assert "no labelled pairs" in empty["undefined"]["labels_needed"]
    assert one_class["kappa"] is None and one_class["kappa_ci95"] is None
    assert one_class["kappa_point_meets_threshold"] is None
    # The lenient gate: kappa .64 meets the old rule, TNR .5 does not.
    assert lenient["kappa_point_meets_threshold"] is True and lenient["calibrated"] is False
    assert "TNR 0.500 is not above min_tnr 0.50" in lenient["undefined"]["labels_needed"]


def test_human_output_is_a_table(cli):
    result = agreement(cli, '{"tp": 12, "fn": 1, "fp": 2, "tn": 9}\n')
    assert result.exit_code == 0
    header, _rule, row = result.stdout.splitlines()
    assert header.split()[:3] == ["line", "tp/fn/fp/tn", "kappa"]
    assert row.split()[:3] == ["1", "12/1/2/9", "0.746"]


def test_needs_no_kit(cli, tmp_path, monkeypatch):
    monkeypatch.delenv("PMOS_ROOT")
    monkeypatch.chdir(tmp_path)
    assert lines_of(agreement(cli, '{"tp": 3, "fn": 1, "fp": 1, "tn": 3}', "--json"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json\n", "line 1: not JSON"),
        ("[1, 2]\n", "line 1: expected an object with tp, fn, fp, tn"),
        ('{"tp": 1, "fn": 1, "fp": 1}\n', "line 1: missing tn"),
        ('{"tp": 1, "fn": 1, "fp": 1, "tn": 1, "n": 4}\n', "line 1: unknown key(s) n"),
        ('{"tp": -1, "fn": 1, "fp": 1, "tn": 1}\n', "tp must be whole numbers from 0"),
        ('{"tp": 1.5, "fn": 1, "fp": 1, "tn": 1}\n', "tp must be whole numbers from 0"),
        ('{"tp": true, "fn": 1, "fp": 1, "tn": 1}\n', "tp must be whole numbers from 0"),
        ('{"tp": 1, "fn": 1, "fp": 1, "tn": 10000000000000}\n', "tn must be whole numbers"),
        ("\n\n", "no tables"),
        ('{"tp": 1, "fn": 1, "fp": 1, "tn": 1}\n{"tp": 1}\n', "line 2: missing fn, fp, tn"),
    ],
)
def test_bad_input_is_refused_whole(cli, text, message):
    result = agreement(cli, text, "--json")
    assert result.exit_code == 2
    assert message in result.stderr
    assert result.stdout == ""  # nothing computed from a partly wrong input


def test_a_missing_file_is_bad_input(cli, tmp_path):
    result = cli("stats", "agreement", "--tables", str(tmp_path / "none.jsonl"))
    assert result.exit_code == 2
