"""Issue 16 item 9: what a record may hold is bounded, and reading from the end is linear.

A verdict with a 60 MB note (inside the 64 MB input limit) used to be stored, after
which every newest-first reader took tens of seconds while holding a ledger lock.
Now a text field over 64 KiB, or a record over 1 MiB, is refused before anything
is written, naming the field.
"""

from __future__ import annotations

from conftest import REGISTER_R, ledger_bytes
from pmos.store.append import MAX_RECORD_BYTES, MAX_TEXT_BYTES

RUBRIC = "planning/evals/agent-run-eval-rubric.md"


def log_with_note(cli, note: str):
    return cli(
        "eval", "log", "r", "i", "0.9", "PASS", RUBRIC, "gpt-5",
        "--spec", "pass", "--standards", "pass", "--note", note,
    )  # fmt: skip


def test_a_huge_note_is_refused_naming_the_field_and_nothing_is_written(cli, kit_root):
    assert cli(*REGISTER_R).exit_code == 0
    before = ledger_bytes(kit_root)
    result = log_with_note(cli, "x" * (MAX_TEXT_BYTES + 1))
    assert result.exit_code == 2
    assert "[record-size] note:" in result.stderr and f"{MAX_TEXT_BYTES:,}" in result.stderr
    assert ledger_bytes(kit_root) == before


def test_a_note_at_the_limit_is_stored(cli, kit_root):
    assert cli(*REGISTER_R).exit_code == 0
    assert log_with_note(cli, "x" * MAX_TEXT_BYTES).exit_code == 0
    shown = cli("ledger", "show", "evals", "--last", "1", "--json")
    assert shown.exit_code == 0 and len(shown.stdout) > MAX_TEXT_BYTES


def test_the_record_limit_is_above_any_one_text_field():
    assert MAX_RECORD_BYTES > 8 * MAX_TEXT_BYTES
