"""Inputs built to hang or crash pmos are refused cleanly, and nothing is written.

Most run in-process (``cli``): an exception that escaped the CLI's error mapping
would fail the test as loudly as a traceback on a real process's stderr. Inputs
that could block a process (a FIFO) run in a real one, with a timeout.
"""

from __future__ import annotations

import os

import pytest

from conftest import REGISTER_R, ledger_bytes

BOMB = """\
a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
done_criteria: *g
"""


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


def register(cli, contract):
    return cli(*REGISTER_R, "--contract", str(contract))


def test_yaml_alias_bomb_is_refused(cli, kit_root, tmp_path):
    contract = tmp_path / "bomb.yaml"
    contract.write_text(BOMB)
    before = ledger_bytes(kit_root)
    result = register(cli, contract)
    assert result.exit_code == 2 and "aliases" in result.stderr
    assert ledger_bytes(kit_root) == before


def test_plain_yaml_still_loads(cli, tmp_path):
    contract = tmp_path / "c.yaml"
    contract.write_text("done_criteria:\n  - {id: c1, text: t, test_method: m}\n")
    assert register(cli, contract).exit_code == 0


@pytest.mark.parametrize("kind", ["yaml", "json"])
def test_deep_nesting_is_refused(pmos, kit_root, tmp_path, kind):
    """A real process: the depth at which Python gives up depends on the stack."""
    depth = 5000
    contract = tmp_path / f"deep.{kind}"
    contract.write_text(
        "done_criteria: " + "[" * depth + "]" * depth + "\n"
        if kind == "yaml"
        else '{"done_criteria": ' + "[" * depth + "]" * depth + "}"
    )
    result = pmos(*REGISTER_R, "--contract", str(contract), timeout=30)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr


def test_deep_json_verdict_is_refused(pmos, tmp_path):
    verdict = tmp_path / "v.json"
    verdict.write_text('{"run_id": ' + "[" * 3000 + "]" * 3000 + "}")
    result = pmos("eval", "record", "--file", str(verdict), timeout=30)
    assert result.returncode == 2 and "Traceback" not in result.stderr


@pytest.mark.slow
def test_a_fifo_is_not_read(pmos, fifo, kit_root):
    assert (
        pmos(
            "run", "register", "--run-id", "known", "--initiative-id", "i", "--builder-model", "m"
        ).returncode
        == 0
    )
    for args in (
        ("eval", "record", "--file", str(fifo)),
        (
            *REGISTER_R,
            "--contract",
            str(fifo),
        ),
        ("score", "record", "--file", str(fifo)),
        ("assess", str(fifo)),
        ("evidence", "--run-id", "known", "--log", str(fifo)),
    ):
        result = pmos(*args, timeout=30)
        assert result.returncode == 2, (args, result.stderr)
        assert "not a regular file" in result.stderr, args


def test_a_folder_is_not_a_verdict(cli, tmp_path):
    result = cli("eval", "record", "--file", str(tmp_path))
    assert result.exit_code == 2 and "is a folder" in result.stderr


def test_oversized_input_is_refused(cli, tmp_path):
    big = tmp_path / "big.json"
    with big.open("w") as handle:
        handle.write('{"note": "')
        handle.write("x" * (65 * 1024 * 1024))
        handle.write('"}')
    result = cli("eval", "record", "--file", str(big))
    assert result.exit_code == 2 and "larger than" in result.stderr


@pytest.mark.parametrize("value", ["2026-13-45", "!!int abc", "!!bool x", "9" * 5000])
def test_yaml_values_the_safe_loader_cannot_convert(cli, tmp_path, kit_root, value):
    contract = tmp_path / "c.yaml"
    contract.write_text(f"done_criteria:\n  - id: c1\n    text: {value}\n    test_method: x\n")
    before = ledger_bytes(kit_root)
    result = register(cli, contract)
    assert result.exit_code == 2 and "contract" in result.stderr
    assert ledger_bytes(kit_root) == before


@pytest.mark.parametrize(
    "line",
    ["ledgers: {1: state/x.jsonl}", "pass_fraction_window: 5.0", "default_rubric: 2026-13-45"],
)
def test_odd_config_values_are_clean_errors(cli, kit_root, line):
    text = (kit_root / "pmos.yaml").read_text()
    if line.startswith("ledgers"):
        text = text.replace("ledgers:\n", "ledgers:\n  1: state/x.jsonl\n", 1)
    else:
        text += f"\n{line}\n"
    (kit_root / "pmos.yaml").write_text(text)
    result = cli("root")
    assert result.exit_code == 2, result.stderr
    assert result.stderr.startswith("pmos: error:")


@pytest.mark.slow
def test_deeply_nested_reviewer_output_is_unparseable_not_a_crash():
    from pmos.assess.jury import last_json_object

    assert last_json_object('{"a":' * 20000) is None
    assert last_json_object('noise {"a": 1} more') == {"a": 1}
