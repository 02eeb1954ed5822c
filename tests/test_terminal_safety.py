"""Terminal safety (issue 16 item 15) and unknown ids (item 17, second half).

Identifiers refuse bidirectional controls and invisible format characters;
everything pmos prints for a person, error messages included, shows every
control and format character as a visible escape; JSON output carries them
as \\u escapes. Checked on the bytes a real pmos process writes.
"""

from __future__ import annotations

import json
import unicodedata

import pytest

from conftest import REGISTER_R, ledger_bytes, pmos_process
from pmos.text import UNSAFE_CATEGORIES, json_safe, neutralise

#: Characters an attacker would use: bidi override and isolate, line
#: separator, zero-width space, BOM, NEL, a tag character, ESC and BEL.
HOSTILE = "\u202e\u2066\u2028\u200b\ufeff\x85\U000e0041\x1b]0;owned\x07\x1b[2J"


def unsafe_in(text: str) -> list[str]:
    return [c for c in text if c not in "\n\t" and unicodedata.category(c) in UNSAFE_CATEGORIES]


# ---------------------------------------------------------------- identifiers


@pytest.mark.parametrize(
    "char",
    [
        "\u202e",
        "\u2066",
        "\u2069",
        "\u2028",
        "\u2029",
        "\u200b",
        "\u200d",
        "\ufeff",
        "\u00ad",
        "\U000e0041",
        "\x85",
        "\x1b",
    ],
)
def test_identifiers_refuse_bidi_and_invisible_characters(cli, kit_root, char):
    before = ledger_bytes(kit_root)
    result = cli(
        "run", "register", "--run-id", f"run{char}1", "--initiative-id", "i", "--builder-model", "m"
    )
    assert result.exit_code == 2
    assert "[schema:pattern] run_id" in result.stderr
    assert "no invisible format characters" in result.stderr
    assert ledger_bytes(kit_root) == before


def test_identifiers_keep_ordinary_unicode(cli):
    result = cli(
        "run",
        "register",
        "--run-id",
        "Ünïcode-名-😀",
        "--initiative-id",
        "i",
        "--builder-model",
        "m",
        "--json",
    )
    assert result.exit_code == 0, result.stderr


def test_every_format_and_control_character_is_refused_by_the_identifier_rule():
    import re

    from pmos.schemas import load_schema

    pattern = re.compile(load_schema("common")["$defs"]["identifier"]["pattern"])
    unsafe = [
        chr(c)
        for c in range(0x110000)
        if unicodedata.category(chr(c)) in UNSAFE_CATEGORIES
        and unicodedata.category(chr(c)) != "Cs"
    ]
    assert [hex(ord(c)) for c in unsafe if pattern.search(f"a{c}b")] == []


# ---------------------------------------------------------------- neutralise


def test_neutralise_escapes_every_unsafe_character_and_keeps_the_rest():
    # Every unsafe character this Python knows, and every 37th of the others.
    every = "".join(
        chr(c)
        for c in range(0x110000)
        if (c < 0xD800 or c > 0xDFFF)
        and (c % 37 == 0 or unicodedata.category(chr(c)) in UNSAFE_CATEGORIES)
    )
    shown = neutralise(every)
    assert unsafe_in(shown) == []
    assert neutralise(shown) == shown  # idempotent
    assert neutralise("tab\tline\nÜñï名😀") == "tab\tline\nÜñï名😀"
    assert neutralise(HOSTILE) == (
        "\\u202e\\u2066\\u2028\\u200b\\ufeff\\x85\\U000e0041\\x1b]0;owned\\x07\\x1b[2J"
    )


def test_json_output_escapes_them_and_keeps_the_data():
    import orjson

    data = {"note": HOSTILE + "Ü名😀\x7f", "n": 1}
    raw = json_safe(orjson.dumps(data))
    assert raw.isascii() or unsafe_in(raw.decode()) == []
    assert json.loads(raw) == data
    assert json_safe(b'{"a":"plain"}') == b'{"a":"plain"}'


# ---------------------------------------------------------------- what pmos prints


@pytest.mark.slow
def test_records_holding_hostile_text_print_safely(cli, tmp_path):
    from assess_support import write_spec

    assert cli(*REGISTER_R).exit_code == 0
    assert cli("accept", "r", "--label", "pass", "--by", "pm", "--note", HOSTILE).exit_code == 0
    # A check whose output holds them: its reason and output tail are printed.
    printed = "".join(f"\\{b:03o}" for b in HOSTILE.encode())
    spec = write_spec(
        tmp_path / "s.yaml",
        {"id": "t", "expectations": [{"type": "test", "command": f"printf '{printed}'; exit 1"}]},
    )
    work = tmp_path / "work"
    work.mkdir()
    out = {}  # what each read-only command printed, looked into again below
    for args in (
        ("assess", str(spec), "--cwd", str(work)),
        ("assess", "history", "t"),
        ("assess", "history", "t", "--json"),
        ("ledger", "show", "assessments"),
        ("ledger", "show", "acceptances", "--json"),
        ("queue",),
    ):
        done = pmos_process(*args)
        assert done.returncode in (0, 1), (args, done.stderr)
        assert unsafe_in(done.stdout) == [] and unsafe_in(done.stderr) == [], args
        out[args] = done.stdout
    shown = out["assess", "history", "t"]
    assert "\\u202e\\u2066\\u2028" in shown and "\\x1b]0;owned\\x07" in shown
    stored = json.loads(out["ledger", "show", "acceptances", "--json"])
    assert stored[-1]["note"] == HOSTILE
    history = json.loads(out["assess", "history", "t", "--json"])
    assert history["latest"]["checks"][0]["output_tail"] == HOSTILE


@pytest.mark.parametrize(
    "args",
    [
        ("assess", "history", "X\x1b]0;owned\x07"),
        ("score", "show", "a\u202eb\u2066"),
        ("tasks", "close", "t\u2028\x1b[2J"),
        ("nosuch\x1b[2J\u202e",),
        ("ledger", "show", "evals", "--last", "x\x1b[2J"),
    ],
)
def test_error_messages_print_arguments_safely(args):
    done = pmos_process(*args)
    assert done.returncode == 2
    assert unsafe_in(done.stdout + done.stderr) == []
    assert "\\x1b" in done.stderr or "\\u202e" in done.stderr


# ---------------------------------------------------------------- unknown ids


@pytest.mark.parametrize(
    "args",
    [
        ("assess", "history", "UNKNOWN"),
        ("assess", "history", "UNKNOWN", "--json"),
        ("score", "show", "UNKNOWN"),
        ("score", "collect", "--run-id", "UNKNOWN"),
        ("evidence", "--run-id", "UNKNOWN"),
        ("followups", "suggest", "--run-id", "UNKNOWN"),
        ("ledger", "show", "evals", "--run-id", "UNKNOWN"),
        ("ledger", "show", "evals", "--run-id", "UNKNOWN", "--json"),
        ("eval", "draft", "--run-id", "UNKNOWN"),
        ("tasks", "close", "UNKNOWN"),
    ],
)
def test_unknown_ids_exit_2_everywhere(cli, args):
    result = cli(*args)
    assert result.exit_code == 2, (args, result.output)
    assert "UNKNOWN" in result.stderr and result.stdout == ""


def test_a_known_run_with_no_records_of_a_kind_shows_an_empty_ledger(cli):
    assert cli(*REGISTER_R).exit_code == 0
    result = cli("ledger", "show", "evals", "--run-id", "r", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout) == []
    result = cli("ledger", "show", "runs", "--run-id", "r", "--json")
    assert [r["run_id"] for r in json.loads(result.stdout)] == ["r"]
